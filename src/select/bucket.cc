#include "select/bucket.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

namespace ootci {

namespace {

constexpr size_t kQuoteChars = 160;
constexpr size_t kMaxReasonParts = 4;

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= text.size()) {
    size_t end = text.find(',', i);
    if (end == std::string::npos) end = text.size();
    if (end > i) out.push_back(text.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string runs_word(size_t n) {
  return n == 1 ? "run" : "runs";
}

// "every run" when it happened in all of them: a reason that does not change with each new run
// that agrees keeps config diffs to what changed.
std::string in_runs(size_t k, size_t n) {
  return k == n ? "every run" : fmt::format("{} of {} {}", k, n, runs_word(n));
}

// The error messages of a variant's failing results, the most telling first: a real error
// (failed/error) before an expected failure, whose message is only the plan's xfail reason.
std::vector<const TestResult*> failures_of(const VariantEvidence& v) {
  std::vector<const TestResult*> real, expected;
  for (const TestResult& r : v.results) {
    if (classify(r) != Seen::fail) continue;
    (r.outcome == "xfailed" ? expected : real).push_back(&r);
  }
  real.insert(real.end(), expected.begin(), expected.end());
  return real;
}

// An error saying the device lacks a kernel, rather than computing something wrong.
bool says_unimplemented(const TestResult& r) {
  std::string m = lower(r.message);
  return contains(r.error_class, "NotImplementedError") || contains(m, "could not run") ||
         contains(m, "not implemented") || contains(m, "switched off") ||
         contains(m, "not supported");
}

struct Counts {
  size_t pass = 0, rerun_pass = 0, fail = 0, crash = 0, hang = 0, skipped = 0, upstream_xfail = 0;
  size_t ran() const { return pass + rerun_pass + fail + crash + hang + upstream_xfail; }
};

Counts count(const VariantEvidence& v) {
  Counts c;
  for (const TestResult& r : v.results) {
    switch (classify(r)) {
      case Seen::pass:
        ++c.pass;
        break;
      case Seen::rerun_pass:
        ++c.rerun_pass;
        break;
      case Seen::fail:
        ++c.fail;
        break;
      case Seen::crash:
        ++c.crash;
        break;
      case Seen::hang:
        ++c.hang;
        break;
      case Seen::skipped:
        ++c.skipped;
        break;
      case Seen::upstream_xfail:
        ++c.upstream_xfail;
        break;
    }
  }
  return c;
}

Bucket make(TestMode mode, Cause cause, std::string text, std::string evidence = "") {
  Bucket b;
  b.mode = mode;
  b.cause = cause;
  b.label = to_string(mode);
  b.text = std::move(text);
  b.evidence = std::move(evidence);
  return b;
}

std::optional<Bucket> not_admitted(const VariantEvidence& v, const Capabilities& caps) {
  if (caps.supported_dtypes)
    for (const auto& d : split_commas(v.dtype))
      if (!caps.supported_dtypes->count(d))
        return make(TestMode::skip, Cause::not_admitted,
                    fmt::format("dtype {} is not in global.supported_dtypes", d));
  if (caps.declared_ops && !v.op.empty()) {
    std::string formatted = v.op;
    std::replace(formatted.begin(), formatted.end(), '.', '_');
    if (!caps.declared_ops->count(v.op) && !caps.declared_ops->count(formatted))
      return make(TestMode::skip, Cause::not_admitted,
                  fmt::format("op {} is not in global.supported_ops", v.op));
  }
  return std::nullopt;
}

std::string signals_of(const VariantEvidence& v) {
  std::vector<std::string> names;
  for (const TestResult& r : v.results)
    if (classify(r) == Seen::crash &&
        std::find(names.begin(), names.end(), r.error_class) == names.end())
      names.push_back(r.error_class);
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : "/") + n;
  return out;
}

std::string newest_skip_message(const VariantEvidence& v) {
  for (const TestResult& r : v.results)
    if (r.outcome == "skipped" && !r.message.empty()) return quote_error("", r.message);
  return "";
}

// A deterministic failure: which op or dtype it lacks, if the evidence says.
Bucket failing_every_time(const VariantEvidence& v, const Capabilities& caps) {
  std::vector<const TestResult*> failures = failures_of(v);
  std::string quote =
      failures.empty() ? "" : quote_error(failures[0]->error_class, failures[0]->message);
  for (const TestResult* r : failures) {
    if (!says_unimplemented(*r)) continue;
    for (const auto& op : aten_ops_in(r->message)) {
      if (caps.supported_ops.count(op)) continue;
      Bucket b = make(TestMode::xfail, Cause::missing_op,
                      fmt::format("{} is not implemented on the device", op),
                      quote_error(r->error_class, r->message));
      b.op = op;
      return b;
    }
  }
  static const std::regex kDtype(R"(not implemented for '([A-Za-z0-9]+)')");
  for (const TestResult* r : failures) {
    std::smatch m;
    if (!std::regex_search(r->message, m, kDtype)) continue;
    std::string dtype = dtype_of_scalar_type(m[1].str());
    if (dtype.empty()) dtype = m[1].str();
    Bucket b = make(TestMode::xfail, Cause::missing_dtype,
                    fmt::format("dtype {} is not supported on the device", dtype),
                    quote_error(r->error_class, r->message));
    b.dtype = dtype;
    return b;
  }
  if (!v.ops.empty() && std::all_of(v.ops.begin(), v.ops.end(), [&](const std::string& op) {
        return caps.supported_ops.count(op) > 0;
      }))
    return make(TestMode::xfail_strict, Cause::supported_ops,
                fmt::format("fails in every run although every op it calls has a device kernel "
                            "({} ops), so a pass means the bug is fixed",
                            v.ops.size()),
                quote);
  // Without a fallback, an op with no device kernel cannot have run.
  if (!caps.has_fallback && !caps.supported_ops.empty()) {
    std::vector<std::string> missing;
    for (const auto& op : v.ops)
      if (!caps.supported_ops.count(op)) missing.push_back(op);
    if (!missing.empty()) {
      Bucket b = make(TestMode::xfail, Cause::missing_op,
                      fmt::format("{} {} not implemented on the device", fmt::join(missing, ", "),
                                  missing.size() == 1 ? "is" : "are"),
                      quote);
      b.op = missing[0];
      return b;
    }
  }
  return make(TestMode::xfail, Cause::failure, "fails in every run", quote);
}

// The results that ran, newest first, as one letter each: P passed (or failed as upstream
// expects), R passed on a rerun, F failed, C crashed, H hung.
std::string sequence_of(const VariantEvidence& v) {
  std::string out;
  for (const TestResult& r : v.results) {
    switch (classify(r)) {
      case Seen::pass:
      case Seen::upstream_xfail:
        out += 'P';
        break;
      case Seen::rerun_pass:
        out += 'R';
        break;
      case Seen::fail:
        out += 'F';
        break;
      case Seen::crash:
        out += 'C';
        break;
      case Seen::hang:
        out += 'H';
        break;
      case Seen::skipped:
        break;
    }
  }
  return out;
}

// Passes in every older run, then failures in the newest ones: something changed and broke it.
// Selection never hides that: the variant stays mandatory, and rebucket lists it for attribution.
// The oldest result is the discovery's, taken with the op recorder on: a pass there alone is not
// a pass the device ever gave a real run, so it takes a second one.
std::optional<Bucket> regression(const VariantEvidence& v, const std::string& seq) {
  size_t broken = seq.find_first_not_of("FCH");
  if (broken == 0 || broken == std::string::npos) return std::nullopt;
  if (seq.find_first_not_of('P', broken) != std::string::npos) return std::nullopt;
  size_t passed = seq.size() - broken;
  if (passed < 2) return std::nullopt;
  std::string how = seq.find('C') < broken   ? "crashed the test process with " + signals_of(v)
                    : seq.find('H') < broken ? std::string("hung")
                                             : std::string("failed");
  std::string quote;
  for (const TestResult& r : v.results)
    if (Seen s = classify(r); s == Seen::fail || s == Seen::crash || s == Seen::hang) {
      quote = quote_error(r.error_class, r.message);
      break;
    }
  Bucket b = make(TestMode::mandatory_success, Cause::regressed,
                  fmt::format("passed in earlier runs, then {} in the newest: a regression "
                              "candidate, never demoted",
                              how),
                  quote);
  return b;
}

Bucket bucket_one(const VariantEvidence& v, const Capabilities& caps, size_t fixed_after) {
  if (auto b = not_admitted(v, caps)) return *b;
  Counts c = count(v);
  size_t n = c.ran();
  if (n == 0) {
    if (v.results.empty()) return make(TestMode::skip, Cause::never_ran, "no run ran it");
    return make(TestMode::skip, Cause::never_ran, "upstream skips it on this device",
                newest_skip_message(v));
  }
  std::string seq = sequence_of(v);
  if (auto b = regression(v, seq)) return *b;
  if (c.crash)
    return make(
        TestMode::skip, Cause::crash,
        fmt::format("crashes the test process with {} in {}", signals_of(v), in_runs(c.crash, n)));
  if (c.hang)
    return make(TestMode::skip, Cause::hang,
                fmt::format("hangs (Timeout) in {}", in_runs(c.hang, n)));
  if (c.fail == 0 && c.rerun_pass == 0) {
    std::string text;
    if (c.upstream_xfail == 0)
      text = "passed in every run";
    else if (c.pass == 0)
      text = "upstream expects it to fail on this device (xfailed in every run)";
    else
      text = fmt::format("passed in {} of {} {}, xfailed as upstream expects in {}", c.pass, n,
                         runs_word(n), c.upstream_xfail);
    return make(TestMode::mandatory_success, Cause::passed, text);
  }
  // Failures, then only passes in the newest runs: fixed, as rebucket would promote it.
  size_t fixed = seq.find_first_not_of('P');
  if (fixed >= fixed_after && seq.find_first_not_of('F', fixed) == std::string::npos)
    return make(TestMode::mandatory_success, Cause::passed,
                "passed in every run since it last failed");
  if (c.pass + c.rerun_pass + c.upstream_xfail > 0) {
    std::vector<const TestResult*> failures = failures_of(v);
    std::string quote =
        failures.empty() ? "" : quote_error(failures[0]->error_class, failures[0]->message);
    std::string text = c.fail == 0
                           ? std::string("passed only on a rerun")
                           : fmt::format("passed in some runs and failed in others{}",
                                         c.rerun_pass ? ", passing only on a rerun in some" : "");
    Bucket b = make(TestMode::xfail, Cause::flaky, text, quote);
    b.label = "flaky";
    return b;
  }
  return failing_every_time(v, caps);
}

// A failure with no named cause, in a test whose other dtypes pass for the same op: the dtype
// is what fails.
void mark_dtype_specific(const BaseEvidence& base, std::vector<Bucket>& buckets) {
  std::map<std::string, std::vector<size_t>> by_op;
  for (size_t i = 0; i < base.variants.size(); ++i)
    if (!buckets[i].neutral()) by_op[base.variants[i].op].push_back(i);
  for (const auto& [op, indices] : by_op) {
    std::map<std::string, std::vector<size_t>> by_dtype;
    for (size_t i : indices) by_dtype[base.variants[i].dtype].push_back(i);
    if (by_dtype.size() < 2) continue;
    for (const auto& [dtype, members] : by_dtype) {
      if (dtype.empty() || contains(dtype, ",")) continue;
      bool all_fail = std::all_of(members.begin(), members.end(),
                                  [&](size_t i) { return buckets[i].cause == Cause::failure; });
      bool others_pass = false;
      for (const auto& [other, others] : by_dtype)
        if (other != dtype)
          for (size_t i : others) others_pass |= buckets[i].cause == Cause::passed;
      if (!all_fail || !others_pass) continue;
      for (size_t i : members) {
        Bucket& b = buckets[i];
        b.cause = Cause::dtype_specific;
        b.dtype = dtype;
        b.text = op.empty() ? fmt::format("fails only for dtype {}; the other dtypes pass", dtype)
                            : fmt::format("fails only for dtype {} of op {}; the other dtypes pass",
                                          dtype, op);
      }
    }
  }
}

// One reason for several variants sharing a mode: their causes, most common first.
struct Summary {
  std::string label;
  std::string body;  // causes and the first one's evidence
};

Summary summarize(const std::vector<const Bucket*>& buckets, TestMode mode) {
  struct Part {
    std::string label, text, evidence;
    size_t count = 0, first = 0;
  };
  std::vector<Part> parts;
  std::vector<std::string> missing_ops;
  size_t missing_count = 0, missing_first = 0;
  std::string missing_label, missing_evidence;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const Bucket& b = *buckets[i];
    if (b.cause == Cause::missing_op && !b.op.empty()) {
      // Every missing op is named, so capability-driven admission can find them in the reason.
      for (const auto& op : aten_ops_in(b.text))
        if (std::find(missing_ops.begin(), missing_ops.end(), op) == missing_ops.end())
          missing_ops.push_back(op);
      if (missing_count++ == 0) {
        missing_first = i;
        missing_label = b.label;
        missing_evidence = b.evidence;
      }
      continue;
    }
    auto it = std::find_if(parts.begin(), parts.end(),
                           [&](const Part& p) { return p.label == b.label && p.text == b.text; });
    if (it == parts.end()) {
      parts.push_back({b.label, b.text, b.evidence, 1, i});
    } else {
      ++it->count;
    }
  }
  if (missing_count) {
    std::sort(missing_ops.begin(), missing_ops.end());
    parts.push_back(
        {missing_label,
         fmt::format("{} {} not implemented on the device", fmt::join(missing_ops, ", "),
                     missing_ops.size() == 1 ? "is" : "are"),
         missing_evidence, missing_count, missing_first});
  }
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) {
    if (a.count != b.count) return a.count > b.count;
    return a.first < b.first;
  });
  Summary s;
  s.label = parts.empty() ? to_string(mode) : parts[0].label;
  for (const Part& p : parts)
    if (p.label != s.label) s.label = to_string(mode);
  if (parts.size() == 1) {
    s.body = parts[0].text;
  } else {
    for (size_t i = 0; i < parts.size() && i < kMaxReasonParts; ++i) {
      const Part& p = parts[i];
      s.body +=
          fmt::format("{}{}{} ({} {})", i ? "; " : "", p.label == s.label ? "" : p.label + ": ",
                      p.text, p.count, p.count == 1 ? "variant" : "variants");
    }
    if (parts.size() > kMaxReasonParts)
      s.body += fmt::format("; {} more causes", parts.size() - kMaxReasonParts);
  }
  if (!parts.empty() && !parts[0].evidence.empty()) s.body += " (" + parts[0].evidence + ")";
  return s;
}

