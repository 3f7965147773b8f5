#include "relay/allowlist.h"

#include <gtest/gtest.h>

#include <thread>

#include "testing/github_standin.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

std::string parse_error(const std::string& text) {
  try {
    Allowlist::parse(load_yaml_text("allowlist.yml", text));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Allowlist, RealCrcrFileLoads) {
  Allowlist a = Allowlist::parse(load_yaml_file(fixture_path("crcr/allowlist.yml")));
  EXPECT_EQ(a.entries().size(), 10u);
  EXPECT_EQ(a.level_of("riseproject-dev/pytorch-ci"), Level::kL1);
  EXPECT_EQ(a.level_of("torch-spyre/torch-spyre"), Level::kL2);
  EXPECT_EQ(a.level_of("pytorch/crcr-test"), Level::kL3);
  EXPECT_EQ(a.level_of("nobody/else"), Level::kNone);
  EXPECT_EQ(a.find("pytorch/crcr-test")->device, "crcr-test");
  EXPECT_EQ(a.find("pytorch/crcr-test")->oncalls.size(), 6u);
  EXPECT_EQ(a.l3_repos_for_device("crcr-test"), std::vector<std::string>{"pytorch/crcr-test"});
  auto t = a.targets();
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
}

TEST(Allowlist, AcceptsOncallStringsAndLists) {
  Allowlist a = Allowlist::parse(load_yaml_text(
      "a.yml", "L4:\n  - org/four: '@a, b'\nL1:\n  - org/one: [x, y]\n  - org/plain\n"));
  EXPECT_EQ(a.find("org/four")->oncalls, (std::vector<std::string>{"@a", "b"}));
  EXPECT_EQ(a.find("org/one")->oncalls, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(a.level_of("org/four"), Level::kL4);
}

// Participation (test-infra#8856): a mapping {oncalls, events} where oncalls go.
TEST(Allowlist, EventsSayWhichEventsARepoTakesPartIn) {
  Allowlist a = Allowlist::parse(load_yaml_text("a.yml", R"(L2:
  - org/nightly-only: {events: [nightly]}
  - org/plain
  - org/both:
      oncalls: '@a, b'
      events: [pull_request, push]
L3:
  dev:
    org/three:
      oncalls: [x]
      events: nightly
      reviewers: [y]
)"));
  const AllowlistEntry* n = a.find("org/nightly-only");
  EXPECT_EQ(n->events, std::vector<std::string>{"nightly"});
  EXPECT_FALSE(n->takes_part_in("pull_request"));
  EXPECT_TRUE(n->takes_part_in("nightly"));
  EXPECT_TRUE(a.find("org/plain")->takes_part_in("pull_request"));  // no events: every one
  EXPECT_TRUE(a.find("org/plain")->takes_part_in("periodic"));
  EXPECT_EQ(a.find("org/both")->oncalls, (std::vector<std::string>{"@a", "b"}));
  EXPECT_FALSE(a.find("org/both")->takes_part_in("nightly"));
  EXPECT_EQ(a.find("org/three")->device, "dev");
  EXPECT_EQ(a.find("org/three")->events, std::vector<std::string>{"nightly"});
  // A key this relay does not know is a warning: a newer upstream file still loads.
  EXPECT_EQ(a.warnings(),
            std::vector<std::string>{"a.yml:12:7: L3.dev.org/three.reviewers: unknown key ignored "
                                     "(expected oncalls or events)"});
  EXPECT_EQ(parse_error("L2:\n  - org/x: {events: [nightly, pull-request]}\n"),
            "allowlist.yml:2:31: L2[0].events: 'pull-request' is not an event (expected "
            "pull_request, push, nightly or periodic)");
  EXPECT_EQ(parse_error("L3:\n  d:\n    org/x:\n      events: []\n"),
            "allowlist.yml:4:15: L3.d.org/x.events: events must name at least one event");
  EXPECT_EQ(parse_error("L1:\n  - org/x: {events: {a: 1}}\n"),
            "allowlist.yml:2:21: L1[0].events: events must be a list of event names");
}

TEST(Allowlist, EmptyFileAllowsNobody) {
  EXPECT_TRUE(Allowlist::parse(load_yaml_text("a.yml", "# nothing\n")).targets().empty());
}

struct BadCase {
  const char* text;
  const char* error;
};

TEST(Allowlist, BadFilesGetExactErrors) {
  const BadCase cases[] = {
      {"- a/b\n", "allowlist.yml:1:1: the allowlist must be a mapping of L1..L4"},
      {"L1: a/b\n", "allowlist.yml:1:5: L1: expected a list of repos"},
      {"L1:\n  - nodash\n", "allowlist.yml:2:5: L1[0]: 'nodash' is not an owner/repo name"},
      {"L2:\n  - a/b/c\n", "allowlist.yml:2:5: L2[0]: 'a/b/c' is not an owner/repo name"},
      {"L3:\n  - a/b\n", "allowlist.yml:2:3: L3: L3 must map device → repo → oncalls"},
      {"L3:\n  '':\n    a/b: [x]\n", "allowlist.yml:2:3: L3: empty device name"},
      {"L3:\n  dev: [a/b]\n", "allowlist.yml:2:8: L3.dev: expected a mapping of repo → oncalls"},
      {"L1:\n  - a/b\nL2:\n  - a/b\n",
       "allowlist.yml:4:5: L2[0]: 'a/b' is already listed at allowlist.yml:2:5"},
      {"L1:\n  - a/b: {x: 1}\n",
       "allowlist.yml:2:10: L1[0]: oncalls must be a string or a list of strings"},
      {"L1:\n  - [a/b]\n",
       "allowlist.yml:2:5: L1[0]: expected `owner/repo` or `owner/repo: oncalls`"},
  };
  for (const auto& c : cases) EXPECT_EQ(parse_error(c.text), c.error) << c.text;
}

TEST(Allowlist, WhatCrcrLetsPassIsAWarning) {
  Allowlist a = Allowlist::parse(load_yaml_text("allowlist.yml",
                                                "version: 2\n"
                                                "L1:\n  - ' acme/one/ '\n"
                                                "L2:\n  - /acme/two: [x]\n"
                                                "L3:\n  dev:\n    acme/three/: [y]\n"));
  EXPECT_EQ(a.targets(), (std::vector<std::string>{"acme/one", "acme/three", "acme/two"}));
  EXPECT_EQ(a.level_of("acme/three"), Level::kL3);
  EXPECT_EQ(a.warnings(),
            (std::vector<std::string>{
                "allowlist.yml:1:1: version: unknown key ignored (expected L1, L2, L3 or L4)",
                "allowlist.yml:3:5: L1[0]: ' acme/one/ ' is read as 'acme/one', as CRCR reads it",
                "allowlist.yml:5:5: L2[0]: '/acme/two' is read as 'acme/two', as CRCR reads it",
                "allowlist.yml:8:5: L3.dev.acme/three/: 'acme/three/' is read as 'acme/three', "
                "as CRCR reads it"}));
  EXPECT_TRUE(
      Allowlist::parse(load_yaml_file(fixture_path("crcr/allowlist.yml"))).warnings().empty());
}

TEST(AllowlistSource, ReloadsWhenTheFileChangesAndKeepsTheLastGoodOne) {
  std::string path = make_temp_dir() + "/allowlist.yml";
  write_file(path, "L1:\n  - a/one\n");
  AllowlistSource src(path, 900, "");
  EXPECT_EQ(src.get()->level_of("a/one"), Level::kL1);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  write_file(path, "L2:\n  - a/one\n");
  EXPECT_EQ(src.get()->level_of("a/one"), Level::kL2);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  write_file(path, "L2: [broken\n");
  EXPECT_EQ(src.get()->level_of("a/one"), Level::kL2);
}

TEST(AllowlistSource, MissingFileFailsOnFirstLoad) {
  AllowlistSource src("/nonexistent/allowlist.yml", 900, "");
  EXPECT_THROW(src.get(), Error);
}

}  // namespace
}  // namespace ootci

namespace ootci {
namespace {

TEST(AllowlistSource, GitHubBlobUrlIsReadThroughTheContentsApiAndReloadedAfterTheTtl) {
  GitHubStandin gh(1, "");
  gh.start();
  gh.set_file("pytorch/pytorch", "main", ".github/allowlist.yml",
              read_file(fixture_path("crcr/allowlist.yml")));
  AllowlistSource src("https://github.com/pytorch/pytorch/blob/main/.github/allowlist.yml", 1,
                      gh.url());
  EXPECT_EQ(src.get()->level_of("torch-spyre/torch-spyre"), Level::kL2);
  EXPECT_EQ(src.get()->entries().size(), 10u);
  EXPECT_EQ(gh.file_requests(), 1);  // cached within the TTL
  gh.set_file("pytorch/pytorch", "main", ".github/allowlist.yml",
              "L4:\n  - torch-spyre/torch-spyre\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(src.get()->level_of("torch-spyre/torch-spyre"), Level::kL4);
  // The source breaks: the last good allowlist stays.
  gh.set_file("pytorch/pytorch", "main", ".github/allowlist.yml", "L4: [oops\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(src.get()->level_of("torch-spyre/torch-spyre"), Level::kL4);
  gh.stop();
}

TEST(AllowlistSource, UnreachableUrlFailsOnFirstLoadWithTheUrl) {
  AllowlistSource src("http://127.0.0.1:1/allowlist.yml", 900, "");
  try {
    src.get();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("http://127.0.0.1:1/allowlist.yml: fetch failed"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace ootci
