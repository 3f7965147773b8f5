#pragma once
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ootci {

// Prometheus text exposition for the relay and the agent. Hand-written because Debian has no
// prometheus-cpp; the format is a few lines of text.
class Metrics {
 public:
  // Histograms (with latency buckets from 5 ms to 30 min) are named up front so they are exported,
  // at zero, before their first observation.
  explicit Metrics(std::vector<std::string> histograms = {});
  // name{labels} → value; e.g. inc("ootci_webhooks_total", "event=\"push\"").
  void inc(const std::string& name, const std::string& labels, double by = 1);
  // Ignored for a name that was not declared.
  void observe(const std::string& histogram, double seconds);
  // Gauges are sampled by the caller at scrape time and passed in; a name may carry labels
  // (name{repo="x"}), a family's series one after another.
  std::string render(const std::vector<std::pair<std::string, double>>& gauges) const;
  double value(const std::string& name, const std::string& labels) const;

 private:
  struct Histogram {
    std::vector<uint64_t> buckets;
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, double>> counters_;
  std::vector<double> bounds_;
  std::map<std::string, Histogram> histograms_;
};

}  // namespace ootci
