#include "adapt/agent_hook.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/atomic_file.h"
#include "base/enum_names.h"
#include "base/error.h"
#include "base/scratch_dir.h"
#include "base/subprocess.h"
#include "base/text.h"

namespace ootci {

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxSourceChars = 20000;
constexpr size_t kMaxMessageChars = 2000;

// The newest real error of a variant, else its newest expected failure.
const TestResult* newest_failure(const VariantEvidence& v) {
  const TestResult* expected = nullptr;
  for (const TestResult& r : v.results) {
    Seen s = classify(r);
    if (s == Seen::kCrash || s == Seen::kHang ||
        (s == Seen::kFail && r.outcome != Outcome::kXfailed))
      return &r;
    if (s == Seen::kFail && !expected) expected = &r;
  }
  return expected;
}

// What the agent reads of a result: classify()'s reading, as a word.
std::string outcome_word(const TestResult& r) {
  static constexpr EnumName<Seen> kWords[] = {
      {Seen::kPass, "passed"},           {Seen::kRerunPass, "passed_on_rerun"},
      {Seen::kFail, "failed"},           {Seen::kCrash, "crashed"},
      {Seen::kHang, "timeout"},          {Seen::kSkipped, "skipped"},
      {Seen::kUpstreamXfail, "xfailed"},
  };
  return std::string(enum_text(kWords, classify(r)));
}

// Why the evidence forbids `mode` for the variant, or "" when it allows it: mandatory_success
// needs a pass in every run that ran it (and at least one), xfail and xfail_strict need a test
// process that survives, xfail_strict needs no pass in every run. Skip is always allowed.
std::string forbidden(TestMode mode, const VariantEvidence& v) {
  if (mode == TestMode::kSkip) return "";
  size_t ran = 0, passed = 0, failed = 0, crashed = 0, hung = 0, rerun = 0;
  std::string crash_class;
  for (const TestResult& r : v.results) {
    switch (classify(r)) {
      case Seen::kPass:
      case Seen::kUpstreamXfail:
        ++passed;
        break;
      case Seen::kRerunPass:
        ++rerun;
        break;
      case Seen::kFail:
        ++failed;
        break;
      case Seen::kCrash:
        ++crashed;
        if (crash_class.empty()) crash_class = r.error_class;
        break;
      case Seen::kHang:
        ++hung;
        break;
      case Seen::kSkipped:
        continue;
    }
    ++ran;
  }
  std::string runs = fmt::format("of {} {}", ran, ran == 1 ? "run" : "runs");
  if (crashed)
    return fmt::format("{} crashed the test process with {} in {} {}", v.test_id, crash_class,
                       crashed, runs);
  if (hung) return fmt::format("{} timed out in {} {}", v.test_id, hung, runs);
  if (mode == TestMode::kMandatorySuccess) {
    if (ran == 0) return fmt::format("{} never ran on the device", v.test_id);
    if (failed) {
      const TestResult* f = newest_failure(v);
      return fmt::format("{} failed in {} {} ({})", v.test_id, failed, runs,
                         quote_error(f->error_class, f->message));
    }
    if (rerun) return fmt::format("{} passed only on a rerun in {} {}", v.test_id, rerun, runs);
  }
  if (mode == TestMode::kXfailStrict && ran > 0 && passed == ran)
    return fmt::format("{} passed in {} {}, so a strict xfail would fail the run", v.test_id,
                       passed, runs);
  return "";
}

// "class Name" / "def name(" after the indentation, without a regex per line.
bool declares(const std::string& line, const std::string& keyword, const std::string& name) {
  size_t n = line.find_first_not_of(" \t");
  if (n == std::string::npos) return false;
  if (keyword == "def" && line.compare(n, 6, "async ") == 0) n = line.find_first_not_of(' ', n + 6);
  if (n == std::string::npos || line.compare(n, keyword.size() + 1, keyword + " ") != 0)
    return false;
  n = line.find_first_not_of(' ', n + keyword.size() + 1);
  if (n == std::string::npos || line.compare(n, name.size(), name) != 0) return false;
  n += name.size();
  if (keyword == "def") {
    n = line.find_first_not_of(' ', n);
    return n != std::string::npos && line[n] == '(';
  }
  return n == line.size() || !(std::isalnum(static_cast<unsigned char>(line[n])) || line[n] == '_');
}

// The first key of a proposal that is unknown or not a string, as a rejection ("" when none).
std::string bad_proposal_key(const nlohmann::json& proposal) {
  for (const auto& [key, value] : proposal.items()) {
    if (key != "base" && key != "op" && key != "dtype" && key != "mode" && key != "reason")
      return fmt::format("unknown key '{}'", key);
    if (!value.is_string()) return fmt::format("{} must be a string", key);
  }
  return "";
}

// The variants of `base` a proposal names: of its op (either spelling) and dtype, when given.
std::vector<size_t> proposed_variants(const BaseEvidence& base, const std::string& op,
                                      const std::string& dtype) {
  std::vector<size_t> selected;
  for (size_t v = 0; v < base.variants.size(); ++v) {
    const VariantEvidence& x = base.variants[v];
    std::vector<std::string> dtypes = split(x.dtype, ',');
    if (!op.empty() && op != x.op && op != formatted_op(x.op)) continue;
    if (!dtype.empty() && std::find(dtypes.begin(), dtypes.end(), dtype) == dtypes.end()) continue;
    selected.push_back(v);
  }
  return selected;
}

}  // namespace

