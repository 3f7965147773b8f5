#include "base/metrics.h"

#include <fmt/format.h>

namespace ootci {

Metrics::Metrics(std::vector<std::string> histograms)
    : bounds_{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800} {
  for (const auto& name : histograms) histograms_[name].buckets.assign(bounds_.size(), 0);
}

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

void Metrics::observe(const std::string& histogram, double seconds) {
  std::lock_guard lock(mu_);
  auto it = histograms_.find(histogram);
  if (it == histograms_.end()) return;
  Histogram& h = it->second;
  for (size_t i = 0; i < bounds_.size(); ++i)
    if (seconds <= bounds_[i]) h.buckets[i]++;
  h.count++;
  h.sum += seconds;
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
  // A gauge's name may carry labels (name{repo="x"}): one TYPE line per family, before its first.
  std::string family;
  for (const auto& [name, v] : gauges) {
    std::string f = name.substr(0, name.find('{'));
    if (f != family) out += fmt::format("# TYPE {} gauge\n", f);
    family = f;
    out += fmt::format("{} {}\n", name, v);
  }
  for (const auto& [name, h] : histograms_) {
    out += fmt::format("# TYPE {} histogram\n", name);
    for (size_t i = 0; i < bounds_.size(); ++i)
      out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], h.buckets[i]);
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, h.count, name,
                       h.sum, name, h.count);
  }
  return out;
}

}  // namespace ootci
