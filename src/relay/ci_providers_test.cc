#include "relay/ci_providers.h"

#include <gtest/gtest.h>

#include "testing/test_env.h"

namespace ootci {
namespace {

TEST(CiProviders, RealCrcrFileMapsTheVllmPipelineConstrainedToMain) {
  CiProviders p = CiProviders::load(fixture_path("crcr/ci_providers.yml"));
  EXPECT_EQ(p.size(), 1u);
  nlohmann::json claims = {{"organization_id", "018b5ec5-c236-4037-ba08-d8a5d29bcdae"},
                           {"pipeline_id", "018cdabc-d930-49f6-9085-634c4cb582ed"},
                           {"build_branch", "main"}};
  EXPECT_EQ(p.identity("buildkite", claims).repo, "vllm-project/vllm");
  claims["build_branch"] = "fork-pr";
  EXPECT_EQ(p.identity("buildkite", claims).error,
            "claim build_branch is not allowed for this pipeline");
  claims["pipeline_id"] = "other";
  EXPECT_EQ(p.identity("buildkite", claims).error, "Buildkite pipeline is not registered");
}

TEST(CiProviders, SimpleFormAndErrors) {
  CiProviders p = CiProviders::parse(
      load_yaml_text("p.yml", "providers:\n  buildkite:\n    repo_map:\n      o/p: acme/x\n"));
  EXPECT_EQ(p.identity("buildkite", {{"organization_id", "o"}, {"pipeline_id", "p"}}).repo,
            "acme/x");
  try {
    CiProviders::parse(
        load_yaml_text("p.yml", "providers:\n  buildkite:\n    repo_map:\n      o/p: nope\n"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "p.yml:4:12: providers.buildkite.repo_map.o/p: 'nope' is not an owner/repo name");
  }
}

// Found by fuzz/ci_providers_fuzz.cc: a file without `providers` (here a one-key mapping whose key
// is two bytes of UTF-8) threw yaml-cpp's InvalidNode out of the relay's startup.
TEST(CiProviders, MissingLevelsRegisterNothingAndScalarLevelsNameTheLine) {
  for (const char* text : {"\xcd\x81:", "foo: 1\n", "providers:\n", "providers: {}\n",
                           "providers:\n  buildkite:\n", "providers:\n  gitlab: {}\n"})
    EXPECT_EQ(CiProviders::parse(load_yaml_text("p.yml", text)).size(), 0u) << text;
  auto error = [](const char* text) {
    try {
      CiProviders::parse(load_yaml_text("p.yml", text));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("providers: 3\n"), "p.yml:1:12: providers: expected a mapping");
  EXPECT_EQ(error("providers:\n  buildkite: [a]\n"),
            "p.yml:2:14: providers.buildkite: expected a mapping");
  EXPECT_EQ(error("providers:\n  buildkite:\n    repo_map: x\n"),
            "p.yml:3:15: providers.buildkite.repo_map: expected a mapping");
}

TEST(CiProviders, GitLabAndCircleCiProjectsMapWithRequiredClaims) {
  CiProviders p = CiProviders::parse(load_yaml_text("p.yml", R"(providers:
  gitlab:
    repo_map:
      "4242":
        repo: acme/gl
        required_claims:
          ref: [main]
          ref_protected: ["true"]
  circleci:
    repo_map:
      org-1/proj-1: acme/cc
)"));
  EXPECT_EQ(p.size(), 2u);
  nlohmann::json gitlab = {{"project_id", "4242"},
                           {"project_path", "acme/gl-mirror"},
                           {"ref", "main"},
                           {"ref_protected", "true"}};
  EXPECT_EQ(p.identity("gitlab", gitlab).repo, "acme/gl");
  gitlab["ref_protected"] = true;  // a boolean claim reads as the file spells it
  EXPECT_EQ(p.identity("gitlab", gitlab).repo, "acme/gl");
  gitlab["ref"] = "feature";
  EXPECT_EQ(p.identity("gitlab", gitlab).error, "claim ref is not allowed for this project");
  gitlab["project_id"] = 7;
  EXPECT_EQ(p.identity("gitlab", gitlab).error, "GitLab project is not registered");

  nlohmann::json circle = {{"sub", "org/org-1/project/proj-1/user/u-9"},
                           {"oidc.circleci.com/project-id", "proj-1"},
                           {"oidc.circleci.com/vcs-origin", "github.com/acme/cc"}};
  EXPECT_EQ(p.identity("circleci", circle).repo, "acme/cc");
  circle["oidc.circleci.com/project-id"] = "proj-2";  // disagrees with sub
  EXPECT_EQ(p.identity("circleci", circle).error, "CircleCI project is not registered");
  circle["oidc.circleci.com/project-id"] = "proj-1";
  circle["sub"] = "org/org-2/project/proj-1/user/u-9";
  EXPECT_EQ(p.identity("circleci", circle).error, "CircleCI project is not registered");
  circle["sub"] = "project/proj-1";
  EXPECT_EQ(p.identity("circleci", circle).error, "CircleCI project is not registered");
  EXPECT_EQ(p.identity("buildkite", circle).error, "Buildkite pipeline is not registered");
  EXPECT_EQ(p.identity("jenkins", circle).error, "unsupported CI provider jenkins");
  try {
    CiProviders::parse(
        load_yaml_text("p.yml", "providers:\n  circleci:\n    repo_map:\n      proj: acme/x\n"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "p.yml:4:7: providers.circleci.repo_map.proj: expected org_id/project_id");
  }
}

}  // namespace
}  // namespace ootci
