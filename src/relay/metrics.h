#pragma once
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ootci {

// Prometheus text exposition for the relay. Hand-written because Debian has no prometheus-cpp;
// the format is a few lines of text.
class Metrics {
 public:
  Metrics();
  // name{labels} → value; e.g. inc("ootci_webhooks_total", "event=\"push\"").
  void inc(const std::string& name, const std::string& labels, double by = 1);
  void observe_dispatch_latency(double seconds);
  // Gauges are sampled by the caller at scrape time and passed in.
  std::string render(const std::vector<std::pair<std::string, double>>& gauges) const;
  double value(const std::string& name, const std::string& labels) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, double>> counters_;
  std::vector<double> bounds_;
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace ootci
