// What several commands read the same way: the ootci.yaml they were given, --isolation, and a
// dispatch's client_payload file.
#include <fmt/format.h>

#include <iostream>

#include "base/error.h"
#include "base/file_text.h"
#include "cli/commands.h"

namespace ootci {

BackendConfig load_backend_or_exit(const std::string& path) {
  BackendConfigResult loaded = load_backend_config(path);
  for (const auto& e : loaded.errors) std::cerr << e << "\n";
  if (!loaded.config) throw ExitStatus{1};
  return *loaded.config;
}

void add_isolation_option(CLI::App* cmd, std::string& into) {
  cmd->add_option("--isolation", into,
                  "fork: one interpreter per test file, a fork per attempt; spawn: an interpreter "
                  "per attempt (default: run.isolation)")
      ->check(CLI::IsMember({"fork", "spawn"}));
}

nlohmann::json read_client_payload(const std::string& path) {
  std::optional<std::string> text = read_file_bytes(path);
  if (!text) throw Error(fmt::format("{}: cannot open file", path));
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{}: invalid JSON: {}", path, e.what()));
  }
  if (!doc.is_object())
    throw Error(fmt::format("{}: expected a JSON object, not {}", path, doc.type_name()));
  auto wrapped = doc.find("client_payload");
  if (wrapped == doc.end()) return doc;
  if (!wrapped->is_object())
    throw Error(
        fmt::format("{}: client_payload: expected an object, not {}", path, wrapped->type_name()));
  return *wrapped;
}

}  // namespace ootci
