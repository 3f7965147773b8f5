// The real `ootci init`: the files it writes parse, the workflow has the job graph and CRCR
// conventions it promises, and every `ootci` command the workflow runs exists with the flags it
// uses (checked against the binary's own --help, as actionlint checks an action's inputs).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "testing/ootci_cli.h"
#include "testing/test_env.h"

namespace ootci {
namespace {

namespace fs = std::filesystem;
using Lines = std::vector<std::string>;
using Words = std::vector<std::string>;

const Lines kFiles = {".github/actions/setup-ootci/action.yml",
                      ".github/workflows/ootci-discovery.yml",
                      ".github/workflows/ootci.yml",
                      "README.ootci.md",
                      "configs/test_view_ops.yaml",
                      "ootci.yaml"};

// The upstream suite from the CMake cache (tests/CMakeLists.txt); empty when not set up.
std::string torch_root() {
  const char* t = std::getenv("TORCH_ROOT");
  return t ? t : "";
}

// A fresh `ootci init --device foo` under a temporary folder; returns the folder.
std::string init_repo() {
  std::string dir = make_temp_dir() + "/tmp";
  CliRun r = run_ootci({"init", "--device", "foo", "--dir", dir});
  EXPECT_EQ(r.code, 0) << r.err;
  return dir;
}

// ---- A small shell lexer: enough to find the `ootci` commands in a workflow's run: blocks.

// Words and operators of one logical line. Quotes are removed from words; operator characters
// inside quotes stay part of the word.
struct Token {
  std::string text;
  bool op = false;
};

std::vector<Token> shell_tokens(const std::string& line) {
  std::vector<Token> out;
  std::string word;
  bool in_word = false;
  auto flush = [&] {
    if (in_word) out.push_back({word, false});
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '\'' || c == '"') {
      size_t end = line.find(c, i + 1);
      if (end == std::string::npos) end = line.size();
      word += line.substr(i + 1, end - i - 1);
      in_word = true;
      i = end;
    } else if (c == ' ' || c == '\t') {
      flush();
    } else if (std::string(";|&()<>").find(c) != std::string::npos) {
      flush();
      std::string op(1, c);
      if (i + 1 < line.size() && (c == '|' || c == '&' || c == '>') && line[i + 1] == c)
        op += line[++i];
      out.push_back({op, true});
    } else {
      word += c;
      in_word = true;
    }
  }
  flush();
  return out;
}

// Backslash-continued lines joined, comment lines dropped.
Lines logical_lines(const std::string& script) {
  Lines out;
  std::string current;
  for (const std::string& line : split_lines(script)) {
    if (!line.empty() && line.back() == '\\') {
      current += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    current += line;
    size_t start = current.find_first_not_of(" \t");
    if (start != std::string::npos && current[start] != '#') out.push_back(current);
    current.clear();
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

// Every `ootci ...` command in a script, as the words after `ootci`: a command starts a line,
// or follows an operator or a keyword such as `then`, and ends at the next operator.
std::vector<Words> ootci_commands(const std::string& script) {
  static const std::set<std::string> keywords = {"then",  "do",    "else", "elif", "if",
                                                 "while", "until", "!",    "time"};
  std::vector<Words> out;
  for (const std::string& line : logical_lines(script)) {
    std::vector<Token> tokens = shell_tokens(line);
    bool command_start = true;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const Token& t = tokens[i];
      if (t.op) {
        command_start = t.text != ">" && t.text != ">>" && t.text != "<";
        continue;
      }
      if (command_start && t.text == "ootci") {
        Words words;
        for (++i; i < tokens.size() && !tokens[i].op; ++i) words.push_back(tokens[i].text);
        out.push_back(words);
        --i;
        command_start = false;
        continue;
      }
      command_start = command_start && keywords.count(t.text) > 0;
    }
  }
  return out;
}

// ---- Checking a command against `ootci ... --help`.

struct Help {
  Lines subcommands;
  bool subcommand_optional = false;            // "Usage: ... [SUBCOMMAND]" (ootci report)
  std::map<std::string, std::string> options;  // every spelling ("-o") -> the longest ("--output")
  std::set<std::string> required;              // the longest spellings of REQUIRED options
};

Help parse_help(const std::string& text) {
  Help h;
  std::string section, last_option;
  for (const std::string& line : split_lines(text)) {
    if (!line.empty() && line[0] != ' ') {
      section = line;
      if (line.starts_with("Usage:") && line.find("[SUBCOMMAND]") != std::string::npos)
        h.subcommand_optional = true;
      continue;
    }
    size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    std::string first = line.substr(start, line.find(' ', start) - start);
    if (section == "Subcommands:" && start == 2) h.subcommands.push_back(first);
    if (section == "Options:" && first[0] == '-') {
      Words names;
      for (size_t from = 0;;) {
        size_t comma = first.find(',', from);
        names.push_back(first.substr(from, comma == std::string::npos ? comma : comma - from));
        if (comma == std::string::npos) break;
        from = comma + 1;
      }
      std::string longest = *std::max_element(names.begin(), names.end(),
                                              [](auto& a, auto& b) { return a.size() < b.size(); });
      for (const auto& n : names) h.options[n] = longest;
      if (line.find(" REQUIRED") != std::string::npos) h.required.insert(longest);
      last_option = longest;
    }
    // Ours, in the description (maybe on the next line), for an option that is required only
    // without a subcommand.
    if (section == "Options:" && line.find("(required)") != std::string::npos)
      h.required.insert(last_option);
  }
  return h;
}

const Help& help_for(const Words& path) {
  static std::map<Words, Help> cache;
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  Words args = path;
  args.push_back("--help");
  CliRun r = run_ootci(args);
  EXPECT_EQ(r.code, 0) << "ootci --help for " << testing::PrintToString(path) << ": " << r.err;
  return cache[path] = parse_help(r.out);
}

std::string fmt_path(const Words& path) {
  std::string out;
  for (const auto& p : path) out += " " + p;
  return out;
}

// "" when `ootci <words>` names a real (sub)command, uses only flags it accepts and gives its
// required options; otherwise what is wrong.
std::string check_command(const Words& words) {
  Words path;
  size_t i = 0;
  // A flag of ootci itself, such as --version, instead of a subcommand.
  if (!words.empty() && words[0].starts_with("-")) {
    if (words.size() == 1 && help_for({}).options.count(words[0])) return "";
    return "'ootci' has no option " + words[0] + " of its own";
  }
  while (!help_for(path).subcommands.empty()) {
    const Lines& subs = help_for(path).subcommands;
    std::string name = "'ootci" + fmt_path(path) + "'";
    if (i >= words.size() || words[i].starts_with("-")) {
      if (help_for(path).subcommand_optional) break;
      return name + " needs a subcommand";
    }
    if (std::find(subs.begin(), subs.end(), words[i]) == subs.end())
      return name + " has no subcommand '" + words[i] + "'";
    path.push_back(words[i++]);
  }
  const Help& help = help_for(path);
  std::string name = "'ootci" + fmt_path(path) + "'";
  std::set<std::string> given;
  for (; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (!w.starts_with("-") || w == "-") continue;
    std::string flag = w.substr(0, w.find('='));
    auto option = help.options.find(flag);
    if (option == help.options.end()) return name + " has no option " + flag;
    given.insert(option->second);
  }
  for (const auto& r : help.required)
    if (!given.count(r)) return name + " needs " + r;
  return "";
}

// Every scalar `run:` value in a YAML tree (workflow steps, composite action steps).
void collect_runs(const YAML::Node& node, Lines& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      if (kv.first.as<std::string>() == "run" && kv.second.IsScalar())
        out.push_back(kv.second.as<std::string>());
      else
        collect_runs(kv.second, out);
    }
  } else if (node.IsSequence()) {
    for (const auto& n : node) collect_runs(n, out);
  }
}

std::string run_of(const YAML::Node& step) {
  return step["run"] ? step["run"].as<std::string>() : "";
}

// Indices of the steps of `job` whose run: has an `ootci <sub...>` command containing `word`.
std::vector<size_t> steps_calling(const YAML::Node& job, const Words& sub,
                                  const std::string& word = "") {
  std::vector<size_t> out;
  for (size_t s = 0; s < job["steps"].size(); ++s) {
    for (const Words& c : ootci_commands(run_of(job["steps"][s]))) {
      if (c.size() < sub.size() || !std::equal(sub.begin(), sub.end(), c.begin())) continue;
      if (!word.empty() && std::find(c.begin(), c.end(), word) == c.end()) continue;
      out.push_back(s);
      break;
    }
  }
  return out;
}

Words strings(const YAML::Node& list) {
  Words out;
  for (const auto& n : list) out.push_back(n.as<std::string>());
  return out;
}

// ---- The checker first: it must find commands where the shell would, and reject what the
// binary would reject. Otherwise the workflow test below proves nothing.

TEST(InitCliChecker, FindsCommandsWhereTheShellRunsThem) {
  std::string script = R"(# ootci commented --bogus
echo "ootci quoted --bogus"
ootci run --config ootci.yaml \
  --shard "1/2"; ootci judge --run x --config y | tee out
if [ -n "$X" ]; then ootci plan check 'a b.yaml'; fi
command -v ootci >/dev/null
x=$(ootci shards --config c --count 2 --matrix)
)";
  EXPECT_EQ(ootci_commands(script),
            (std::vector<Words>{{"run", "--config", "ootci.yaml", "--shard", "1/2"},
                                {"judge", "--run", "x", "--config", "y"},
                                {"plan", "check", "a b.yaml"},
                                {"shards", "--config", "c", "--count", "2", "--matrix"}}));
}

