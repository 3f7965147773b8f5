#pragma once
// Which dtypes a change to a C++ kernel can affect, when its code says so (docs/select.md,
// "Dtypes"): inside an AT_DISPATCH_* macro, inside a branch on a dtype, after a guard that sends
// every other dtype elsewhere, or anywhere in a kernel that hands every other dtype to the
// backend's fallback. Anything else may affect every dtype.
#include <optional>
#include <set>
#include <string>

#include "evidence/source_text.h"

namespace ootci {

struct DtypeScope {
  std::set<std::string> dtypes;  // torch names ("float32"); empty: every dtype
  std::string why;               // how the code says so; "" for every dtype
  bool every_dtype() const { return dtypes.empty(); }
};

// The scope of a change to 1-based `line`, inside the C++ function whose definition spans lines
// [first, last] of `source`: the intersection of every dtype construct the line lies in.
DtypeScope dtype_scope_at(const SourceText& source, int first, int last, int line);

// The dtypes the kernel defined at lines [first, last] serves itself when its body begins with
// `if (<dtype> != <constant>...) return <fallback>(...);`, where the fallback is a call naming
// one of `fallbacks` (the backend's boxed fallback): a kernel registered for those dtypes only,
// which leaves every other dtype where it was before it was registered.
DtypeScope kernel_own_dtypes(const SourceText& source, int first, int last,
                             const std::set<std::string>& fallbacks);

// "at::kFloat", "at::ScalarType::Float", "torch::kFloat32", "kHalf" -> "float32", "float16".
std::optional<std::string> dtype_of_constant(const std::string& token);

}  // namespace ootci
