#include "adapt/tolerance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>

namespace ootci {

namespace {

// Python's float repr ("0.0031", "1e-05", "inf", "nan") or an int ("3"); nullopt for anything else.
std::optional<double> python_number(const std::string& text) {
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

// Margin over the greatest observed error, so a rerun with a slightly different worst element
// still passes; the rounding up adds a little more.
constexpr double kMargin = 1.25;

double max_nan(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return std::max(a, b);
}

}  // namespace

std::optional<Mismatch> parse_mismatch(const std::string& message) {
  // Header "<identifier> are not close!" (or "equal!" when atol and rtol are 0), then
  // "[Greatest ]absolute difference: X[ at index (..)][ (up to Y allowed)]" and the same for
  // relative; "Scalars" (0-dim) have no index. A custom msg may follow after " : ".
  static const std::regex kHeader(R"(are not (close|equal)!)");
  static const std::regex kLine(
      R"((?:^|\n)(?:Greatest )?([Aa]bsolute|[Rr]elative) difference: (\S+?)(?: at index \([^)]*\))?(?: \(up to (\S+) allowed\))?(?=\n|$))");
  if (!std::regex_search(message, kHeader)) return std::nullopt;
  std::optional<double> abs_diff, rel_diff;
  Mismatch m;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), kLine);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& s = *it;
    std::optional<double> diff = python_number(s[2].str());
    std::optional<double> tol = s[3].matched ? python_number(s[3].str()) : 0.0;
    if (!diff || !tol) return std::nullopt;
    bool absolute = std::tolower(s[1].str()[0]) == 'a';
    if (absolute && !abs_diff) {
      abs_diff = diff;
      m.atol = *tol;
    } else if (!absolute && !rel_diff) {
      rel_diff = diff;
      m.rtol = *tol;
    }
  }
  if (!abs_diff || !rel_diff) return std::nullopt;
  m.abs_diff = *abs_diff;
  m.rel_diff = *rel_diff;
  return m;
}

std::optional<Tolerance> torch_default_tolerance(const std::string& dtype) {
  // torch/testing/_comparison.py _DTYPE_PRECISIONS of torch 1.13 as (atol, rtol).
  static const std::map<std::string, Tolerance> kDefaults = {
      {"float16", {1e-5, 1e-3}},   {"bfloat16", {1e-5, 1.6e-2}}, {"float32", {1e-5, 1.3e-6}},
      {"float64", {1e-7, 1e-7}},   {"complex32", {1e-5, 1e-3}},  {"complex64", {1e-5, 1.3e-6}},
      {"complex128", {1e-7, 1e-7}}};
  auto it = kDefaults.find(dtype);
  if (it == kDefaults.end()) return std::nullopt;
  return it->second;
}

const TolerancePolicy::Reference* TolerancePolicy::of(const std::string& dtype) const {
  auto it = reference.find(dtype);
  return it == reference.end() ? nullptr : &it->second;
}

TolerancePolicy tolerance_policy(const ToleranceSettings& settings) {
  // A float32 result the device computes through bfloat16 is the common case (Spyre's configs
  // carry many such overrides by hand); float64 against float32 likewise. The narrow types have
  // nothing narrower to compare with, so their own default stands.
  static const std::map<std::string, std::string> kDefaultSource = {
      {"float16", "float16"},     {"bfloat16", "bfloat16"},   {"float32", "bfloat16"},
      {"float64", "float32"},     {"complex32", "complex32"}, {"complex64", "bfloat16"},
      {"complex128", "complex64"}};
  TolerancePolicy p;
  p.factor = settings.factor;
  for (const auto& [dtype, source] : kDefaultSource)
    p.reference[dtype] = {source, *torch_default_tolerance(source)};
  for (const auto& [dtype, ref] : settings.reference) {
    if (!ref.dtype.empty()) {
      if (auto t = torch_default_tolerance(ref.dtype)) p.reference[dtype] = {ref.dtype, *t};
      continue;
    }
    p.reference[dtype] = {"select.tolerance", {ref.atol.value_or(0), ref.rtol.value_or(0)}};
  }
  return p;
}

