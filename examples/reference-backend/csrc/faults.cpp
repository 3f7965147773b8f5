#include "faults.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace ootci_ref {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::set<std::string> op_set(const char* env_name) {
  const char* v = std::getenv(env_name);
  std::set<std::string> out;
  if (!v) return out;
  for (auto& name : split(v, ',')) out.insert(name);
  return out;
}

struct NumericBug {
  c10::ScalarType dtype;
  double delta;
};

// OOTCI_REF_WRONG_RESULTS="add:int64,mul:float32:0.01": outputs of that op and dtype are off by
// delta (default 1; a bool output is negated).
std::multimap<std::string, NumericBug> numeric_bugs() {
  std::multimap<std::string, NumericBug> out;
  const char* v = std::getenv("OOTCI_REF_WRONG_RESULTS");
  if (!v) return out;
  static const std::map<std::string, c10::ScalarType> dtypes = {{"bool", at::kBool},
                                                                {"uint8", at::kByte},
                                                                {"int8", at::kChar},
                                                                {"int16", at::kShort},
                                                                {"int32", at::kInt},
                                                                {"int64", at::kLong},
                                                                {"float16", at::kHalf},
                                                                {"bfloat16", at::kBFloat16},
                                                                {"float32", at::kFloat},
                                                                {"float64", at::kDouble},
                                                                {"complex64", at::kComplexFloat},
                                                                {"complex128", at::kComplexDouble}};
  for (auto& spec : split(v, ',')) {
    auto parts = split(spec, ':');
    TORCH_CHECK(parts.size() == 2 || parts.size() == 3,
                "OOTCI_REF_WRONG_RESULTS: expected op:dtype[:delta], got '", spec, "'");
    auto dt = dtypes.find(parts[1]);
    TORCH_CHECK(dt != dtypes.end(), "OOTCI_REF_WRONG_RESULTS: unknown dtype '", parts[1], "'");
    out.emplace(parts[0], NumericBug{dt->second, parts.size() == 3 ? std::stod(parts[2]) : 1.0});
  }
  return out;
}

struct LowPrecision {
  c10::ScalarType dtype;
  int bits;  // mantissa bits kept
};

// OOTCI_REF_LOW_PRECISION="mul:float32:7": float32 outputs of `mul` keep 7 mantissa bits, as
// bfloat16 does: a device that computes in a narrower type than it reports. Fewer bits give a
// larger error (1 bit: up to 25% relative).
std::multimap<std::string, LowPrecision> low_precision_ops() {
  std::multimap<std::string, LowPrecision> out;
  const char* v = std::getenv("OOTCI_REF_LOW_PRECISION");
  if (!v) return out;
  static const std::map<std::string, std::pair<c10::ScalarType, int>> dtypes = {
      {"float32", {at::kFloat, 23}},
      {"float64", {at::kDouble, 52}},
      {"complex64", {at::kComplexFloat, 23}},
      {"complex128", {at::kComplexDouble, 52}}};
  for (auto& spec : split(v, ',')) {
    auto parts = split(spec, ':');
    TORCH_CHECK(parts.size() == 3, "OOTCI_REF_LOW_PRECISION: expected op:dtype:bits, got '", spec,
                "'");
    auto dt = dtypes.find(parts[1]);
    TORCH_CHECK(dt != dtypes.end(), "OOTCI_REF_LOW_PRECISION: unknown dtype '", parts[1],
                "' (float32, float64, complex64 or complex128)");
    int bits = std::stoi(parts[2]);
    TORCH_CHECK(bits >= 0 && bits <= dt->second.second, "OOTCI_REF_LOW_PRECISION: '", spec,
                "': bits must be 0 to ", dt->second.second);
    out.emplace(parts[0], LowPrecision{dt->second.first, bits});
  }
  return out;
}

// Rounds each IEEE value in `words` to `keep` of its `mantissa` bits, to nearest even; inf and
// NaN stay as they are.
template <typename Word>
void round_mantissa(Word* words, int64_t n, int mantissa, int keep) {
  const int drop = mantissa - keep;
  if (drop <= 0) return;
  const Word exponent = ((Word(1) << (sizeof(Word) * 8 - 1 - mantissa)) - 1) << mantissa;
  const Word half = Word(1) << (drop - 1);
  const Word mask = ~((Word(1) << drop) - 1);
  for (int64_t i = 0; i < n; ++i) {
    Word w = words[i];
    if ((w & exponent) == exponent) continue;
    w += half - 1 + ((w >> drop) & 1);
    words[i] = w & mask;
  }
}

