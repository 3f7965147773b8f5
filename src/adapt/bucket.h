#pragma once
// Buckets from execution evidence (docs/select.md, "Buckets"): every variant of an upstream test
// gets mandatory_success, xfail, xfail_strict or skip with a reason, and each config name
// ("Class::method") gets the config entries that reproduce those buckets when the config runs.
// Two algorithms: evidence -> buckets (bucket.cc), buckets -> config entries (bucket_entries.cc).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adapt/decisions.h"
#include "adapt/tolerance.h"
#include "discover/variant_evidence.h"
#include "plan/suite_config.h"

namespace ootci {

// What the device can do, as far as selection knows.
struct Capabilities {
  std::set<std::string> supported_ops;  // aten ops with a device kernel (code evidence)
  bool has_fallback = false;            // a boxed fallback serves every other op
  // global.supported_dtypes / supported_ops of the existing configs (nullopt: not declared, no
  // filter). Variants outside them are never created, so their buckets do not matter.
  std::optional<std::set<std::string>> supported_dtypes;
  std::optional<std::set<std::string>> declared_ops;  // OpInfo names
};

// Why a variant is in its bucket.
enum class Cause {
  kPassed,          // passed in every run that ran it (or in the newest, after failing before)
  kRegressed,       // passed in the older runs, failed in the newest: kept mandatory
  kNeverRan,        // upstream skipped it every time, or no run ran it
  kNotAdmitted,     // outside global.supported_dtypes / supported_ops: never created
  kCrash,           // killed the test process (SIG*)
  kHang,            // timed out
  kFlaky,           // passed and failed across runs, or passed only on a rerun
  kInputDependent,  // passed, but discovery's input probe failed it with its inputs shifted
  kMissingOp,       // an error names an aten op the device does not implement
  kMissingDtype,    // an error names a dtype the device does not support
  kDtypeSpecific,   // fails only for this dtype; other dtypes of the same test pass
  kSupportedOps,    // fails although every op it called has a device kernel: xfail_strict
  kTolerance,       // fails only by a numeric mismatch within the factor: a precision override
  kNumeric,         // fails only by a numeric mismatch beyond the factor (or NaN)
  kFailure,         // fails every time, for no reason selection can name
  kAgent,           // an external agent's proposal, checked against the evidence
};

struct Bucket {
  TestMode mode = TestMode::kMandatorySuccess;
  Cause cause = Cause::kPassed;
  std::string label;     // the reason's first word: the mode's name, "flaky" or "agent"
  std::string text;      // "aten::transpose.int is not implemented on the device"
  std::string evidence;  // the error it quotes, "NotImplementedError: ...", or ""
  std::string op;        // for missing_op: the aten op
  std::string dtype;     // for missing_dtype, dtype_specific and tolerance
  // For tolerance: the atol/rtol that make it pass. It runs mandatory_success only in an entry
  // that carries them (edits.dtypes.include with precision), else it is an xfail.
  std::optional<Tolerance> precision;
  // "<label>: <text> (<evidence>)", or the kept text verbatim.
  std::string reason() const;
  // Ran on the device in no run: it takes its test's bucket instead of getting its own.
  bool neutral() const { return cause == Cause::kNeverRan || cause == Cause::kNotAdmitted; }
};

// Buckets for every variant of `base`, in its order. Rules over its results, newest first (first
// match wins, docs/select.md): never ran / not admitted: skip, and it follows its test; passed
// in the older runs (the discovery's alone does not count) and failed (or crashed) in the
// newest: mandatory_success, a regression candidate; any crash: skip; any timeout: skip; passed
// every time: mandatory_success; passed in the newest `fixed_after` or more runs after failing
// before: mandatory_success (fixed); passed and failed otherwise, or passed only on a rerun: xfail
// (flaky); passed every time but failed with its inputs shifted (discovery's input probe): xfail,
// a pass only for the values it draws; failed every time: xfail naming the missing op or dtype,
// xfail_strict when every recorded op has a device kernel, xfail naming the dtype when only that
// dtype fails, else xfail. Before the fixed and flaky rules, failures that are all torch's numeric
// mismatch are judged by `tolerance` (tolerance proposals): mandatory_success with a precision
// within its factor, else xfail with the numbers.
std::vector<Bucket> bucket_variants(const BaseEvidence& base, const Capabilities& caps,
                                    size_t fixed_after = 2,
                                    const TolerancePolicy& tolerance = tolerance_policy());

// The decisions that reproduce a file's buckets under Spyre's matching (docs/select.md, "From
// variants to config entries"): one pool per method name, since Spyre drops the class, each
// class-qualified base named in the pool's entries. An unrestricted entry per method (its majority
// mode, with dtypes.exclude / ops.exclude for what must not run); a dtype-restricted entry
// (edits.dtypes.include) for a dtype whose variants need another mode; and what no edit can
// separate gets the weaker mode that is safe for all of them. `buckets[i]` belongs to
// `file.bases[i]`; `global_dtypes` is the file's global.supported_dtypes (nullopt: none).
std::vector<NameDecision> represent_file(const FileEvidence& file,
                                         const std::vector<std::vector<Bucket>>& buckets,
                                         const std::optional<std::set<std::string>>& global_dtypes);
// The same for the bases of one method (every class defining it), taken as one pool.
std::vector<NameDecision> represent_method(
    const std::vector<const BaseEvidence*>& bases,
    const std::vector<const std::vector<Bucket>*>& buckets,
    const std::optional<std::set<std::string>>& global_dtypes);
// One base alone.
std::vector<NameDecision> represent_base(
    const BaseEvidence& base, const std::vector<Bucket>& buckets,
    const std::optional<std::set<std::string>>& global_dtypes = std::nullopt);

// A variant of a method's pool; `active` when it ran on the device (its bucket is not neutral).
struct PoolVariant {
  const std::string* base;
  const VariantEvidence* v;
  bool active = true;
};
// Whether a dtype-restricted entry (edits.dtypes.include: [dtype]) in `mode` for the method of
// `pool` decides exactly that dtype's variants in Spyre and in ootci, and creates no variant the
// evidence never saw, except in an @ops test in xfail (which no outcome turns red).
bool may_restrict_dtype(const std::vector<PoolVariant>& pool, const std::string& dtype,
                        TestMode mode, const std::optional<std::set<std::string>>& global_dtypes);

// Whether running a variant of this bucket in `mode` is safe: its own mode; xfail for a pass or a
// strict failure (never red, only weaker); skip for anything but a regression candidate, which
// always stays mandatory_success.
bool accepts(const Bucket& bucket, TestMode mode);

// "<label>: <body>", or either alone when the other is empty: the form of every bucket reason.
std::string join_reason(const std::string& label, const std::string& body);

// Every "aten::name[.overload]" in `text`, in order of appearance, without repeats.
std::vector<std::string> aten_ops_in(const std::string& text);
// "ErrorClass: first line of message", shortened, without repeating the class.
std::string quote_error(const std::string& error_class, const std::string& message);

}  // namespace ootci
