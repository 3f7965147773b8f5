#include "relay/metrics.h"

#include <fmt/format.h>

namespace ootci {

Metrics::Metrics()
    : bounds_{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800},
      buckets_(bounds_.size(), 0) {}

void Metrics::inc(const std::string& name, const std::string& labels, double by) {
  std::lock_guard lock(mu_);
  counters_[name][labels] += by;
}

double Metrics::value(const std::string& name, const std::string& labels) const {
  std::lock_guard lock(mu_);
  auto it = counters_.find(name);
  if (it == counters_.end()) return 0;
  auto jt = it->second.find(labels);
  return jt == it->second.end() ? 0 : jt->second;
}

void Metrics::observe_dispatch_latency(double seconds) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < bounds_.size(); ++i)
    if (seconds <= bounds_[i]) buckets_[i]++;
  count_++;
  sum_ += seconds;
}

std::string Metrics::render(const std::vector<std::pair<std::string, double>>& gauges) const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, series] : counters_) {
    out += fmt::format("# TYPE {} counter\n", name);
    for (const auto& [labels, v] : series)
      out += labels.empty() ? fmt::format("{} {}\n", name, v)
                            : fmt::format("{}{{{}}} {}\n", name, labels, v);
  }
  for (const auto& [name, v] : gauges)
    out += fmt::format("# TYPE {} gauge\n{} {}\n", name, name, v);
  const char* h = "ootci_webhook_to_dispatch_seconds";
  out += fmt::format("# TYPE {} histogram\n", h);
  for (size_t i = 0; i < bounds_.size(); ++i)
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", h, bounds_[i], buckets_[i]);
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", h, count_, h, sum_, h,
                     count_);
  return out;
}

}  // namespace ootci