std::optional<ToleranceVerdict> judge_tolerance(const std::vector<Mismatch>& mismatches,
                                                const std::string& dtype,
                                                const TolerancePolicy& policy, bool every_run) {
  const TolerancePolicy::Reference* ref = policy.of(dtype);
  if (!ref || mismatches.empty()) return std::nullopt;
  ToleranceVerdict v;
  for (const Mismatch& m : mismatches) {
    v.observed.atol = max_nan(v.observed.atol, m.abs_diff);
    v.observed.rtol = max_nan(v.observed.rtol, m.rel_diff);
    v.allowed.atol = std::max(v.allowed.atol, m.atol);
    v.allowed.rtol = std::max(v.allowed.rtol, m.rtol);
  }
  const Tolerance& r = ref->tolerance;
  const double limit_rtol = policy.factor * r.rtol;
  const double limit_atol = policy.factor * r.atol;
  bool nan = std::isnan(v.observed.atol) || std::isnan(v.observed.rtol);
  bool rel_finite = std::isfinite(v.observed.rtol);
  if (!nan && rel_finite) {
    // Every mismatched element is within rtol' of its expected value; the others already were.
    v.within = v.observed.rtol <= limit_rtol;
    v.proposed.rtol = round_up(std::max(v.observed.rtol * kMargin, v.allowed.rtol));
    v.proposed.atol = round_up(std::max(v.allowed.atol, r.atol));
  } else if (!nan && std::isfinite(v.observed.atol)) {
    // An expected 0 makes the relative error inf: only an absolute tolerance covers it.
    v.within = v.observed.atol <= limit_atol;
    v.proposed.atol = round_up(std::max(v.observed.atol * kMargin, v.allowed.atol));
    v.proposed.rtol = round_up(std::max(v.allowed.rtol, r.rtol));
  }
  std::string source =
      ref->source == "select.tolerance" ? "select.tolerance:" : ref->source + "'s default";
  std::string reference = fmt::format("{}'s reference precision ({} rtol {}, atol {})", dtype,
                                      source, format_number(r.rtol), format_number(r.atol));
  std::string observed =
      fmt::format("max abs error {}, max rel error {} (allowed atol {}, rtol {})",
                  format_number(v.observed.atol), format_number(v.observed.rtol),
                  format_number(v.allowed.atol), format_number(v.allowed.rtol));
  std::string factor = format_number(policy.factor);
  std::string head = fmt::format("fails only by a numeric mismatch {}: {}",
                                 every_run ? "in every run" : "in the runs it fails", observed);
  if (v.within)
    v.text = fmt::format("{}; within {}x {}, so it runs with atol {}, rtol {}", head, factor,
                         reference, format_number(v.proposed.atol), format_number(v.proposed.rtol));
  else if (nan)
    v.text =
        head + "; a NaN where the reference has a number, or the reverse: no tolerance proposed";
  else if (rel_finite)
    v.text = fmt::format("{}; beyond {}x {}, that is rtol {}: no tolerance proposed", head, factor,
                         reference, format_number(limit_rtol));
  else
    v.text =
        fmt::format("{}; beyond {}x {}, that is atol {} for an expected 0: no tolerance proposed",
                    head, factor, reference, format_number(limit_atol));
  return v;
}

double round_up(double x, int digits) {
  if (!(x > 0) || !std::isfinite(x)) return x;
  double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(x))));
  // The small slack keeps an exact 0.0031 from becoming 0.0032 through binary rounding.
  double up = std::ceil(x * scale * (1 - 1e-12)) / scale;
  return std::stod(fmt::format("{:.{}g}", up, digits));
}

std::string format_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{}", x);
}

}  // namespace ootci
