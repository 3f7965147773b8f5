#include "attribute/runner_probes.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <sstream>

#include "base/subprocess.h"
#include "testing/test_env.h"

namespace fs = std::filesystem;

namespace ootci {
namespace {

std::string sh(const std::string& dir, const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.cwd = dir;
  o.env = {{"GIT_AUTHOR_NAME", "t"},
           {"GIT_AUTHOR_EMAIL", "t@t"},
           {"GIT_COMMITTER_NAME", "t"},
           {"GIT_COMMITTER_EMAIL", "t@t"}};
  CapturedRun r = run_captured(o);
  EXPECT_TRUE(r.ok()) << script << "\n" << r.err;
  return r.out.substr(0, r.out.find('\n'));
}

std::string commit(const std::string& dir, const std::string& file, const std::string& text,
                   const std::string& message) {
  write_file(dir + "/" + file, text);
  return sh(dir, "git add -A && git commit -qm '" + message + "' && git rev-parse HEAD");
}

// A backend repo whose ootci.yaml (inside it) reads ${CORE_FLAVOUR}, a tests repo holding the
// upstream tree under upstream/, and a core "prepare" that prints the flavour per revision.
struct Repos {
  std::string root = fs::canonical(make_temp_dir()).string();
  std::string backend = root + "/backend", tests = root + "/tests";
  std::vector<std::string> backend_commits, tests_commits;

  Repos() {
    fs::create_directories(backend);
    fs::create_directories(tests + "/upstream/test");
    sh(backend, "git init -q .");
    sh(tests, "git init -q .");
    for (int i = 0; i < 4; ++i)
      backend_commits.push_back(
          commit(backend, "ootci.yaml", config(i),
                 i == 2 ? "Fix add (#1234)" : "backend " + std::to_string(i)));
    for (int i = 0; i < 3; ++i)
      tests_commits.push_back(
          commit(tests, "upstream/test/test_a.py", "# v" + std::to_string(i) + "\n", "tests"));
    setenv("OOTCI_PROBES_TEST_TORCH", (tests + "/upstream").c_str(), 1);
  }

  std::string config(int version) const {
    return "backend:\n  name: ref\n  device_type: privateuseone\n  env:\n    VERSION: v" +
           std::to_string(version) +
           "\nupstream:\n  torch_root: ${OOTCI_PROBES_TEST_TORCH}\n"
           "test_configs: [configs/*.yaml]\nattribute:\n  targets:\n    backend:\n"
           "      build: [/bin/sh, -c, \"echo built >> build.log; test ! -f broken\"]\n"
           "    core:\n      prepare: [/bin/sh, -c, \"echo noise; echo CORE_FLAVOUR=flavour-$0\", "
           "\"{rev}\"]\n";
  }

