// Loading a JSONL suite (validation, duplicate ids, level/meta) against the bare cost of
// splitting the lines and parsing their JSON. Target: within 1.3x of the baseline.
#include <sstream>

#include "bench_main.h"
#include "tritium/core.h"

namespace {

std::string make_suite(int n) {
  std::ostringstream out;
  const std::string source(2000, 'x');
  for (int i = 0; i < n; ++i)
    out << tritium::Json{{"id", "task_" + std::to_string(i)},
                         {"source", source},
                         {"level", 1 + i % 2},
                         {"meta", {{"ops", {"relu", "add"}}}}}
               .dump()
        << "\n";
  return out.str();
}

void BM_load_jsonl(benchmark::State& state) {
  const std::string text = make_suite(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(tritium::parse_jsonl_suite(text, "bench.jsonl"));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

void BM_load_jsonl_baseline(benchmark::State& state) {
  const std::string text = make_suite(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    std::istringstream in(text);
    std::vector<tritium::Json> items;
    for (std::string line; std::getline(in, line);) items.push_back(tritium::Json::parse(line));
    benchmark::DoNotOptimize(items);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

BENCHMARK(BM_load_jsonl)->Arg(1000);
BENCHMARK(BM_load_jsonl_baseline)->Arg(1000);

}  // namespace

int main(int argc, char** argv) { return tritium::bench::run_main(argc, argv); }
