// Fragment search after DRTriton (docs/search.md): the task's compute operators, in topological
// order, are cut into contiguous fragments of at most five; the emitter fuses only within a
// fragment, so each partition is a different set of kernels for the same task.
#include <fmt/format.h>

#include <algorithm>

#include "tritium/search.h"
#include "tritium/synth.h"

namespace tritium::search {
namespace {

using Partition = std::vector<int>;

// Appends the compositions of n into exactly k parts of 1..most, larger first parts first, until
// `out` holds `cap`.
void compositions(int n, int k, int most, Partition& prefix, std::vector<Partition>& out, std::size_t cap) {
  if (k == 0) {
    if (n == 0 && out.size() < cap) out.push_back(prefix);
    return;
  }
  for (int part = std::min(most, n - (k - 1)); part >= 1 && out.size() < cap; --part) {
    if (n - part > (k - 1) * most) break;  // the rest no longer fits in k - 1 parts
    prefix.push_back(part);
    compositions(n - part, k - 1, most, prefix, out, cap);
    prefix.pop_back();
  }
}

std::string describe(const Partition& p) {
  if (p.size() == 1) return fmt::format("fragments {} (one)", p[0]);
  return fmt::format("fragments {}", fmt::join(p, "+"));
}

}  // namespace

std::vector<Partition> fragment_partitions(int ops, int most, std::size_t cap) {
  std::vector<Partition> out;
  if (ops <= 0 || most <= 0 || cap == 0) return out;
  Partition prefix;
  const int fewest = (ops + most - 1) / most;
  compositions(ops, fewest, most, prefix, out, 1);  // the most fused
  if (ops > 1 && out.size() < cap) out.push_back(Partition(ops, 1));
  for (int k = fewest; k < ops && out.size() < cap; ++k) {
    std::vector<Partition> level;
    compositions(ops, k, most, prefix, level, cap - out.size() + 1);  // + 1: the most fused may come again
    for (auto& p : level)
      if (p != out.front() && out.size() < cap) out.push_back(std::move(p));
  }
  return out;
}

Result<Candidates> fragment_candidates(const Task& task, const SearchOptions& options, bool with_default) {
  RunnerOptions runner;
  runner.python = options.python;
  runner.timeout_s = 120;
  const auto trace = trace_task(task, runner);
  if (!trace) return trace.error();
  const auto graph = synth::graph_from_trace(*trace);
  if (!graph) return graph.error();
  Candidates out;
  if (with_default) out.emplace_back(synth::emit_fragments(*graph, {}, task.id).code, "the emitter's default fusion");
  for (const auto& p : fragment_partitions(graph->compute_ops(), options.max_fragment, options.fragment_budget))
    out.emplace_back(synth::emit_fragments(*graph, p, task.id).code, describe(p));
  return out;
}

}  // namespace tritium::search
