#include "testing/test_env.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <pqxx/pqxx>
#include <sstream>

#include "base/error.h"
#include "net/crypto.h"

namespace ootci {
namespace {

std::vector<std::string>& temp_dirs() {
  // Leaked on purpose: the atexit handler below runs after static destructors.
  static auto* dirs = new std::vector<std::string>;
  return *dirs;
}

void remove_temp_dirs() {
  if (std::getenv("OOTCI_KEEP_TEMP")) return;
  for (const auto& d : temp_dirs()) std::filesystem::remove_all(d);
}

}  // namespace

std::string make_temp_dir() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(remove_temp_dirs); });
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/ootci-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw Error("mkdtemp failed");
  temp_dirs().push_back(tmpl);
  return tmpl;
}

std::vector<std::string> test_store_kinds() {
  std::vector<std::string> kinds = {"sqlite"};
  const char* pg = std::getenv("OOTCI_TEST_PG_URI");
  if (pg && *pg) kinds.push_back("postgres");
  return kinds;
}

std::string fresh_store_uri(const std::string& kind) {
  if (kind == "sqlite") return "sqlite:" + make_temp_dir() + "/store.db";
  const char* pg = std::getenv("OOTCI_TEST_PG_URI");
  if (!pg) throw Error("OOTCI_TEST_PG_URI is not set");
  // Each test gets its own schema, selected through libpq's options parameter.
  std::string schema = "t_" + random_hex(6);
  pqxx::connection c(pg);
  pqxx::work w(c);
  w.exec("CREATE SCHEMA " + schema);
  w.commit();
  std::string uri = pg;
  uri += (uri.find('?') == std::string::npos ? "?" : "&");
  uri += "options=-csearch_path%3D" + schema;
  return uri;
}

std::unique_ptr<Store> open_test_store(const std::string& kind) {
  return open_store(fresh_store_uri(kind));
}

std::string source_dir() {
  const char* s = std::getenv("OOTCI_SOURCE_DIR");
  return s ? s : OOTCI_SOURCE_DIR_DEFAULT;
}

std::string binary_dir() {
  const char* s = std::getenv("OOTCI_BINARY_DIR");
  return s ? s : OOTCI_BINARY_DIR_DEFAULT;
}

std::string fixture_path(const std::string& relative) {
  return source_dir() + "/tests/fixtures/" + relative;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) throw Error("cannot write " + path);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace ootci