TEST(InitCliChecker, RejectsUnknownSubcommandsFlagsAndMissingRequiredOptions) {
  EXPECT_EQ(check_command({"run", "--config", "ootci.yaml", "--shard", "1/2"}), "");
  EXPECT_EQ(check_command({"plan", "resolve", "--config", "c", "-o", "p.json"}), "");
  EXPECT_EQ(check_command({"shards", "--config=c", "--count", "2", "--matrix"}), "");
  EXPECT_EQ(check_command({"run", "--config", "c", "--no-such-flag"}),
            "'ootci run' has no option --no-such-flag");
  EXPECT_EQ(check_command({"nosuch", "--config", "c"}), "'ootci' has no subcommand 'nosuch'");
  EXPECT_EQ(check_command({"plan", "nosuch"}), "'ootci plan' has no subcommand 'nosuch'");
  EXPECT_EQ(check_command({"plan"}), "'ootci plan' needs a subcommand");
  EXPECT_EQ(check_command({"--help"}), "");
  EXPECT_EQ(check_command({"--no-such-flag"}), "'ootci' has no option --no-such-flag of its own");
  EXPECT_EQ(check_command({"run", "--shard", "1/2"}), "'ootci run' needs --config");
  // `ootci report` runs itself or its html subcommand.
  EXPECT_EQ(check_command({"report", "--status", "completed", "--payload", "p.json"}), "");
  EXPECT_EQ(check_command({"report", "html", "--run", "r"}), "");
  EXPECT_EQ(check_command({"report", "--payload", "p.json"}), "'ootci report' needs --status");
  // A made-up line as it would sit in a workflow, end to end.
  std::vector<Words> made_up =
      ootci_commands("ootci ingest junit/*.xml --config ootci.yaml --runid x \\\n  --backend b\n");
  ASSERT_EQ(made_up.size(), 1u);
  EXPECT_EQ(check_command(made_up[0]), "'ootci ingest' has no option --runid");
}

