// Parser and verifier throughput against CPython's own ast.parse on the same inputs, in one run.
//   BM_parse_stdlib            pyast::parse over every .py of the stdlib (MB/s). Target >= 50 MB/s.
//   BM_parse_stdlib_baseline   ast.parse over the same files, timed inside a python3 process.
//   BM_verify_candidates       verify_code over the example solutions and verifier fixtures.
//   BM_verify_candidates_baseline  ast.parse alone over the same candidates.
// Target: verification at least 10x faster than ast.parse alone (ratio <= 0.10).
// The baselines' python is $TRITIUM_PYTHON or python3; the stdlib is that python's.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_main.h"
#include "tritium/core.h"
#include "tritium/pyast.h"
#include "tritium/verify.h"

namespace fs = std::filesystem;

namespace {

std::string python() {
  const char* p = std::getenv("TRITIUM_PYTHON");
  return p && *p ? p : "python3";
}

std::string run_capture(const std::string& command) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, pipe.get())) out.append(buf, n);
  return out;
}

struct Corpus {
  std::vector<std::string> paths;
  std::vector<std::string> sources;
  std::size_t bytes = 0;
};

Corpus load(const std::vector<fs::path>& files) {
  Corpus c;
  for (const auto& p : files) {
    auto text = tritium::read_file(p);
    if (!text) continue;
    c.bytes += text->size();
    c.paths.push_back(p.string());
    c.sources.push_back(std::move(*text));
  }
  return c;
}

const Corpus& stdlib() {
  static const Corpus c = [] {
    std::string dir = run_capture(python() + " -c \"import sysconfig;print(sysconfig.get_paths()['stdlib'])\"");
    while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied))
      if (e.path().extension() == ".py" && e.path().string().find("site-packages") == std::string::npos)
        files.push_back(e.path());
    return load(files);
  }();
  return c;
}

const Corpus& candidates() {
  static const Corpus c = [] {
    std::vector<fs::path> files;
    for (const char* dir : {"examples/solutions", "tests/fixtures/verify"})
      if (fs::exists(fs::path(TRITIUM_SOURCE_DIR) / dir))
        for (const auto& e : fs::recursive_directory_iterator(fs::path(TRITIUM_SOURCE_DIR) / dir))
          if (e.path().extension() == ".py") files.push_back(e.path());
    return load(files);
  }();
  return c;
}

// Seconds CPython's ast.parse takes over the corpus (files read before the clock starts).
double cpython_parse_seconds(const Corpus& corpus) {
  const std::string list = (fs::temp_directory_path() / "tritium_bench_files.txt").string();
  {
    std::FILE* f = std::fopen(list.c_str(), "w");
    for (const auto& p : corpus.paths) std::fprintf(f, "%s\n", p.c_str());
    std::fclose(f);
  }
  const std::string script =
      "import ast,sys,time,warnings\n"
      "warnings.simplefilter('ignore')\n"
      "srcs=[open(p,'rb').read() for p in open(sys.argv[1]).read().split(chr(10)) if p]\n"
      "t=time.perf_counter()\n"
      "for s in srcs:\n"
      "  try: ast.parse(s)\n"
      "  except Exception: pass\n"
      "print(time.perf_counter()-t)\n";
  const std::string out = run_capture(python() + " -c \"" + script + "\" " + list);
  return std::atof(out.c_str());
}

void BM_parse_stdlib(benchmark::State& state) {
  const Corpus& c = stdlib();
  for (auto _ : state)
    for (const auto& s : c.sources) benchmark::DoNotOptimize(tritium::pyast::parse(s));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * c.bytes));
  state.counters["files"] = static_cast<double>(c.sources.size());
}

void BM_parse_stdlib_baseline(benchmark::State& state) {
  const Corpus& c = stdlib();
  for (auto _ : state) state.SetIterationTime(cpython_parse_seconds(c));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * c.bytes));
}

void BM_verify_candidates(benchmark::State& state) {
  const Corpus& c = candidates();
  for (auto _ : state)
    for (const auto& s : c.sources) benchmark::DoNotOptimize(tritium::verify_code(s));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * c.sources.size()));
}

void BM_verify_candidates_baseline(benchmark::State& state) {
  const Corpus& c = candidates();
  for (auto _ : state) state.SetIterationTime(cpython_parse_seconds(c));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * c.sources.size()));
}

BENCHMARK(BM_parse_stdlib)->Unit(benchmark::kMillisecond)->MinTime(3);
BENCHMARK(BM_parse_stdlib_baseline)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);
BENCHMARK(BM_verify_candidates)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_verify_candidates_baseline)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

}  // namespace

int main(int argc, char** argv) { return tritium::bench::run_main(argc, argv); }
