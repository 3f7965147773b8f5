#include "base/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace ootci {
namespace {

SpawnOptions command(std::vector<std::string> argv) {
  SpawnOptions o;
  o.argv = std::move(argv);
  return o;
}

TEST(RunCaptured, SeparatesStdoutAndStderrAndKeepsTheExitCode) {
  CapturedRun r = run_captured(command({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.ok());
}

TEST(RunCaptured, DrainsLargeOutputOnBothStreamsWithoutDeadlock) {
  // 1 MB on each stream: far beyond a pipe's buffer, so reading one at a time would hang.
  CapturedRun r = run_captured(
      command({"/bin/sh", "-c", "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2"}));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out.size(), 1048576u);
  EXPECT_EQ(r.err.size(), 1048576u);
}

TEST(RunCaptured, PassesEnvironmentAndWorkingDirectory) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "echo \"$OOTCI_PROBE\"; pwd"};
  o.env["OOTCI_PROBE"] = "hello";
  o.cwd = "/tmp";
  CapturedRun r = run_captured(o);
  EXPECT_EQ(r.out, "hello\n/tmp\n");
}

TEST(RunCaptured, AMissingProgramExits127AndASignalIs128PlusIt) {
  EXPECT_EQ(run_captured(command({"/nonexistent/program"})).exit_code, 127);
  EXPECT_EQ(run_captured(command({"/bin/sh", "-c", "kill -9 $$"})).exit_code, 128 + 9);
}

TEST(RunCaptured, FeedsStdinFromAFile) {
  std::string input = testing::TempDir() + "/ootci-subprocess-input";
  FILE* f = fopen(input.c_str(), "w");
  fputs("from the file\n", f);
  fclose(f);
  SpawnOptions o = command({"/bin/cat"});
  o.input_file = input;
  EXPECT_EQ(run_captured(o).out, "from the file\n");
  EXPECT_EQ(run_captured(command({"/bin/cat"})).out, "");  // /dev/null by default
}

TEST(RunCaptured, ATimeoutKillsTheProcessGroupAndKeepsWhatWasPrinted) {
  // The grandchild holds the pipes too: only killing the group ends the wait.
  CapturedRun r = run_captured(command({"/bin/sh", "-c", "echo started; sleep 30 & wait"}), 300);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.out, "started\n");
  EXPECT_EQ(r.exit_code, 128 + 9);
}

TEST(Subprocess, AnInheritedDescriptorKeepsItsNumberInTheChild) {
  int ends[2];
  ASSERT_EQ(pipe2(ends, O_CLOEXEC), 0);
  SpawnOptions o = command({"/bin/sh", "-c", "echo through >&" + std::to_string(ends[1])});
  o.inherit_fds = {ends[1]};
  Subprocess child = Subprocess::spawn(o);
  close(ends[1]);
  EXPECT_EQ(child.wait(), 0);
  char buf[64] = {};
  EXPECT_EQ(read(ends[0], buf, sizeof buf - 1), 8);
  EXPECT_STREQ(buf, "through\n");
  close(ends[0]);
  // Without it, close-on-exec closes the descriptor and the shell cannot write to it.
  ASSERT_EQ(pipe2(ends, O_CLOEXEC), 0);
  EXPECT_NE(Subprocess::spawn(command({"/bin/sh", "-c",
                                       "echo lost >&" + std::to_string(ends[1]) + " 2>/dev/null"}))
                .wait(),
            0);
  close(ends[0]);
  close(ends[1]);
}

TEST(Subprocess, AwaitExitWaitsWithoutReaping) {
  Subprocess child = Subprocess::spawn(command({"/bin/sleep", "30"}));
  child.await_exit(10);
  EXPECT_FALSE(child.try_wait());  // still running after the timeout
  child.signal(SIGKILL);
  child.await_exit(60000);  // returns when it dies, not after a minute
  std::optional<int> status = child.try_wait();
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFSIGNALED(*status));
}

}  // namespace
}  // namespace ootci
