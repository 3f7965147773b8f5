#include "testing/ootci_cli.h"

#include <sys/wait.h>

#include <sstream>

#include "base/subprocess.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

CliRun run_ootci(const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& env) {
  std::string dir = make_temp_dir();
  std::string cmd = sh_quote(binary_dir() + "/ootci");
  for (const auto& a : args) cmd += " " + sh_quote(a);
  cmd += " >" + dir + "/out 2>" + dir + "/err";
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", cmd};
  o.env = env;
  Subprocess p = Subprocess::spawn(o);
  int status = p.wait();
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(dir + "/out");
  r.err = read_file(dir + "/err");
  return r;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace ootci
