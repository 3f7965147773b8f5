#include "adapt/bucket.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

#include "base/text.h"
#include "discover/discover.h"
#include "plan/dtype_names.h"

// Evidence -> buckets: every variant's mode and the reason for it, from its recorded results
// (docs/select.md, "Buckets"). bucket_entries.cc turns buckets into config entries.
namespace ootci {

namespace {

constexpr size_t kQuoteChars = 160;

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
    if (classify(r) != Seen::kFail) continue;
    (r.outcome == Outcome::kXfailed ? expected : real).push_back(&r);
  }
  real.insert(real.end(), expected.begin(), expected.end());
  return real;
}

struct Counts {
  size_t pass = 0, rerun_pass = 0, fail = 0, crash = 0, hang = 0, skipped = 0, upstream_xfail = 0;
  size_t ran() const { return pass + rerun_pass + fail + crash + hang + upstream_xfail; }
};

Counts count(const VariantEvidence& v) {
  Counts c;
  for (const TestResult& r : v.results) {
    switch (classify(r)) {
      case Seen::kPass:
        ++c.pass;
        break;
      case Seen::kRerunPass:
        ++c.rerun_pass;
        break;
      case Seen::kFail:
        ++c.fail;
        break;
      case Seen::kCrash:
        ++c.crash;
        break;
      case Seen::kHang:
        ++c.hang;
        break;
      case Seen::kSkipped:
        ++c.skipped;
        break;
      case Seen::kUpstreamXfail:
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
    for (const auto& d : split(v.dtype, ','))
      if (!caps.supported_dtypes->count(d))
        return make(TestMode::kSkip, Cause::kNotAdmitted,
                    fmt::format("dtype {} is not in global.supported_dtypes", d));
  if (caps.declared_ops && !v.op.empty()) {
    if (!caps.declared_ops->count(v.op) && !caps.declared_ops->count(formatted_op(v.op)))
      return make(TestMode::kSkip, Cause::kNotAdmitted,
                  fmt::format("op {} is not in global.supported_ops", v.op));
  }
  return std::nullopt;
}

std::string signals_of(const VariantEvidence& v) {
  std::vector<std::string> names;
  for (const TestResult& r : v.results)
    if (classify(r) == Seen::kCrash &&
        std::find(names.begin(), names.end(), r.error_class) == names.end())
      names.push_back(r.error_class);
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : "/") + n;
  return out;
}

std::string newest_skip_message(const VariantEvidence& v) {
  for (const TestResult& r : v.results)
    if (r.outcome == Outcome::kSkipped && !r.message.empty()) return quote_error("", r.message);
  return "";
}

// Failures that are all torch's numeric mismatch (an xfailed result carries only the plan's
// reason, so it is left out), judged against the dtype's reference precision. Passes in other
// runs do not make it flaky: a run under the precision an earlier proposal wrote passes, and the
// same failures then give the same proposal again.
std::optional<Bucket> numeric_mismatch(const VariantEvidence& v, const TolerancePolicy& policy,
                                       bool every_run) {
  std::string dtype = unambiguous_dtype(v);
  if (dtype.empty()) return std::nullopt;
  std::vector<Mismatch> found;
  const TestResult* first = nullptr;
  for (const TestResult* r : failures_of(v)) {
    if (r->outcome == Outcome::kXfailed) continue;
    std::optional<Mismatch> m = parse_mismatch(r->message);
    if (!m) return std::nullopt;
    found.push_back(*m);
    if (!first) first = r;
  }
  std::optional<ToleranceVerdict> verdict = judge_tolerance(found, dtype, policy, every_run);
  if (!verdict) return std::nullopt;
  std::string quote = quote_error(first->error_class, first->message);
  if (!verdict->within) return make(TestMode::kXfail, Cause::kNumeric, verdict->text, quote);
  Bucket b = make(TestMode::kMandatorySuccess, Cause::kTolerance, verdict->text, quote);
  b.dtype = dtype;
  b.precision = verdict->proposed;
  return b;
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
      Bucket b = make(TestMode::kXfail, Cause::kMissingOp,
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
    Bucket b = make(TestMode::kXfail, Cause::kMissingDtype,
                    fmt::format("dtype {} is not supported on the device", dtype),
                    quote_error(r->error_class, r->message));
    b.dtype = dtype;
    return b;
  }
  if (!v.ops.empty() && std::all_of(v.ops.begin(), v.ops.end(), [&](const std::string& op) {
        return caps.supported_ops.count(op) > 0;
      }))
    return make(TestMode::kXfailStrict, Cause::kSupportedOps,
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
      Bucket b = make(TestMode::kXfail, Cause::kMissingOp,
                      fmt::format("{} {} not implemented on the device", fmt::join(missing, ", "),
                                  missing.size() == 1 ? "is" : "are"),
                      quote);
      b.op = missing[0];
      return b;
    }
  }
  return make(TestMode::kXfail, Cause::kFailure, "fails in every run", quote);
}

