#include "run/process_tree.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "base/file_text.h"
#include "run/pytest_process.h"

namespace fs = std::filesystem;

namespace ootci {

std::optional<ProcessStat> parse_process_stat(const std::string& line) {
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so it ends at the last ')'.
  size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcessStat p;
  p.pid = static_cast<pid_t>(std::atol(line.c_str()));
  p.name = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;  // fields[0] is field 3 (state)
  for (std::string f; rest >> f;) fields.push_back(f);
  if (p.pid <= 0 || fields.size() < 2 || fields[0].size() != 1) return std::nullopt;
  p.state = fields[0][0];
  p.ppid = static_cast<pid_t>(std::atol(fields[1].c_str()));
  if (fields.size() >= 50) p.exit_status = std::atoi(fields[49].c_str());  // field 52
  return p;
}

std::vector<ProcessStat> read_processes() {
  std::vector<ProcessStat> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::optional<std::string> text = read_file_bytes(entry.path().string() + "/stat");
    if (!text) continue;  // it ended meanwhile
    if (std::optional<ProcessStat> p = parse_process_stat(*text)) out.push_back(*p);
  }
  return out;
}

std::optional<ProcessStat> dead_helper(const std::vector<ProcessStat>& processes, pid_t root) {
  std::map<pid_t, const ProcessStat*> by_pid;
  for (const auto& p : processes) by_pid[p.pid] = &p;
  auto under_root = [&](const ProcessStat& p) {
    for (pid_t at = p.ppid, hops = 0; at > 1 && hops < 64; ++hops) {
      if (at == root) return true;
      auto it = by_pid.find(at);
      if (it == by_pid.end()) return false;
      at = it->second->ppid;
    }
    return false;
  };
  for (const auto& p : processes) {
    if (p.state != 'Z' || p.exit_status == 0 || p.pid == root || !under_root(p)) continue;
    auto parent = by_pid.find(p.ppid);
    if (parent != by_pid.end() && parent->second->state != 'Z') return p;
  }
  return std::nullopt;
}

std::string exit_text(int status) {
  if (WIFSIGNALED(status)) return "died from " + signal_name(WTERMSIG(status));
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

}  // namespace ootci
