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
    for (const auto& [name, time] : times_) {
      const auto slash = name.find('/');
      const std::string base = name.substr(0, slash), args = slash == std::string::npos ? "" : name.substr(slash);
      if (base.ends_with("_baseline")) continue;
      auto it = times_.find(base + "_baseline" + args);
      if (it != times_.end()) std::printf("ratio %s / baseline: %.2fx\n", name.c_str(), time / it->second);
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