// The results that ran, newest first, as classify() reads them; an upstream xfail counts as a pass
// (it did what upstream expects), a skip did not run.
std::vector<Seen> sequence_of(const VariantEvidence& v) {
  std::vector<Seen> out;
  for (const TestResult& r : v.results) {
    Seen s = classify(r);
    if (s == Seen::kSkipped) continue;
    out.push_back(s == Seen::kUpstreamXfail ? Seen::kPass : s);
  }
  return out;
}

bool is_broken(Seen s) {
  return s == Seen::kFail || s == Seen::kCrash || s == Seen::kHang;
}

// Passes in every older run, then failures in the newest ones: something changed and broke it.
// Selection never hides that: the variant stays mandatory, and rebucket lists it for attribution.
// The oldest result is the discovery's, taken with the op recorder on: a pass there alone is not
// a pass the device ever gave a real run, so it takes a second one.
std::optional<Bucket> regression(const VariantEvidence& v, const std::vector<Seen>& seq) {
  auto broken = std::find_if_not(seq.begin(), seq.end(), is_broken);  // the newest not broken
  if (broken == seq.begin() || broken == seq.end()) return std::nullopt;
  if (std::any_of(broken, seq.end(), [](Seen s) { return s != Seen::kPass; })) return std::nullopt;
  if (seq.end() - broken < 2) return std::nullopt;
  std::string how = std::find(seq.begin(), broken, Seen::kCrash) != broken
                        ? "crashed the test process with " + signals_of(v)
                    : std::find(seq.begin(), broken, Seen::kHang) != broken ? std::string("hung")
                                                                            : std::string("failed");
  std::string quote;
  for (const TestResult& r : v.results)
    if (Seen s = classify(r); s == Seen::kFail || s == Seen::kCrash || s == Seen::kHang) {
      quote = quote_error(r.error_class, r.message);
      break;
    }
  Bucket b = make(TestMode::kMandatorySuccess, Cause::kRegressed,
                  fmt::format("passed in earlier runs, then {} in the newest: a regression "
                              "candidate, never demoted",
                              how),
                  quote);
  return b;
}

