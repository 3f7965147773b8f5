#include "base/subprocess.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ootci
