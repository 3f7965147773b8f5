#include "base/file_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/scratch_dir.h"

namespace ootci {
namespace {

TEST(FileLock, IsHeldUntilReleasedAndNamesItsHolder) {
  ScratchDir dir("lock");
  std::string path = dir.path() + "/run.lock";
  {
    auto held = FileLock::try_lock(path);
    ASSERT_TRUE(held);
    pid_t holder = -1;
    EXPECT_FALSE(FileLock::try_lock(path, &holder));  // another open file: flock conflicts
    EXPECT_EQ(holder, getpid());
  }
  EXPECT_TRUE(FileLock::try_lock(path));
}

TEST(FileLock, AKilledHolderLeavesItFree) {
  ScratchDir dir("lock");
  std::string path = dir.path() + "/run.lock";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto held = FileLock::try_lock(path);
    char c = held ? '1' : '0';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, '1');
  pid_t holder = 0;
  EXPECT_FALSE(FileLock::try_lock(path, &holder));
  EXPECT_EQ(holder, child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(FileLock::try_lock(path));
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
}  // namespace ootci
