#pragma once
// Nearest-rank percentile for benchmark reports.
#include <algorithm>
#include <vector>

namespace ootci {

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

}  // namespace ootci
