// Prometheus exposition of the server's counters.
#include "stats.h"

#include <fmt/format.h>

namespace tritium::serve {

void Stats::request(const std::string& route, int status, double seconds) {
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
  Histogram& h = latency_[route];
  for (std::size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) ++h.counts[i];
  ++h.total;
  h.sum += seconds;
}

void Stats::verdict(const std::string& status, bool cache_hit) {
  std::lock_guard lock(mutex_);
  ++verdicts_[status];
  cache_hits_ += cache_hit;
}

std::string Stats::render(std::size_t pending_items, std::size_t busy_requests, bool draining) const {
  std::lock_guard lock(mutex_);
  std::string out =
      "# HELP tritium_requests_total HTTP requests answered, by route and status code.\n"
      "# TYPE tritium_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    out += fmt::format("tritium_requests_total{{route=\"{}\",code=\"{}\"}} {}\n", key.first, key.second, n);
  out +=
      "# HELP tritium_request_seconds Time from a request's arrival to its answer.\n"
      "# TYPE tritium_request_seconds histogram\n";
  for (const auto& [route, h] : latency_) {
    for (std::size_t i = 0; i < kBuckets.size(); ++i)
      out +=
          fmt::format("tritium_request_seconds_bucket{{route=\"{}\",le=\"{}\"}} {}\n", route, kBuckets[i], h.counts[i]);
    out += fmt::format("tritium_request_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {}\n", route, h.total);
    out += fmt::format("tritium_request_seconds_sum{{route=\"{}\"}} {}\n", route, h.sum);
    out += fmt::format("tritium_request_seconds_count{{route=\"{}\"}} {}\n", route, h.total);
  }
  out += "# HELP tritium_verdicts_total Verdicts returned, by status.\n# TYPE tritium_verdicts_total counter\n";
  for (const auto& [status, n] : verdicts_)
    out += fmt::format("tritium_verdicts_total{{status=\"{}\"}} {}\n", status, n);
  out += fmt::format(
      "# HELP tritium_cache_hits_total Verdicts served from the cache.\n# TYPE tritium_cache_hits_total counter\n"
      "tritium_cache_hits_total {}\n"
      "# HELP tritium_pending_items Items being evaluated now.\n# TYPE tritium_pending_items gauge\n"
      "tritium_pending_items {}\n"
      "# HELP tritium_busy_requests Requests being answered now.\n# TYPE tritium_busy_requests gauge\n"
      "tritium_busy_requests {}\n"
      "# HELP tritium_draining 1 while the server drains.\n# TYPE tritium_draining gauge\n"
      "tritium_draining {}\n",
      cache_hits_, pending_items, busy_requests, draining ? 1 : 0);
  return out;
}

}  // namespace tritium::serve