std::string python_test_source(const std::string& file_text, const std::string& cls,
                               const std::string& method) {
  std::vector<std::string> lines = ootci::lines(file_text);
  size_t from = 0, to = lines.size();
  if (!cls.empty()) {
    size_t c = 0;
    while (c < lines.size() && !declares(lines[c], "class", cls)) ++c;
    if (c == lines.size()) return "";
    size_t class_indent = indent_of(lines[c]);
    from = c + 1;
    to = from;
    while (to < lines.size() && (is_blank(lines[to]) || starts_after_indent(lines[to], '#') ||
                                 indent_of(lines[to]) > class_indent))
      ++to;
  }
  size_t d = from;
  while (d < to && !declares(lines[d], "def", method)) ++d;
  if (d == to) return "";
  size_t def_indent = indent_of(lines[d]);
  // Decorators above, including the continuation lines of multi-line ones.
  size_t start = d;
  for (size_t j = d; j-- > from;) {
    if (is_blank(lines[j])) break;
    size_t in = indent_of(lines[j]);
    if (in == def_indent && starts_after_indent(lines[j], '@')) {
      start = j;
      continue;
    }
    if (in > def_indent || starts_after_indent(lines[j], ')')) continue;
    break;
  }
  size_t end = d + 1;
  while (end < to && (is_blank(lines[end]) || starts_after_indent(lines[end], '#') ||
                      indent_of(lines[end]) > def_indent))
    ++end;
  while (end > d + 1 && (is_blank(lines[end - 1]) || starts_after_indent(lines[end - 1], '#')))
    --end;
  std::string out;
  for (size_t i = start; i < end; ++i) out += lines[i] + "\n";
  if (out.size() > kMaxSourceChars) out = out.substr(0, kMaxSourceChars) + "...\n";
  return out;
}

nlohmann::json agent_bundle(const FileEvidence& evidence,
                            const std::vector<std::vector<Bucket>>& buckets,
                            const std::string& upstream_text, const Capabilities& caps) {
  nlohmann::json tests = nlohmann::json::array();
  for (size_t b = 0; b < evidence.bases.size(); ++b) {
    const BaseEvidence& base = evidence.bases[b];
    auto [cls, method] = split_base(base.base);
    nlohmann::json variants = nlohmann::json::array();
    for (size_t i = 0; i < base.variants.size(); ++i) {
      const VariantEvidence& v = base.variants[i];
      nlohmann::json outcomes = nlohmann::json::array();
      for (const TestResult& r : v.results) outcomes.push_back(outcome_word(r));
      const TestResult* f = newest_failure(v);
      std::string message = f ? f->message : "";
      if (message.size() > kMaxMessageChars) message = message.substr(0, kMaxMessageChars);
      variants.push_back(
          {{"test_id", v.test_id},
           {"op", v.op},
           {"dtype", v.dtype},
           {"outcomes", outcomes},
           {"error_class", f ? f->error_class : ""},
           {"message", message},
           {"ops", v.ops},
           {"proposed",
            {{"mode", to_string(buckets[b][i].mode)}, {"reason", buckets[b][i].reason()}}}});
    }
    tests.push_back({{"base", base.base},
                     {"test_id", evidence.relpath + "::" + base.base},
                     {"source", python_test_source(upstream_text, cls, method)},
                     {"variants", variants}});
  }
  nlohmann::json dtypes = nullptr;
  if (caps.supported_dtypes) dtypes = *caps.supported_dtypes;
  return {{"version", kAgentBundleVersion},
          {"file", evidence.relpath},
          {"tests", tests},
          {"supported_ops", caps.supported_ops},
          {"has_fallback", caps.has_fallback},
          {"supported_dtypes", dtypes}};
}

