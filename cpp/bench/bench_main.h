// A main() for Tritium's benchmarks: runs them, then prints each "<name>" against its
// "<name>_baseline" as a ratio, so a target reads off one run on one machine.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

namespace tritium::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs)
      if (run.run_type == Run::RT_Iteration) times_[run.benchmark_name()] = run.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
  void PrintRatios() const {
    // Names carry run options after '/' (Arg, min_time, manual_time): pair on the base name.
    std::map<std::string, double> by_base;
    for (const auto& [name, time] : times_) by_base[name.substr(0, name.find('/'))] = time;
    for (const auto& [base, time] : by_base) {
      if (base.ends_with("_baseline")) continue;
      auto it = by_base.find(base + "_baseline");
      if (it != by_base.end())
        std::printf("ratio %s / baseline: %.3fx (%.1fx faster)\n", base.c_str(), time / it->second, it->second / time);
    }
  }

 private:
  std::map<std::string, double> times_;
};

inline int run_main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}

}  // namespace tritium::bench