// ---- What `ootci init` writes.

TEST(InitCli, WritesTheFilesAndRefusesToOverwriteThem) {
  std::string dir = make_temp_dir() + "/tmp";
  CliRun r = run_ootci({"init", "--device", "foo", "--dir", dir});
  ASSERT_EQ(r.code, 0) << r.err;
  Lines expected;
  for (const auto& f : kFiles) expected.push_back("wrote " + dir + "/" + f);
  expected.push_back("next steps: README.ootci.md");
  EXPECT_EQ(split_lines(r.out), expected);
  for (const auto& f : kFiles) EXPECT_TRUE(fs::is_regular_file(dir + "/" + f)) << f;

  write_file(dir + "/ootci.yaml", "mine\n");
  CliRun again = run_ootci({"init", "--device", "foo", "--dir", dir});
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(again.out, "");
  EXPECT_NE(again.err.find("already exist: .github/actions/setup-ootci/action.yml"),
            std::string::npos)
      << again.err;
  EXPECT_NE(again.err.find("--force overwrites"), std::string::npos) << again.err;
  EXPECT_EQ(read_file(dir + "/ootci.yaml"), "mine\n");
  EXPECT_EQ(run_ootci({"init", "--device", "foo", "--dir", dir, "--force"}).code, 0);
  EXPECT_NE(read_file(dir + "/ootci.yaml"), "mine\n");
}

