#include "base/root_exec.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/file_text.h"
#include "base/scratch_dir.h"

namespace ootci {
namespace {
namespace fs = std::filesystem;

TEST(RootBinds, KeepsExistingFoldersOnceOutermostFirst) {
  ScratchDir d("binds");
  fs::create_directories(d.path() + "/a/b");
  fs::create_directories(d.path() + "/c");
  std::vector<std::string> got = root_binds({d.path() + "/a/b", d.path() + "/c/", "/", "relative",
                                             d.path() + "/missing", d.path() + "/a",
                                             d.path() + "/a"});
  EXPECT_EQ(got, (std::vector<std::string>{d.path() + "/a", d.path() + "/c"}));
}

TEST(RootCommand, RunsThisBinaryWithEveryBindAfterTheRoot) {
  ScratchDir d("cmd");
  std::vector<std::string> cmd = root_command("/r", {d.path()}, {"/usr/bin/python3", "-V"});
  ASSERT_EQ(cmd.size(), 9u);
  EXPECT_EQ(cmd[1], "chroot");
  EXPECT_EQ((std::vector<std::string>(cmd.begin() + 2, cmd.end())),
            (std::vector<std::string>{"--root", "/r", "--bind", d.path(), "--", "/usr/bin/python3",
                                      "-V"}));
}

TEST(ExecInRoot, NamesWhatIsMissing) {
  RootExec x{"/no/such/root", {}, "/", {"/bin/true"}};
  EXPECT_EQ(exec_in_root(x), "the root folder /no/such/root does not exist");
  if (geteuid() != 0) GTEST_SKIP() << "needs root (mount namespaces, chroot)";
  ScratchDir d("empty-root");
  for (const char* dir : {"proc", "dev"}) fs::create_directories(d.path() + "/" + dir);
  // In a child: the check comes after entering a mount namespace of its own.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    x.root = d.path();
    std::string why = exec_in_root(x);
    _exit(why == "/bin/true is not in the root " + d.path() + " (no " + d.path() + "/bin/true)"
              ? 0
              : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// A root made of nothing but the host's own system folders, bound in: the command runs there in
// the same process, sees /proc and the bound folders, and leaves no mount behind.
TEST(ExecInRoot, RunsInTheSameProcessAndLeavesNoMountBehind) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (mount namespaces, chroot)";
  ScratchDir root("root"), shared("shared");
  // A merged-/usr root, as Debian's: /bin, /lib and /lib64 lead into /usr.
  for (const char* dir : {"proc", "dev", "usr"}) fs::create_directories(root.path() + "/" + dir);
  for (const char* dir : {"bin", "lib", "lib64"})
    fs::create_directory_symlink(std::string("usr/") + dir, root.path() + "/" + dir);
  std::ofstream(shared.path() + "/seen") << "from the host\n";
  std::string out = shared.path() + "/out";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RootExec x{root.path(),
               {"/usr", shared.path()},
               shared.path(),
               {"/bin/sh", "-c",
                "{ echo $$; cat seen; test -r /proc/self/status && echo proc; } > out"}};
    std::string why = exec_in_root(x);
    write(2, why.data(), why.size());
    _exit(99);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_file_or_empty(out), std::to_string(child) + "\nfrom the host\nproc\n");
  EXPECT_EQ(read_file_or_empty("/proc/self/mountinfo").find(root.path()), std::string::npos);
  EXPECT_TRUE(fs::is_empty(root.path() + "/usr"));
}

}  // namespace
}  // namespace ootci