nlohmann::json run_agent(const std::vector<std::string>& argv, const nlohmann::json& bundle,
                         int timeout_s) {
  if (argv.empty()) throw Error("select.agent_command is empty");
  ScratchDir scratch("agent");
  std::string bundle_path = scratch.path() + "/bundle.json";
  write_file_atomically(bundle_path, bundle.dump());
  SpawnOptions o;
  o.argv = argv;
  o.input_file = bundle_path;
  o.die_with_parent = true;
  std::string cmd = argv.front();
  CapturedRun r = run_captured(o, int64_t{timeout_s} * 1000);
  if (r.timed_out)
    throw Error(fmt::format("select.agent_command {}: no answer within {} s", cmd, timeout_s));
  std::string err = tail(r.err, 500);
  if (!r.ok())
    throw Error(fmt::format(
        "select.agent_command {} failed ({}){}", cmd,
        r.exit_code > 128 ? std::string("killed by a signal") : fmt::format("exit {}", r.exit_code),
        err.empty() ? "" : ": " + err));
  const std::string& out = r.out;
  nlohmann::json answer = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object())
    throw Error(
        fmt::format("select.agent_command {} printed no JSON object: {}", cmd, tail(out, 200)));
  return answer;
}

std::vector<AgentVerdict> apply_agent_answer(const nlohmann::json& answer,
                                             const FileEvidence& evidence,
                                             std::vector<std::vector<Bucket>>& buckets) {
  if (!answer.is_object() || !answer.contains("proposals") || !answer["proposals"].is_array())
    throw Error("the agent's answer has no \"proposals\" list");
  std::vector<AgentVerdict> out;
  const nlohmann::json& proposals = answer["proposals"];
  for (size_t i = 0; i < proposals.size(); ++i) {
    const nlohmann::json& p = proposals[i];
    AgentVerdict verdict;
    verdict.where = fmt::format("proposals[{}]", i);
    auto reject = [&](std::string why) {
      verdict.why = std::move(why);
      out.push_back(verdict);
    };
    if (!p.is_object()) {
      reject("expected an object");
      continue;
    }
    if (std::string bad = bad_proposal_key(p); !bad.empty()) {
      reject(bad);
      continue;
    }
    std::string base = p.value("base", ""), op = p.value("op", ""), dtype = p.value("dtype", "");
    std::string mode_name = p.value("mode", ""), reason = p.value("reason", "");
    verdict.summary = base + (op.empty() ? "" : " op=" + op) +
                      (dtype.empty() ? "" : " dtype=" + dtype) + " -> " + mode_name;
    std::optional<TestMode> mode = parse_test_mode(mode_name);
    auto b = std::find_if(evidence.bases.begin(), evidence.bases.end(),
                          [&](const BaseEvidence& x) { return x.base == base; });
    if (base.empty()) {
      reject("missing base");
      continue;
    }
    if (b == evidence.bases.end()) {
      reject(fmt::format("no test {} in {}", base, evidence.relpath));
      continue;
    }
    if (!mode) {
      reject(
          fmt::format("unknown mode '{}' (expected mandatory_success, xfail, xfail_strict or skip)",
                      mode_name));
      continue;
    }
    if (reason.empty()) {
      reject("missing reason");
      continue;
    }
    std::vector<size_t> selected = proposed_variants(*b, op, dtype);
    if (selected.empty()) {
      reject(fmt::format("selects no variant of {}", base));
      continue;
    }
    std::string why;
    for (size_t v : selected)
      if (why = forbidden(*mode, b->variants[v]); !why.empty()) break;
    if (!why.empty()) {
      reject(fmt::format("{} is not allowed: {}", to_string(*mode), why));
      continue;
    }
    size_t index = static_cast<size_t>(b - evidence.bases.begin());
    for (size_t v : selected) {
      Bucket& bucket = buckets[index][v];
      bucket = Bucket{};
      bucket.mode = *mode;
      bucket.cause = Cause::kAgent;
      bucket.label = "agent";
      bucket.text = reason;
    }
    verdict.accepted = true;
    verdict.variants = selected.size();
    out.push_back(verdict);
  }
  return out;
}

}  // namespace ootci
