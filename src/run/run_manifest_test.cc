#include "run/run_manifest.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "plan/plan_resolve.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

nlohmann::json tiny_plan(const std::string& source) {
  return nlohmann::json::parse(R"({"backend": {"device_type": "dev"}, "files": [{
    "relpath": "test/test_a.py", "sha256": "00", "unlisted_test_mode": "skip",
    "supported_dtypes": null, "supported_ops": null,
    "rules": [{"class": "A", "method": "test_x", "mode": "xfail", "source": ")" +
                               source + R"("}]}]})");
}

TEST(PlanConfigHash, IgnoresWhereARuleWasWrittenButNotWhatItSays) {
  EXPECT_EQ(plan_config_hash(tiny_plan("/home/a/cfg.yaml:3:5")),
            plan_config_hash(tiny_plan("/ci/work/cfg.yaml:9:1")));
  nlohmann::json other = tiny_plan("x");
  other["files"][0]["rules"][0]["mode"] = "skip";
  EXPECT_NE(plan_config_hash(tiny_plan("x")), plan_config_hash(other));
}

TEST(RunManifest, NamesABackendOutsideGitByTheDigestOfItsSources) {
  std::string dir = make_temp_dir();
  std::filesystem::create_directories(dir + "/backend/.ootci");
  write_file(dir + "/backend/kernels.cpp", "int add() { return 1; }\n");
  write_file(dir + "/backend/.ootci/evidence.db", "not part of the backend");
  BackendConfig backend;
  backend.name = "ref";
  backend.device_type = "dev";
  backend.python = "/bin/false";  // no interpreter to ask: versions stay empty
  backend.torch_root = dir;
  backend.device_root = dir + "/backend";
  backend.workspace = dir + "/backend/.ootci";
  write_file(dir + "/plan.json", "{}");
  RunInfo run;
  run.id = "r-1";
  nlohmann::json plan = tiny_plan("x");
  std::string first = build_manifest(backend, plan, dir + "/plan.json", run)["backend_revision"];
  EXPECT_EQ(first.rfind("sha256:", 0), 0u) << first;
  write_file(dir + "/backend/.ootci/evidence.db", "changed, but ignored");
  // Importing the backend's Python writes byte code: no new revision.
  std::filesystem::create_directories(dir + "/backend/__pycache__");
  write_file(dir + "/backend/__pycache__/ops.cpython-311.pyc", "byte code");
  EXPECT_EQ(build_manifest(backend, plan, dir + "/plan.json", run)["backend_revision"], first);
  write_file(dir + "/backend/kernels.cpp", "int add() { return 2; }\n");
  EXPECT_NE(build_manifest(backend, plan, dir + "/plan.json", run)["backend_revision"], first);
}

}  // namespace
}  // namespace ootci
