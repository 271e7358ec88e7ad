// Counters and latency histograms for GET /metrics (Prometheus text format 0.0.4).
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <string>

namespace tritium::serve {

class Stats {
 public:
  /// One answered request: its route, HTTP status and seconds from arrival to answer.
  void request(const std::string& route, int status, double seconds);
  void verdict(const std::string& status, bool cache_hit);
  /// The exposition text; gauges are passed in because the server owns them.
  std::string render(std::size_t pending_items, std::size_t busy_requests, bool draining) const;

 private:
  static constexpr std::array<double, 15> kBuckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                   0.25,   0.5,   1,      2.5,   10,   60,    600};
  struct Histogram {
    std::array<std::size_t, kBuckets.size()> counts{};
    std::size_t total = 0;
    double sum = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::size_t> requests_;
  std::map<std::string, Histogram> latency_;
  std::map<std::string, std::size_t> verdicts_;
  std::size_t cache_hits_ = 0;
};

}  // namespace tritium::serve