std::string join_reason(const std::string& label, const std::string& body) {
  if (label.empty()) return body;
  return body.empty() ? label : label + ": " + body;
}

}  // namespace

std::string Bucket::reason() const {
  std::string body = text;
  if (!evidence.empty()) body += (body.empty() ? "" : " ") + ("(" + evidence + ")");
  return join_reason(label, body);
}

Seen classify(const TestResult& r) {
  if (r.outcome == "passed") return r.flaky ? Seen::rerun_pass : Seen::pass;
  if (r.outcome == "xpassed") return Seen::pass;
  if (r.outcome == "failed" || r.outcome == "error") {
    if (r.error_class == "XPASS(strict)") return Seen::pass;
    if (r.error_class.rfind("SIG", 0) == 0) return Seen::crash;
    if (r.error_class == "Timeout") return Seen::hang;
    return Seen::fail;
  }
  if (r.outcome == "xfailed")
    return r.mode == "xfail" || r.mode == "xfail_strict" ? Seen::fail : Seen::upstream_xfail;
  return Seen::skipped;
}

std::vector<Bucket> bucket_variants(const BaseEvidence& base, const Capabilities& caps,
                                    size_t fixed_after) {
  std::vector<Bucket> out;
  out.reserve(base.variants.size());
  for (const auto& v : base.variants) out.push_back(bucket_one(v, caps, fixed_after));
  mark_dtype_specific(base, out);
  return out;
}

