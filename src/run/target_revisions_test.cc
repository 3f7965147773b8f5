#include "run/target_revisions.h"

#include <gtest/gtest.h>

#include "base/subprocess.h"
#include "run/run_manifest.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

std::string sh(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  CapturedRun r = run_captured(o);
  EXPECT_TRUE(r.ok()) << script << "\n" << r.err;
  return r.out.substr(0, r.out.find('\n'));
}

std::string git_repo_with_commit(const std::string& dir) {
  return sh("cd " + dir +
            " && git init -q . && echo a > f && git add f && git -c user.name=t -c "
            "user.email=t@t commit -qm one && git rev-parse HEAD");
}

TEST(TargetRevisions, ReadsTheHeadOfEachRepoAndTheCoreCommand) {
  std::string backend_dir = make_temp_dir(), tests_dir = make_temp_dir();
  BackendConfig b;
  b.attribute.backend_repo = backend_dir;
  b.attribute.tests_repo = tests_dir;
  b.attribute.core_revision = {"/bin/sh", "-c", "echo core-7; echo ignored"};
  std::string backend_head = git_repo_with_commit(backend_dir);
  std::string tests_head = git_repo_with_commit(tests_dir);
  TargetRevisions r = current_target_revisions(b);
  EXPECT_EQ(r.backend, backend_head);
  EXPECT_EQ(r.tests, tests_head);
  EXPECT_EQ(r.core, "core-7");
  EXPECT_EQ(manifest_target_revisions({{"targets", target_revisions_json(r)}}), r);
}

TEST(TargetRevisions, AnUnknownRevisionIsEmptyNeverAnError) {
  BackendConfig b;
  b.attribute.backend_repo = make_temp_dir();  // not a git checkout
  b.attribute.core_revision = {"/bin/false"};
  TargetRevisions r = current_target_revisions(b);
  EXPECT_EQ(r, TargetRevisions{});
  EXPECT_FALSE(manifest_target_revisions(nlohmann::json::object()));
}

}  // namespace
}  // namespace ootci