  BackendConfig loaded() const {
    BackendConfigResult r = load_backend_config(backend + "/ootci.yaml", [](const std::string& n) {
      return n == "CORE_FLAVOUR" ? std::optional<std::string>("now") : process_env(n);
    });
    EXPECT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
    return *r.config;
  }
};

TEST(RunnerProbes, ListsFirstParentCommitsOldestFirstWithPrNumbers) {
  Repos repos;
  std::stringstream log;
  RunnerProbes probes(repos.loaded(), {}, repos.root + "/cache", repos.root + "/work", log);
  auto commits =
      probes.commits_between(Target::kBackend, repos.backend_commits[0], repos.backend_commits[3]);
  ASSERT_EQ(commits.size(), 3u);
  EXPECT_EQ(commits[0].sha, repos.backend_commits[1]);
  EXPECT_EQ(commits[1].subject, "Fix add (#1234)");
  EXPECT_EQ(commits[1].pr, 1234);
  EXPECT_FALSE(commits[0].pr);
  EXPECT_EQ(commits[2].sha, repos.backend_commits[3]);
  // Backwards or unknown: nothing to bisect.
  EXPECT_TRUE(
      probes.commits_between(Target::kBackend, repos.backend_commits[3], repos.backend_commits[0])
          .empty());
  EXPECT_TRUE(
      probes.commits_between(Target::kBackend, "0000000", repos.backend_commits[0]).empty());
}

TEST(RunnerProbes, MaterializesEachTargetAtItsRevision) {
  Repos repos;
  std::stringstream log;
  RunnerProbes probes(repos.loaded(), {}, repos.root + "/cache", repos.root + "/work", log);
  Combination c{repos.backend_commits[1], repos.tests_commits[0], "core-7"};
  BackendConfig b = probes.materialize(c);
  // ootci.yaml as it was at backend commit 1.
  EXPECT_EQ(b.env["VERSION"], "v1");
  EXPECT_EQ(b.env["CORE_FLAVOUR"], "flavour-core-7");  // the core's environment, for the tests
  EXPECT_EQ(b.device_root, repos.root + "/cache/worktrees/backend/" + repos.backend_commits[1]);
  EXPECT_EQ(b.torch_root,
            repos.root + "/cache/worktrees/tests/" + repos.tests_commits[0] + "/upstream");
  EXPECT_EQ(read_file(b.torch_root + "/test/test_a.py"), "# v0\n");
  EXPECT_EQ(b.workspace, repos.root + "/work/probe-runs");
  // Built once per (backend, core) revision.
  probes.materialize(c);
  EXPECT_EQ(read_file(b.device_root + "/build.log"), "built\n");
}

TEST(RunnerProbes, TheRevisionsCheckedOutHereRunAsTheyAre) {
  Repos repos;
  std::stringstream log;
  BackendConfig config = repos.loaded();
  TargetRevisions here{repos.backend_commits[3], repos.tests_commits[2], "core-now"};
  RunnerProbes probes(config, here, repos.root + "/cache", repos.root + "/work", log);
  BackendConfig b = probes.materialize({here.backend, here.tests, here.core});
  EXPECT_EQ(b.device_root, repos.backend);
  EXPECT_EQ(b.torch_root, config.torch_root);
  EXPECT_FALSE(b.env.count("CORE_FLAVOUR"));  // no prepare: this environment is that core
  EXPECT_FALSE(fs::exists(repos.backend + "/build.log"));
  EXPECT_FALSE(fs::exists(repos.root + "/cache/worktrees"));
  // Only the target that differs is materialized.
  b = probes.materialize({here.backend, repos.tests_commits[1], here.core});
  EXPECT_EQ(b.device_root, repos.backend);
  EXPECT_EQ(read_file(b.torch_root + "/test/test_a.py"), "# v1\n");
}

TEST(RunnerProbes, ABuildFailureOrAMissingRevisionIsAProbeThatDidNotRun) {
  Repos repos;
  std::stringstream log;
  RunnerProbes probes(repos.loaded(), {}, repos.root + "/cache", repos.root + "/work", log);
  commit(repos.backend, "broken", "", "break the build");
  std::string broken = sh(repos.backend, "git rev-parse HEAD");
  ProbeOutcome o = probes.run({broken, "", ""}, {"test_a.py::T::test_x"}, 0);
  EXPECT_FALSE(o.ran);
  EXPECT_NE(o.problem.find("the backend build at " + broken.substr(0, 12) + " exited 1"),
            std::string::npos)
      << o.problem;
  o = probes.run({"feedfacefeedfacefeedfacefeedfacefeedface", "", ""}, {"x"}, 0);
  EXPECT_FALSE(o.ran);
  EXPECT_EQ(o.problem.find("backend revision feedface"), 0u) << o.problem;
  EXPECT_NE(o.problem.find("is not a commit of"), std::string::npos) << o.problem;
}

TEST(PrNumber, FromTheSubjectOrThePullRequestResolvedTrailer) {
  EXPECT_EQ(pr_number("Fix add (#1234)", ""), 1234);
  EXPECT_EQ(
      pr_number("Fix add", "Pull Request resolved: https://github.com/pytorch/pytorch/pull/99"),
      99);
  EXPECT_FALSE(pr_number("Fix #12 in the middle", ""));
}

}  // namespace
}  // namespace ootci
