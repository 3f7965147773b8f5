#pragma once
// Tolerance proposals (docs/select.md, "Tolerance proposals"): a variant that fails only because
// torch's comparison finds its numbers not close gets a precision override instead of an xfail,
// when its error is within a factor of its dtype's reference precision.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/backend_config.h"

namespace ootci {

// The numbers of one "... are not close!" (or "not equal!") AssertionError of torch.testing
// (torch/testing/_comparison.py, _make_mismatch_msg): the greatest absolute and relative
// difference among the mismatched elements and the tolerances the comparison allowed.
struct Mismatch {
  double abs_diff = 0;
  double rel_diff = 0;  // inf when an expected value is 0; nan when a value is NaN
  double atol = 0;      // 0 and 0 for "not equal!", which quotes no tolerance
  double rtol = 0;
};

// The mismatch a failed result's message reports, or nullopt when the message is not torch's
// numeric mismatch (any other error, or a message cut before its numbers).
std::optional<Mismatch> parse_mismatch(const std::string& message);

// torch's default tolerance of a dtype (`_DTYPE_PRECISIONS`, else rtol 0 / atol 0 as torch uses
// for integers), or nullopt for a name torch does not know.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
};
std::optional<Tolerance> torch_default_tolerance(const std::string& dtype);

// What selection compares a dtype's errors with, and how far beyond it a tolerance is still
// proposed.
struct TolerancePolicy {
  double factor = 4;
  // dtype -> the dtype whose torch default tolerance is its reference, with that tolerance
  struct Reference {
    std::string source;  // "bfloat16", or "select.tolerance" for explicit numbers
    Tolerance tolerance;
  };
  std::map<std::string, Reference> reference;
  const Reference* of(const std::string& dtype) const;
};
// The defaults (float32 -> bfloat16, float64 -> float32, complex64 -> bfloat16, complex128 ->
// float32, float16, bfloat16 and complex32 -> themselves) with ootci.yaml's select.tolerance on
// top.
TolerancePolicy tolerance_policy(const ToleranceSettings& settings = {});

// The judgement on a variant whose every failure is a numeric mismatch.
struct ToleranceVerdict {
  bool within = false;  // a tolerance is proposed
  Tolerance observed;   // the greatest errors over its failures (atol: abs, rtol: rel)
  Tolerance allowed;    // the greatest tolerances the failures quote
  Tolerance proposed;   // when within: what makes it pass, rounded up to 2 significant digits
  std::string text;     // the reason's text, with every number
};
// nullopt when the dtype has no reference or there are no mismatches. Within when the greatest
// relative error is finite and at most `factor` times the reference rtol (or, when an expected
// value is 0 and the relative error is inf, the absolute error at most `factor` times its atol);
// a NaN is never within.
// `every_run`: the variant failed in every run (else it passed in some: with the precision an
// earlier proposal gave it, or by chance), which the text says without counting runs, so a new
// run that agrees changes nothing.
std::optional<ToleranceVerdict> judge_tolerance(const std::vector<Mismatch>& mismatches,
                                                const std::string& dtype,
                                                const TolerancePolicy& policy,
                                                bool every_run = true);

// x rounded up to `digits` significant digits (0.0030277 -> 0.0031); x itself when it is not a
// positive finite number.
double round_up(double x, int digits = 2);
// A number as written in reasons and configs: shortest form that reads back exactly (1e-05,
// 0.0031).
std::string format_number(double x);

}  // namespace ootci