// "aten::add_" and "aten::add" (every overload) both answer to "add".
std::string base_name(const c10::OperatorHandle& op) {
  std::string name = op.schema().name();
  auto colon = name.find("::");
  if (colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 1 && name.back() == '_') name.pop_back();
  return name;
}

// A CPU tensor over the same memory, so a fault can be applied without dispatching back here.
at::Tensor cpu_alias(const at::Tensor& t) {
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
}

void perturb(const at::Tensor& t, const NumericBug& bug) {
  if (!t.defined() || t.device().type() != c10::DeviceType::PrivateUse1) return;
  if (t.scalar_type() != bug.dtype || t.numel() == 0) return;
  at::Tensor alias = cpu_alias(t);
  if (bug.dtype == at::kBool)
    alias.logical_not_();
  else
    alias.add_(bug.delta);
}

void lower_precision(const at::Tensor& t, const LowPrecision& low) {
  if (!t.defined() || t.device().type() != c10::DeviceType::PrivateUse1) return;
  if (t.scalar_type() != low.dtype || t.numel() == 0) return;
  at::Tensor alias = cpu_alias(t);
  at::Tensor dense = alias.contiguous();  // the same memory when it already is
  // A complex value is two floats of the same width; each is rounded.
  int64_t n = dense.numel() * (dense.is_complex() ? 2 : 1);
  if (low.dtype == at::kFloat || low.dtype == at::kComplexFloat)
    round_mantissa(static_cast<uint32_t*>(dense.data_ptr()), n, 23, low.bits);
  else
    round_mantissa(static_cast<uint64_t*>(dense.data_ptr()), n, 52, low.bits);
  if (!dense.is_same(alias)) alias.copy_(dense);
}

// OOTCI_REF_FLAKY_OPS: the op fails once per OOTCI_REF_FLAKY_STATE file. The call that finds
// no such file creates it and raises, so the first variant that calls the op fails and passes
// when run again, in whatever process.
void fail_once(const std::string& name) {
  const char* state = std::getenv("OOTCI_REF_FLAKY_STATE");
  TORCH_CHECK(state && *state, "OOTCI_REF_FLAKY_OPS needs OOTCI_REF_FLAKY_STATE (a file path)");
  int fd = ::open(state, O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd < 0) return;  // it failed once already
  ::close(fd);
  TORCH_CHECK(false, "'", name,
              "' failed once on purpose (OOTCI_REF_FLAKY_OPS); it passes when run again");
}

}  // namespace

void check_op_allowed(const c10::OperatorHandle& op) {
  static const std::set<std::string> disabled = op_set("OOTCI_REF_DISABLED_OPS");
  static const std::set<std::string> crashing = op_set("OOTCI_REF_CRASH_OPS");
  static const std::set<std::string> hanging = op_set("OOTCI_REF_HANG_OPS");
  static const std::set<std::string> flaky = op_set("OOTCI_REF_FLAKY_OPS");
  if (disabled.empty() && crashing.empty() && hanging.empty() && flaky.empty()) return;
  std::string name = base_name(op);
  if (flaky.count(name)) fail_once(name);
  if (crashing.count(name)) std::raise(SIGSEGV);
  if (hanging.count(name))
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  TORCH_CHECK_NOT_IMPLEMENTED(!disabled.count(name), "Could not run '", op.schema().name(),
                              "' on the reference backend: switched off by "
                              "OOTCI_REF_DISABLED_OPS");
}

namespace {

// Calls fn on every tensor among the op's outputs on `stack`.
template <typename Fn>
void each_output(torch::jit::Stack* stack, Fn fn) {
  for (const c10::IValue& v : *stack) {
    if (v.isTensor()) fn(v.toTensor());
    if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) fn(t);
  }
}

}  // namespace

void apply_numeric_bugs(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  static const std::multimap<std::string, NumericBug> bugs = numeric_bugs();
  static const std::multimap<std::string, LowPrecision> low = low_precision_ops();
  if (bugs.empty() && low.empty()) return;
  const std::string name = base_name(op);
  auto [first, last] = bugs.equal_range(name);
  for (auto it = first; it != last; ++it)
    each_output(stack, [&](const at::Tensor& t) { perturb(t, it->second); });
  auto [low_first, low_last] = low.equal_range(name);
  for (auto it = low_first; it != low_last; ++it)
    each_output(stack, [&](const at::Tensor& t) { lower_precision(t, it->second); });
}

}  // namespace ootci_ref
