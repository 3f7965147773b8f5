#include "run/process_tree.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "base/subprocess.h"

namespace ootci {
namespace {

TEST(ProcessTree, ParsesAStatLineWhoseNameHasSpacesAndParentheses) {
  std::string line = "4242 (a (b) c) Z 17 4242 4242 0 -1";
  for (int field = 9; field <= 51; ++field) line += " 0";
  line += " 256\n";  // field 52: exit status 1
  std::optional<ProcessStat> p = parse_process_stat(line);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pid, 4242);
  EXPECT_EQ(p->name, "a (b) c");
  EXPECT_EQ(p->state, 'Z');
  EXPECT_EQ(p->ppid, 17);
  EXPECT_EQ(p->exit_status, 256);
  EXPECT_FALSE(parse_process_stat("garbage"));
  std::optional<ProcessStat> self = parse_process_stat("1 (init) S 0 1 1");  // an old kernel
  ASSERT_TRUE(self);
  EXPECT_EQ(self->exit_status, 0);
}

TEST(ProcessTree, ADeadHelperIsAnUnreapedFailedProcessUnderTheTestProcess) {
  // 100 the test process, 101 its daemon (running), 102 a daemon that exited 1, 103 one that
  // exited 0, 200 another process tree's failed child.
  std::vector<ProcessStat> procs = {{100, 1, 'S', 0, "pytest"},     {101, 100, 'S', 0, "daemon"},
                                    {102, 100, 'Z', 256, "worker"}, {103, 101, 'Z', 0, "ok"},
                                    {200, 1, 'S', 0, "other"},      {201, 200, 'Z', 9, "x"}};
  std::optional<ProcessStat> dead = dead_helper(procs, 100);
  ASSERT_TRUE(dead);
  EXPECT_EQ(dead->pid, 102);
  EXPECT_EQ(exit_text(dead->exit_status), "exited with status 1");
  EXPECT_EQ(exit_text(9), "died from SIGKILL");
  procs[2].exit_status = 0;
  EXPECT_FALSE(dead_helper(procs, 100));  // a clean exit says nothing
  EXPECT_FALSE(dead_helper(procs, 300));  // not under that root
  // A grandchild counts; the root itself never does.
  procs.push_back({104, 101, 'Z', 11 /* SIGSEGV */, "grandchild"});
  EXPECT_EQ(dead_helper(procs, 100)->pid, 104);
  procs.push_back({100, 1, 'Z', 256, "pytest"});
  EXPECT_EQ(dead_helper({procs.back()}, 100), std::nullopt);
}

TEST(ProcessTree, FindsARealChildThatExitedWithAnErrorAndWasNeverWaitedFor) {
  SpawnOptions o;
  // The Popen is kept: one dropped at once may poll (and so reap) a child that already exited.
  o.argv = {"/bin/sh", "-c",
            "exec /usr/bin/python3 -c \"import subprocess, time; "
            "child = subprocess.Popen(['sh', '-c', 'exit 3']); time.sleep(60)\""};
  Subprocess proc = Subprocess::spawn(o);
  std::optional<ProcessStat> dead;
  for (int i = 0; i < 200 && !dead; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    dead = dead_helper(read_processes(), proc.pid());
  }
  ASSERT_TRUE(dead) << "the child that exited 3 was not seen";
  EXPECT_EQ(dead->ppid, proc.pid());
  EXPECT_EQ(exit_text(dead->exit_status), "exited with status 3");
  proc.signal(SIGKILL);
  proc.wait();
}

}  // namespace
}  // namespace ootci