std::vector<NameDecision> represent_base(const BaseEvidence& base,
                                         const std::vector<Bucket>& buckets) {
  std::vector<size_t> active;
  for (size_t i = 0; i < buckets.size(); ++i)
    if (!buckets[i].neutral()) active.push_back(i);

  NameDecision head;
  head.name = base.base;
  head.base = base.base;
  if (active.empty()) {
    std::vector<const Bucket*> all;
    for (const auto& b : buckets) all.push_back(&b);
    head.mode = TestMode::skip;
    Summary s = summarize(all, TestMode::skip);
    head.reason = join_reason(s.label, s.body);
    return {head};
  }

  std::map<TestMode, size_t> per_mode;
  for (size_t i : active) ++per_mode[buckets[i].mode];
  TestMode base_mode = per_mode.begin()->first;
  for (const auto& [mode, n] : per_mode)
    if (n > per_mode.at(base_mode)) base_mode = mode;
  head.mode = base_mode;

  // A dtype (then an op) all of whose variants are skipped is excluded, Spyre's way: the
  // variants are never created. Only when the test itself runs: a skipped test needs no edits.
  std::set<size_t> excluded;
  if (base_mode != TestMode::skip) {
    std::map<std::string, std::vector<size_t>> by_dtype, by_op;
    for (size_t i : active) {
      for (const auto& d : split_commas(base.variants[i].dtype)) by_dtype[d].push_back(i);
      if (!base.variants[i].op.empty()) by_op[base.variants[i].op].push_back(i);
    }
    auto all_skip = [&](const std::vector<size_t>& members) {
      return std::all_of(members.begin(), members.end(),
                         [&](size_t i) { return buckets[i].mode == TestMode::skip; });
    };
    for (const auto& [dtype, members] : by_dtype) {
      if (!all_skip(members)) continue;
      head.dtypes_exclude.push_back(dtype);
      excluded.insert(members.begin(), members.end());
    }
    for (const auto& [op, members] : by_op) {
      bool adds =
          std::any_of(members.begin(), members.end(), [&](size_t i) { return !excluded.count(i); });
      if (!all_skip(members) || !adds) continue;
      head.ops_exclude.push_back(op);
      excluded.insert(members.begin(), members.end());
    }
  }

  std::vector<NameDecision> out;
  std::vector<const Bucket*> kept, dropped;
  for (size_t i : active) {
    if (excluded.count(i)) {
      dropped.push_back(&buckets[i]);
    } else if (buckets[i].mode == base_mode) {
      kept.push_back(&buckets[i]);
    } else {
      NameDecision d;
      d.variant = base.variants[i].name;
      d.name = variant_config_name(base.base, d.variant);
      d.base = base.base;
      d.mode = buckets[i].mode;
      d.reason = buckets[i].reason();
      out.push_back(std::move(d));
    }
  }
  Summary s = summarize(kept, base_mode);
  head.reason = join_reason(s.label, s.body);
  if (!dropped.empty()) {
    std::vector<std::string> what;
    if (!head.dtypes_exclude.empty())
      what.push_back(fmt::format("{} {}", head.dtypes_exclude.size() == 1 ? "dtype" : "dtypes",
                                 fmt::join(head.dtypes_exclude, ", ")));
    if (!head.ops_exclude.empty())
      what.push_back(fmt::format("{} {}", head.ops_exclude.size() == 1 ? "op" : "ops",
                                 fmt::join(head.ops_exclude, ", ")));
    Summary ex = summarize(dropped, TestMode::skip);
    head.reason += fmt::format("; excluded {}: {}", fmt::join(what, " and "), ex.body);
  }
  out.insert(out.begin(), std::move(head));
  return out;
}

