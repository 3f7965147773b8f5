#include "base/root_exec.h"

#include <fmt/format.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ootci {
namespace fs = std::filesystem;

std::vector<std::string> root_binds(std::vector<std::string> folders) {
  std::vector<std::string> normal;
  for (const auto& f : folders) {
    if (f.empty() || f[0] != '/') continue;
    std::error_code ec;
    fs::path p = fs::weakly_canonical(f, ec);
    if (ec || p == "/" || !fs::is_directory(p, ec)) continue;
    normal.push_back(p.string());
  }
  std::sort(normal.begin(), normal.end());
  std::vector<std::string> out;
  for (const auto& p : normal) {
    bool inside = std::any_of(out.begin(), out.end(), [&](const std::string& parent) {
      return p == parent || (p.size() > parent.size() && p.compare(0, parent.size(), parent) == 0 &&
                             p[parent.size()] == '/');
    });
    if (!inside) out.push_back(p);
  }
  return out;
}

namespace {

std::string failed(const std::string& what) {
  int e = errno;
  std::string text = fmt::format("{}: {}", what, std::strerror(e));
  if (e == EPERM)
    text += " (entering another root needs root, or CAP_SYS_ADMIN and CAP_SYS_CHROOT)";
  return text;
}

}  // namespace

std::string exec_in_root(const RootExec& x) {
  std::error_code ec;
  if (x.root.empty() || x.root[0] != '/' || !fs::is_directory(x.root, ec))
    return fmt::format("the root folder {} does not exist", x.root);
  if (x.argv.empty()) return "no command to run in the root";
  std::string program = x.argv[0];
  if (unshare(CLONE_NEWNS) != 0) return failed("unshare(CLONE_NEWNS)");
  // Private from here on: nothing mounted below propagates back to the host's namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return failed("making / private");
  std::string proc = x.root + "/proc", dev = x.root + "/dev";
  if (mount("proc", proc.c_str(), "proc", 0, nullptr) != 0)
    return failed(fmt::format("mounting proc on {}", proc));
  if (mount("/dev", dev.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return failed(fmt::format("binding /dev on {}", dev));
  for (const auto& b : root_binds(x.binds)) {
    std::string target = x.root + b;
    fs::create_directories(target, ec);
    if (ec) return fmt::format("creating {}: {}", target, ec.message());
    if (mount(b.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return failed(fmt::format("binding {} on {}", b, target));
  }
  // Checked once the binds are in place: one of them may hold it.
  if (program[0] == '/' && !fs::exists(x.root + program, ec))
    return fmt::format("{} is not in the root {} (no {}{})", program, x.root, x.root, program);
  if (chroot(x.root.c_str()) != 0) return failed(fmt::format("chroot {}", x.root));
  std::string cwd = x.cwd.empty() ? "/" : x.cwd;
  if (chdir(cwd.c_str()) != 0)
    return failed(fmt::format("changing to {} inside the root {}", cwd, x.root));
  std::vector<char*> args;
  for (const auto& a : x.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  return failed(fmt::format("running {} inside the root {}", program, x.root));
}

std::vector<std::string> root_command(const std::string& root,
                                      const std::vector<std::string>& binds,
                                      const std::vector<std::string>& argv) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> cmd{ec ? std::string("ootci") : self.string(), "chroot", "--root", root};
  for (const auto& b : root_binds(binds)) {
    cmd.push_back("--bind");
    cmd.push_back(b);
  }
  cmd.push_back("--");
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  return cmd;
}

}  // namespace ootci