Bucket bucket_one(const VariantEvidence& v, const Capabilities& caps, size_t fixed_after,
                  const TolerancePolicy& policy) {
  if (auto b = not_admitted(v, caps)) return *b;
  Counts c = count(v);
  size_t n = c.ran();
  if (n == 0) {
    if (v.results.empty()) return make(TestMode::kSkip, Cause::kNeverRan, "no run ran it");
    return make(TestMode::kSkip, Cause::kNeverRan, "upstream skips it on this device",
                newest_skip_message(v));
  }
  std::vector<Seen> seq = sequence_of(v);
  if (auto b = regression(v, seq)) return *b;
  if (c.crash)
    return make(
        TestMode::kSkip, Cause::kCrash,
        fmt::format("crashes the test process with {} in {}", signals_of(v), in_runs(c.crash, n)));
  if (c.hang)
    return make(TestMode::kSkip, Cause::kHang,
                fmt::format("hangs (Timeout) in {}", in_runs(c.hang, n)));
  if (c.fail == 0 && c.rerun_pass == 0) {
    // Its pass holds only for the values it draws: a device that is wrong for others would be
    // green by the luck of the draw, and red once anything moves the inputs.
    if (c.pass > 0 && input_probe_failed(v.input_probe))
      return make(TestMode::kXfail, Cause::kInputDependent,
                  fmt::format("passed in every run, but {}: it passes only for the values it "
                              "draws (discovery's input probe)",
                              v.input_probe));
    std::string text;
    if (c.upstream_xfail == 0)
      text = "passed in every run";
    else if (c.pass == 0)
      text = "upstream expects it to fail on this device (xfailed in every run)";
    else
      text = fmt::format("passed in {} of {} {}, xfailed as upstream expects in {}", c.pass, n,
                         runs_word(n), c.upstream_xfail);
    return make(TestMode::kMandatorySuccess, Cause::kPassed, text);
  }
  if (c.fail > 0)
    if (auto b = numeric_mismatch(v, policy, c.fail == n)) return *b;
  // Failures, then only passes in the newest runs: fixed, as rebucket would promote it.
  auto fixed = std::find_if(seq.begin(), seq.end(), [](Seen s) { return s != Seen::kPass; });
  if ((fixed == seq.end() || size_t(fixed - seq.begin()) >= fixed_after) &&
      std::all_of(fixed, seq.end(), [](Seen s) { return s == Seen::kFail; }))
    return make(TestMode::kMandatorySuccess, Cause::kPassed,
                "passed in every run since it last failed");
  if (c.pass + c.rerun_pass + c.upstream_xfail > 0) {
    std::vector<const TestResult*> failures = failures_of(v);
    std::string quote =
        failures.empty() ? "" : quote_error(failures[0]->error_class, failures[0]->message);
    std::string text = c.fail == 0
                           ? std::string("passed only on a rerun")
                           : fmt::format("passed in some runs and failed in others{}",
                                         c.rerun_pass ? ", passing only on a rerun in some" : "");
    Bucket b = make(TestMode::kXfail, Cause::kFlaky, text, quote);
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
                                  [&](size_t i) { return buckets[i].cause == Cause::kFailure; });
      bool others_pass = false;
      for (const auto& [other, others] : by_dtype)
        if (other != dtype)
          for (size_t i : others) others_pass |= buckets[i].cause == Cause::kPassed;
      if (!all_fail || !others_pass) continue;
      for (size_t i : members) {
        Bucket& b = buckets[i];
        b.cause = Cause::kDtypeSpecific;
        b.dtype = dtype;
        b.text = op.empty() ? fmt::format("fails only for dtype {}; the other dtypes pass", dtype)
                            : fmt::format("fails only for dtype {} of op {}; the other dtypes pass",
                                          dtype, op);
      }
    }
  }
}

}  // namespace

std::string join_reason(const std::string& label, const std::string& body) {
  if (label.empty()) return body;
  return body.empty() ? label : label + ": " + body;
}

std::string Bucket::reason() const {
  std::string body = text;
  if (!evidence.empty()) body += (body.empty() ? "" : " ") + ("(" + evidence + ")");
  return join_reason(label, body);
}

std::vector<Bucket> bucket_variants(const BaseEvidence& base, const Capabilities& caps,
                                    size_t fixed_after, const TolerancePolicy& tolerance) {
  std::vector<Bucket> out;
  out.reserve(base.variants.size());
  for (const auto& v : base.variants) out.push_back(bucket_one(v, caps, fixed_after, tolerance));
  mark_dtype_specific(base, out);
  return out;
}

std::vector<std::string> aten_ops_in(const std::string& text) {
  // The schema's spelling (aten::add.Tensor), or Python's OpOverload (aten.add.Tensor,
  // aten.view.default), which a backend written in Python puts in its errors.
  static const std::regex kOp(
      R"(aten::[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?|aten\.([A-Za-z0-9_]+)\.([A-Za-z0-9_]+))");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kOp); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    std::string op = !m[2].matched       ? m.str()
                     : m[3] == "default" ? "aten::" + m[2].str()
                                         : "aten::" + m[2].str() + "." + m[3].str();
    if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
  }
  return out;
}

std::string quote_error(const std::string& error_class, const std::string& message) {
  std::string line = first_line(message, kQuoteChars);
  if (error_class.empty() || line.rfind(error_class, 0) == 0) return line;
  return line.empty() ? error_class : error_class + ": " + line;
}

}  // namespace ootci