std::string dtype_of_scalar_type(const std::string& t) {
  static const std::map<std::string, std::string> kNames = {{"Bool", "bool"},
                                                            {"Byte", "uint8"},
                                                            {"Char", "int8"},
                                                            {"Short", "int16"},
                                                            {"Int", "int32"},
                                                            {"Long", "int64"},
                                                            {"Half", "float16"},
                                                            {"Float", "float32"},
                                                            {"Double", "float64"},
                                                            {"BFloat16", "bfloat16"},
                                                            {"ComplexHalf", "complex32"},
                                                            {"ComplexFloat", "complex64"},
                                                            {"ComplexDouble", "complex128"},
                                                            {"UInt16", "uint16"},
                                                            {"UInt32", "uint32"},
                                                            {"UInt64", "uint64"}};
  auto it = kNames.find(t);
  return it == kNames.end() ? "" : it->second;
}

std::vector<std::string> aten_ops_in(const std::string& text) {
  static const std::regex kOp(R"(aten::[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?)");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kOp); it != std::sregex_iterator();
       ++it) {
    std::string op = it->str();
    if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
  }
  return out;
}

std::string quote_error(const std::string& error_class, const std::string& message) {
  size_t start = message.find_first_not_of(" \t\r\n");
  std::string line = start == std::string::npos ? "" : message.substr(start);
  line = line.substr(0, line.find('\n'));
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  if (line.size() > kQuoteChars) {
    size_t cut = kQuoteChars;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
    line = line.substr(0, cut) + "...";
  }
  if (error_class.empty() || line.rfind(error_class, 0) == 0) return line;
  return line.empty() ? error_class : error_class + ": " + line;
}

}  // namespace ootci
