// Task synthesis throughput (sampling, solving, emitting; no validation), one thread against all
// cores, in one run. Target: at least 5,000 tasks/s on one core (DRTriton: 100K programs in
// ~1.5 h on 32 cores, about 0.6 tasks/s per core, with validation).
#include <thread>

#include "bench_main.h"
#include "tritium/synth.h"

namespace {

void BM_synthesize(benchmark::State& state) {
  tritium::synth::SynthOptions o;
  o.count = 4096;
  o.min_difficulty = 1;
  o.max_difficulty = 8;
  o.threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ++o.seed;  // fresh tasks each iteration
    auto tasks = tritium::synth::synthesize(o);
    if (!tasks) state.SkipWithError(tasks.error().message.c_str());
    benchmark::DoNotOptimize(tasks);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * o.count));
}

BENCHMARK(BM_synthesize)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_synthesize)
    ->Arg(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) { return tritium::bench::run_main(argc, argv); }