TEST(InitCli, RejectsABadDeviceNameAndWritesNothing) {
  std::string dir = make_temp_dir() + "/tmp";
  CliRun r = run_ootci({"init", "--device", "Foo Bar", "--dir", dir});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("invalid device name 'Foo Bar'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(run_ootci({"init", "--dir", dir}).code, 2);  // --device is required
}

TEST(InitCli, EveryGeneratedYamlParses) {
  std::string dir = init_repo();
  for (const auto& f : kFiles) {
    if (!f.ends_with(".yml") && !f.ends_with(".yaml")) continue;
    YAML::Node doc;
    EXPECT_NO_THROW(doc = YAML::LoadFile(dir + "/" + f)) << f;
    EXPECT_TRUE(doc.IsMap()) << f;
  }
}

TEST(InitCli, WorkflowFollowsCrcrConventions) {
  YAML::Node wf = YAML::LoadFile(init_repo() + "/.github/workflows/ootci.yml");
  EXPECT_EQ(strings(wf["on"]["repository_dispatch"]["types"]), (Words{"pull_request", "push"}));
  EXPECT_FALSE(wf["on"]["workflow_dispatch"]["inputs"]["pytorch_sha"]["required"].as<bool>());
  ASSERT_TRUE(wf["on"]["schedule"].IsSequence());
  EXPECT_FALSE(wf["on"]["schedule"][0]["cron"].as<std::string>().empty());
  EXPECT_EQ(wf["permissions"]["id-token"].as<std::string>(), "write");
  EXPECT_EQ(wf["permissions"]["contents"].as<std::string>(), "read");
  EXPECT_EQ(wf["permissions"]["actions"].as<std::string>(), "read");
  std::string group = wf["concurrency"]["group"].as<std::string>();
  EXPECT_NE(group.find("github.event.client_payload.payload.repository.full_name"),
            std::string::npos);
  EXPECT_NE(group.find("github.event.client_payload.payload.pull_request.number || github.run_id"),
            std::string::npos);
  EXPECT_TRUE(wf["concurrency"]["cancel-in-progress"].as<bool>());
  // The whole expression: unquoted, the " #" of "PR #" started a YAML comment.
  std::string run_name = wf["run-name"].as<std::string>();
  EXPECT_NE(run_name.find("format('PR #{0} ({1})', "), std::string::npos) << run_name;
  EXPECT_TRUE(run_name.ends_with("}}")) << run_name;
}

TEST(InitCli, WritesTheDebToInstallIntoTheSetupAction) {
  std::string dir = make_temp_dir() + "/tmp";
  const std::string url = "https://example.com/releases/ootci_1.2.3_amd64.deb";
  const std::string sha = std::string(32, 'a') + std::string(32, '0');
  CliRun r = run_ootci(
      {"init", "--device", "foo", "--dir", dir, "--ootci-deb-url", url, "--ootci-deb-sha256", sha});
  ASSERT_EQ(r.code, 0) << r.err;
  YAML::Node action = YAML::LoadFile(dir + "/.github/actions/setup-ootci/action.yml");
  EXPECT_EQ(action["inputs"]["ootci-deb-url"]["default"].as<std::string>(), url);
  EXPECT_EQ(action["inputs"]["ootci-deb-sha256"]["default"].as<std::string>(), sha);
  EXPECT_EQ(action["runs"]["using"].as<std::string>(), "composite");

  // A URL without its SHA-256 is refused, and nothing is written.
  std::string other = make_temp_dir() + "/tmp";
  CliRun half = run_ootci({"init", "--device", "foo", "--dir", other, "--ootci-deb-url", url});
  EXPECT_EQ(half.code, 1);
  EXPECT_NE(half.err.find("--ootci-deb-url and --ootci-deb-sha256 go together"), std::string::npos)
      << half.err;
  EXPECT_FALSE(fs::exists(other));
  CliRun bad = run_ootci({"init", "--device", "foo", "--dir", other, "--ootci-deb-url", url,
                          "--ootci-deb-sha256", "abc"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--ootci-deb-sha256 'abc': expected 64 hex digits"), std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(other));
}

TEST(InitCli, WorkflowJobGraph) {
  YAML::Node jobs = YAML::LoadFile(init_repo() + "/.github/workflows/ootci.yml")["jobs"];
  Words names;
  for (const auto& kv : jobs) names.push_back(kv.first.as<std::string>());
  EXPECT_EQ(names,
            (Words{"gate", "build", "plan", "test", "wave2-decision", "test-wave-2", "report"}));

  // gate: the dispatch through toJSON into dispatch.json, the decision into $GITHUB_OUTPUT.
  YAML::Node gate = jobs["gate"];
  for (const char* out : {"should_build", "upstream_sha", "pr_number"})
    EXPECT_EQ(gate["outputs"][out].as<std::string>(),
              std::string("${{ steps.gate.outputs.") + out + " }}");
  bool saves_payload = false;
  for (const auto& step : gate["steps"])
    if (step["env"] && step["env"]["CLIENT_PAYLOAD"])
      saves_payload = step["env"]["CLIENT_PAYLOAD"].as<std::string>() ==
                          "${{ toJSON(github.event.client_payload) }}" &&
                      run_of(step).find("> dispatch.json") != std::string::npos;
  EXPECT_TRUE(saves_payload);
  std::vector<size_t> gated = steps_calling(gate, {"gate"}, "--payload");
  ASSERT_EQ(gated.size(), 1u);
  EXPECT_EQ(gate["steps"][gated[0]]["id"].as<std::string>(), "gate");
  EXPECT_EQ(steps_calling(gate, {"gate"}, "$GITHUB_OUTPUT"), gated);
  EXPECT_EQ(steps_calling(gate, {"gate"}, "--nightly"), gated);  // the schedule's gate

  // build once, on should_build; the legs test that build.
  EXPECT_EQ(jobs["build"]["needs"].as<std::string>(), "gate");
  EXPECT_EQ(jobs["build"]["if"].as<std::string>(), "needs.gate.outputs.should_build == 'true'");
  EXPECT_EQ(jobs["build"]["strategy"].IsDefined(), false);
  EXPECT_EQ(steps_calling(jobs["plan"], {"shards"}, "--matrix").size(), 1u);
  EXPECT_EQ(steps_calling(jobs["plan"], {"shards"}, "--count").size(), 1u);
  YAML::Node test = jobs["test"];
  EXPECT_EQ(strings(test["needs"]), (Words{"gate", "build", "plan"}));
  EXPECT_EQ(test["strategy"]["matrix"].as<std::string>(),
            "${{ fromJSON(needs.plan.outputs.matrix) }}");
  EXPECT_FALSE(test["strategy"]["fail-fast"].as<bool>());
  EXPECT_EQ(steps_calling(test, {"run"}, "--shard").size(), 1u);
  bool uploads_junit_always = false;
  for (const auto& step : test["steps"])
    if (step["uses"] && step["uses"].as<std::string>().starts_with("actions/upload-artifact"))
      uploads_junit_always = step["if"].as<std::string>() == "always()" &&
                             step["with"]["path"].as<std::string>() == "junit.xml";
  EXPECT_TRUE(uploads_junit_always);

  // A pull request's staged selection: wave 1 in `test`, wave 2 after the decision (issue 41).
  EXPECT_EQ(steps_calling(jobs["plan"], {"select", "changed"}, "--staged").size(), 1u);
  EXPECT_EQ(steps_calling(jobs["plan"], {"shards"}, "--select").size(), 1u);
  EXPECT_EQ(steps_calling(jobs["wave2-decision"], {"select", "wave2"}, "--select").size(), 1u);
  YAML::Node wave2 = jobs["test-wave-2"];
  EXPECT_EQ(strings(wave2["needs"]), (Words{"gate", "build", "plan", "test", "wave2-decision"}));
  EXPECT_NE(wave2["if"].as<std::string>().find("needs.wave2-decision.outputs.run == 'true'"),
            std::string::npos);
  EXPECT_EQ(steps_calling(wave2, {"run"}, "--wave").size(), 1u);

  // Only the report job calls the relay: legs reporting would flood HUD.
  for (const auto& kv : jobs) {
    if (kv.first.as<std::string>() == "report") continue;
    EXPECT_TRUE(steps_calling(kv.second, {"report"}).empty()) << kv.first.as<std::string>();
  }
}

TEST(InitCli, ReportJobSendsBothCallbacksFromOneJobAroundTheMatrix) {
  YAML::Node report =
      YAML::LoadFile(init_repo() + "/.github/workflows/ootci.yml")["jobs"]["report"];
  // Beside the matrix, not after it: it needs only the gate.
  EXPECT_EQ(report["needs"].as<std::string>(), "gate");
  EXPECT_EQ(report["if"].as<std::string>(), "needs.gate.outputs.should_build == 'true'");

  std::vector<size_t> started = steps_calling(report, {"report"}, "in_progress");
  std::vector<size_t> completed = steps_calling(report, {"report"}, "completed");
  ASSERT_EQ(started.size(), 1u);
  ASSERT_EQ(completed.size(), 1u);
  EXPECT_LT(started[0], completed[0]);
  // Every other `ootci report` is `ootci report html`, which writes a page and calls nobody.
  std::vector<size_t> callbacks;
  std::vector<size_t> pages = steps_calling(report, {"report", "html"});
  for (size_t s : steps_calling(report, {"report"}))
    if (std::find(pages.begin(), pages.end(), s) == pages.end()) callbacks.push_back(s);
  EXPECT_EQ(callbacks, (std::vector<size_t>{started[0], completed[0]}));
  YAML::Node done = report["steps"][completed[0]];
  EXPECT_NE(done["if"].as<std::string>().find("always()"), std::string::npos);
  for (size_t s : {started[0], completed[0]})
    EXPECT_EQ(report["steps"][s]["env"]["OOTCI_CHECK_RUN_ID"].as<std::string>(),
              "${{ job.check_run_id }}");
  // Every completed callback names the same job as in_progress did.
  for (const Words& c : ootci_commands(run_of(report["steps"][started[0]])))
    EXPECT_NE(std::find(c.begin(), c.end(), "$JOB_NAME"), c.end());
  for (const Words& c : ootci_commands(run_of(done)))
    EXPECT_NE(std::find(c.begin(), c.end(), "$JOB_NAME"), c.end());

  // Between them: wait on this run's jobs, then ingest the legs into one run that completed
  // reports.
  size_t waits = report["steps"].size(), ingests = report["steps"].size();
  for (size_t s = 0; s < report["steps"].size(); ++s) {
    std::string run = run_of(report["steps"][s]);
    if (run.find("gh api") != std::string::npos &&
        run.find("repos/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID/jobs") != std::string::npos)
      waits = s;
  }
  std::vector<size_t> ingest = steps_calling(report, {"ingest"}, "--run");
  ASSERT_EQ(ingest.size(), 1u);
  ingests = ingest[0];
  EXPECT_LT(started[0], waits);
  EXPECT_LT(waits, ingests);
  EXPECT_LT(ingests, completed[0]);
  EXPECT_FALSE(steps_calling(report, {"report"}, "--run").empty());
}

TEST(InitCli, EveryOotciCommandInTheWorkflowExistsWithItsFlags) {
  std::string dir = init_repo();
  size_t checked = 0;
  std::set<std::string> subcommands;
  for (const char* f : {".github/workflows/ootci.yml", ".github/actions/setup-ootci/action.yml"}) {
    Lines runs;
    collect_runs(YAML::LoadFile(dir + "/" + f), runs);
    ASSERT_FALSE(runs.empty()) << f;
    for (const std::string& run : runs) {
      for (const Words& c : ootci_commands(run)) {
        // `ootci --version` comes with the Debian package (the package branch); until this
        // binary has it, that one command is not checked.
        if (c == Words{"--version"} && !help_for({}).options.count("--version")) {
          subcommands.insert(c[0]);
          continue;
        }
        EXPECT_EQ(check_command(c), "") << f << ": ootci" << fmt_path(c);
        ++checked;
        if (!c.empty()) subcommands.insert(c[0]);
      }
    }
  }
  EXPECT_EQ(subcommands, (std::set<std::string>{"--version", "gate", "ingest", "judge", "report",
                                                "run", "select", "shards"}));
  EXPECT_GE(checked, 8u);
}

// ---- The generated configuration works with the real commands.

TEST(InitCli, PlanChecksResolvesAndShards) {
  if (torch_root().empty()) GTEST_SKIP() << "TORCH_ROOT is not set (OOTCI_TORCH_ROOT in CMake)";
  std::string dir = init_repo();
  CliRun check = run_ootci({"plan", "check", dir + "/configs/test_view_ops.yaml"});
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_EQ(check.err, "");
  CliRun resolve =
      run_ootci({"plan", "resolve", "--config", dir + "/ootci.yaml", "-o", dir + "/plan.json"});
  EXPECT_EQ(resolve.code, 0) << resolve.err;
  EXPECT_EQ(resolve.err, "");  // no warnings either: every rule names real tests
  nlohmann::json plan = nlohmann::json::parse(read_file(dir + "/plan.json"));
  ASSERT_EQ(plan["files"].size(), 1u);
  EXPECT_EQ(plan["files"][0]["relpath"], "test/test_view_ops.py");
  EXPECT_EQ(plan["backend"]["device_type"], "foo");

  CliRun shards =
      run_ootci({"shards", "--config", dir + "/ootci.yaml", "--count", "4", "--matrix"});
  ASSERT_EQ(shards.code, 0) << shards.err;
  nlohmann::json matrix = nlohmann::json::parse(shards.out);
  ASSERT_EQ(matrix["include"].size(), 4u);
  EXPECT_EQ(matrix["include"][0]["files"], nlohmann::json::array({"test/test_view_ops.py"}));
}

// The commented lines of the gate: section, uncommented, are valid gate configuration.
TEST(InitCli, TheCommentedGateSectionIsValidWhenUncommented) {
  std::string dir = init_repo();
  Lines lines = split_lines(read_file(dir + "/ootci.yaml"));
  std::string text;
  bool in_gate = false;
  size_t uncommented = 0;
  for (std::string line : lines) {
    if (line == "gate:")
      in_gate = true;
    else if (!line.starts_with(" "))
      in_gate = false;
    if (in_gate && line.starts_with("  # ")) {
      line = "  " + line.substr(4);
      ++uncommented;
    }
    text += line + "\n";
  }
  EXPECT_GE(uncommented, 11u);
  write_file(dir + "/ootci.yaml", text);
  YAML::Node doc = YAML::LoadFile(dir + "/ootci.yaml");
  EXPECT_EQ(strings(doc["gate"]["pull_request"]["labels"]), (Words{"ciflow/crcr/{device}"}));
  EXPECT_EQ(strings(doc["gate"]["push"]["refs"]), (Words{"refs/heads/main"}));
  EXPECT_EQ(doc["gate"]["base_head_command"].size(), 4u);
  CliRun r = run_ootci({"plan", "resolve", "--config", dir + "/ootci.yaml", "-o", dir + "/p.json"},
                       {{"TORCH_ROOT", torch_root().empty() ? "/nonexistent" : torch_root()}});
  // Without an upstream suite resolve fails on the missing test file, never on ootci.yaml.
  if (!torch_root().empty()) {
    EXPECT_EQ(r.code, 0) << r.err;
  }
  EXPECT_EQ(r.err.find("ootci.yaml:"), std::string::npos) << r.err;
}

// GitHub's example pull_request webhook as CRCR's client_payload.
std::string write_dispatch(const std::string& dir, const std::string& base_ref) {
  nlohmann::json webhook =
      nlohmann::json::parse(read_file(fixture_path("github-webhooks/pull_request.opened.json")));
  webhook["pull_request"]["base"]["ref"] = base_ref;
  nlohmann::json payload = {
      {"event_type", "pull_request"}, {"delivery_id", "d-1"}, {"payload", webhook}};
  std::string path = dir + "/dispatch-" + base_ref + ".json";
  write_file(path, payload.dump());
  return path;
}

// `key=value` lines, as `ootci gate` prints and appends them to $GITHUB_OUTPUT.
std::map<std::string, std::string> outputs(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const auto& line : split_lines(text)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

TEST(InitCli, GateRunsOnTheGeneratedConfig) {
  std::string dir = init_repo();
  std::map<std::string, std::string> env = {
      {"TORCH_ROOT", torch_root().empty() ? "/nonexistent" : torch_root()}};
  // The fixture's base is `master`; the generated gate builds PRs against main.
  CliRun master = run_ootci(
      {"gate", "--payload", write_dispatch(dir, "master"), "--config", dir + "/ootci.yaml"}, env);
  ASSERT_EQ(master.code, 0) << master.err;
  EXPECT_EQ(outputs(master.out)["should_build"], "false") << master.out;
  EXPECT_EQ(outputs(master.out)["pr_number"], "2") << master.out;

  std::string github_output = dir + "/github_output";
  write_file(github_output, "earlier=1\n");
  CliRun main_pr = run_ootci({"gate", "--payload", write_dispatch(dir, "main"), "--config",
                              dir + "/ootci.yaml", "--github-output", github_output},
                             env);
  ASSERT_EQ(main_pr.code, 0) << main_pr.err;
  auto out = outputs(main_pr.out);
  EXPECT_EQ(out["should_build"], "true") << main_pr.out;
  EXPECT_EQ(out["upstream_sha"], "ec26c3e57ca3a959ca5aad62de7213c562f8c821") << main_pr.out;
  EXPECT_EQ(out["event"], "pull_request");
  auto appended = outputs(read_file(github_output));
  EXPECT_EQ(appended["earlier"], "1");
  EXPECT_EQ(appended["should_build"], "true");
  EXPECT_EQ(appended["upstream_sha"], out["upstream_sha"]);
}

// The workflow's own ingest and report commands, with the values its steps give them, on a
// fixture report: what the relay would receive (--dry-run prints the body and sends nothing).
Words instantiate(const Words& command, const std::string& dir,
                  const std::map<std::string, std::string>& vars) {
  Words out;
  for (const std::string& w : command) {
    auto v = vars.find(w);
    if (v != vars.end())
      out.push_back(v->second);
    else if (w.rfind("${", 0) == 0 && w.size() > 5 && w.compare(w.size() - 4, 4, "[@]}") == 0)
      continue;  // a bash array not given (such as ingest's "${stage[@]}"): empty, so no words
    else if (w == "ootci.yaml" || w == "dispatch.json")
      out.push_back(dir + "/" + w);  // the workflow runs in the repository's root
    else
      out.push_back(w);
  }
  return out;
}

TEST(InitCli, ReportJobCommandsSendOneIdentityAndTheIngestedVerdict) {
  std::string dir = init_repo();
  YAML::Node report = YAML::LoadFile(dir + "/.github/workflows/ootci.yml")["jobs"]["report"];
  std::string job_name = report["env"]["JOB_NAME"].as<std::string>();
  EXPECT_EQ(job_name, "foo / upstream tests");
  write_file(dir + "/dispatch.json", read_file(write_dispatch(dir, "main")));
  std::map<std::string, std::string> env = {
      {"TORCH_ROOT", torch_root().empty() ? "/nonexistent" : torch_root()},
      {"GITHUB_WORKFLOW", "ootci"},
      {"GITHUB_SERVER_URL", "https://github.com"},
      {"GITHUB_REPOSITORY", "acme/foo"},
      {"GITHUB_RUN_ID", "7"},
      {"GITHUB_RUN_ATTEMPT", "1"},
      {"GITHUB_JOB", "report"},
      {"OOTCI_CHECK_RUN_ID", "4242"}};

  std::vector<size_t> ingest = steps_calling(report, {"ingest"});
  ASSERT_EQ(ingest.size(), 1u);
  std::vector<Words> ingests = ootci_commands(run_of(report["steps"][ingest[0]]));
  ASSERT_EQ(ingests.size(), 2u);  // ingest, then the ingested run's report page
  CliRun ingested = run_ootci(
      instantiate(ingests[0], dir,
                  {{"${reports[@]}", fixture_path("junit/tt-torch.tests_torch.pytest-junit.xml")},
                   {"$run", "gha-7-1"}}),
      env);
  ASSERT_EQ(ingested.code, 0) << ingested.err;
  EXPECT_EQ(split_lines(ingested.out).at(0), "gha-7-1");
  CliRun page = run_ootci(
      instantiate(ingests[1], dir, {{"$run", "gha-7-1"}, {"html-report", dir + "/html-report"}}),
      env);
  ASSERT_EQ(page.code, 0) << page.err;
  EXPECT_NE(read_file(dir + "/html-report/report.html").find("ootci run gha-7-1"),
            std::string::npos);

  auto body_of = [&](const Words& command, const std::map<std::string, std::string>& vars) {
    Words args = instantiate(command, dir, vars);
    args.push_back("--dry-run");
    CliRun r = run_ootci(args, env);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  };
  std::vector<Words> started =
      ootci_commands(run_of(report["steps"][steps_calling(report, {"report"}, "in_progress")[0]]));
  std::vector<Words> completed =
      ootci_commands(run_of(report["steps"][steps_calling(report, {"report"}, "completed")[0]]));
  ASSERT_EQ(started.size(), 1u);
  ASSERT_EQ(completed.size(), 1u);

  nlohmann::json in_progress = body_of(started[0], {{"$JOB_NAME", job_name}});
  EXPECT_EQ(in_progress["delivery_id"], "d-1");
  EXPECT_EQ(in_progress["workflow"]["status"], "in_progress");
  EXPECT_EQ(in_progress["workflow"]["conclusion"], nullptr);

  // Every leg reported: the ingested run's verdict and counts.
  nlohmann::json green = body_of(completed[0], {{"$JOB_NAME", job_name},
                                                {"$RUN", "gha-7-1"},
                                                {"$CONCLUSION", ""},
                                                {"$STARTED_AT", ""},
                                                {"$ARTIFACT_URL", "https://example.com/a"}});
  EXPECT_EQ(green["workflow"]["status"], "completed");
  EXPECT_EQ(green["workflow"]["conclusion"], "success");
  EXPECT_EQ(green["workflow"]["test_results"]["total"], 250);
  EXPECT_EQ(green["workflow"]["test_results"]["failed"], 0);
  EXPECT_EQ(green["workflow"]["started_at"], nullptr);
  EXPECT_EQ(green["workflow"]["artifact_url"], "https://example.com/a");

  // A missing leg: the results that came, but never a success.
  nlohmann::json partial = body_of(completed[0], {{"$JOB_NAME", job_name},
                                                  {"$RUN", "gha-7-1"},
                                                  {"$CONCLUSION", "failure"},
                                                  {"$STARTED_AT", ""},
                                                  {"$ARTIFACT_URL", "https://example.com/a"}});
  EXPECT_EQ(partial["workflow"]["conclusion"], "failure");
  EXPECT_EQ(partial["workflow"]["test_results"]["total"], 250);

  // Nothing ingested (the build failed): failure without results; a nightly's start time.
  nlohmann::json nothing = body_of(completed[0], {{"$JOB_NAME", job_name},
                                                  {"$RUN", ""},
                                                  {"$CONCLUSION", "failure"},
                                                  {"$STARTED_AT", "2026-01-02T04:00:00Z"},
                                                  {"$ARTIFACT_URL", "https://example.com/r"}});
  EXPECT_EQ(nothing["workflow"]["conclusion"], "failure");
  EXPECT_EQ(nothing["workflow"]["test_results"], nullptr);
  EXPECT_EQ(nothing["workflow"]["started_at"], "2026-01-02T04:00:00Z");

  // One identity for both callbacks: the HUD row is keyed by it.
  for (const auto& body : {green, partial, nothing}) {
    for (const char* key : {"name", "run_id", "run_attempt", "job_name", "check_run_id"})
      EXPECT_EQ(body["workflow"][key], in_progress["workflow"][key]) << key;
  }
  EXPECT_EQ(in_progress["workflow"]["check_run_id"], "4242");
  EXPECT_EQ(in_progress["workflow"]["job_name"], job_name);
}

}  // namespace
}  // namespace ootci
