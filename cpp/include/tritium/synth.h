// tritium/synth.h: CSP-DAG task synthesis (docs/synth.md).
//
// A task is a DAG of PyTorch operators drawn from one data table (the catalog). The sampler draws
// the DAG's operators with near-uniform frequency, wires them into chains, branches and merges,
// and states every tensor dimension as an integer variable; the shape solver draws a uniformly
// random feasible assignment (domains per size profile; equality, broadcasting, divisibility and
// conv/pool output formulas; bounds on elements and on the estimated reference runtime). The
// emitter writes a readable KernelBench-format task and its meta. Everything is deterministic in
// (seed, task index), whatever the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tritium/core.h"

namespace tritium::synth {

enum class Category : std::uint8_t {
  unary,
  binary,
  scalar,
  select,
  reduction,
  softmax,
  norm,
  linalg,
  conv,
  pool,
  shape,
  cumulative
};
std::string_view to_string(Category c);
std::optional<Category> category_from_string(std::string_view name);
/// "unary,reduction" -> categories; an unknown name is an Error listing the known ones.
Result<std::vector<Category>> parse_categories(std::string_view comma_list);

/// How an operator's output shape follows from its operands; the solver's constraints come from it.
enum class ShapeRule : std::uint8_t {
  same,            // elementwise: the operand's shape
  broadcast,       // two operands, right-aligned broadcasting
  reduce,          // one dim dropped (or kept as 1 with keepdim)
  along,           // same shape, computed along one dim (softmax, cumsum)
  along_short,     // along a dim of at most 16 elements: longer products overflow float32 (cumprod)
  layer_norm,      // same shape, normalised over the last dim, weight and bias of that size
  rms_norm,        // same shape, normalised over the last dim, weight of that size
  group_norm,      // (N, C, *), C divisible by the group count
  batch_norm,      // (N, C, *), running statistics, eval mode
  matmul,          // (.., M, K) @ (K, N) with a parameter
  bmm,             // (B, M, K) @ (B, K, N), both from the graph
  linear,          // (.., K) -> (.., N), weight (N, K) and bias (N)
  addmm,           // bias (N) + (M, K) @ (K, N)
  conv,            // (N, Cin, *S) -> (N, Cout, *S'), S' = (S + 2p - d(k-1) - 1) / s + 1
  conv_transpose,  // S' = (S - 1) s - 2p + d(k-1) + 1
  pool,            // (N, C, *S) -> (N, C, *S'), S' = (S + 2p - k) / s + 1
  adaptive_pool,   // (N, C, *S) -> (N, C, *O), O <= S
  transpose,       // two dims swapped
  permute,         // dims reordered
  flatten,         // dims from 1 on merged into one
  reshape,         // the last dim split in two
  cat,             // two operands joined along one dim
};

/// What an operand's values must be for the op to be defined everywhere (log needs > 0).
enum class Domain : std::uint8_t { any, nonneg, positive };

/// How the FLOP count is computed (bytes: every operand, parameter and output once).
enum class Cost : std::uint8_t { elementwise, per_input, matmul, conv, conv_transpose, window, none };

/// One catalog entry: data, not code. `code` is the forward expression, with {0} and {1} the
/// operands, {m} the op's module attribute, {dim}, {keepdim}, {scalar}, {lo}, {hi}, {dims}
/// its attributes; `module` the nn constructor in Model.__init__ ({...} from the solved shapes).
struct OpSpec {
  std::string_view name;
  Category category;
  int arity;               // operands taken from the graph
  int min_rank, max_rank;  // of the first operand
  ShapeRule shape;
  int spatial;    // conv and pool: spatial dims
  Domain domain;  // required of the first operand (binary div: of the second)
  Domain result;  // guaranteed of the output
  Cost cost;
  double flops;  // per output (elementwise, window) or input (per_input) element
  std::string_view code;
  std::string_view module;
  std::string_view params;  // how the parameters are initialised, for the docs and meta
  bool compute = true;      // counts toward difficulty (shape ops do not)
  // How the Triton emitter writes it: an expression over loaded values ({0}, {1}, attributes; in
  // one fused elementwise kernel), "row" (a row kernel), "matmul", "view" (no kernel), or "" (none).
  std::string_view triton;
};

std::span<const OpSpec> catalog();
const OpSpec* find_op(std::string_view name);

/// Shape bands (docs/synth.md): cpu (references well under 50 ms on one core), mid (a GPU band of
/// tens of MB: timed above the engine's floor, judged in seconds; RL's rewards), gpu (up to GBs).
enum class SizeProfile : std::uint8_t { cpu, mid, gpu };
std::string_view size_name(SizeProfile size);
/// "cpu", "mid" or "gpu"; nullopt otherwise.
std::optional<SizeProfile> parse_size(std::string_view name);

struct SynthOptions {
  std::size_t count = 100;
  int min_difficulty = 1, max_difficulty = 3;  // compute operators per task
  std::vector<Category> categories;            // empty: the whole catalog
  std::uint64_t seed = 0;
  SizeProfile size = SizeProfile::cpu;
  int threads = 1;
  bool with_solutions = false;  // meta.solution (a Triton ModelNew) and meta.plan where the emitter can
  // meta.twin: the same graph with its shapes solved again for this profile ({id, source, meta}; null
  // where no shapes fit it), e.g. RL's GPU-timed tasks on the graphs SFT trained on.
  std::optional<SizeProfile> twin_size;
};

/// SynthOptions from JSON: {count, difficulty: K | "K1-K2" | [K1, K2], ops: "unary,reduction" | [names],
/// seed, size: "cpu" | "mid" | "gpu", threads, with_solutions, twin_size: a size}; absent keys default.
/// Errors name the key.
Result<SynthOptions> synth_options_from_json(const Json& json);
/// "3" or "1-8": compute operators per task.
std::optional<Error> parse_difficulty(std::string_view text, SynthOptions& options);

/// One synthesized task: a KernelBench-format source and its meta (ops, difficulty, shapes, FLOPs,
/// bytes, estimated reference time, seed, index, canonical hash; with solutions: solution, plan).
struct SynthTask {
  Task task;
  std::uint64_t hash = 0;
};

using SynthProgress = std::function<void(std::size_t done, std::size_t total)>;

/// `options.count` distinct tasks. Fails only on bad options (the message says which).
Result<std::vector<SynthTask>> synthesize(const SynthOptions& options, const SynthProgress& progress = {});

// ---- Given tasks: a traced DAG, emitted with fusion barriers (docs/search.md) ---------------------

/// A Triton ModelNew and its plan (which ops go into which kernel, and how).
struct Solution {
  std::string code, plan;
};

/// The operator DAG of a KernelBench-format task, as the runner's tracer describes it
/// (python/tritium/runner/trace.py): every node a catalog operator with a Triton form.
class TaskGraph {
 public:
  TaskGraph(TaskGraph&&) noexcept;
  TaskGraph& operator=(TaskGraph&&) noexcept;
  ~TaskGraph();
  int compute_ops() const;  // what fragments are made of, in topological order

 private:
  struct Impl;
  explicit TaskGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend Result<TaskGraph> graph_from_trace(const Json& trace);
  friend Solution emit_fragments(const TaskGraph& graph, const std::vector<int>& fragments, const std::string& task_id);
};

/// The DAG of a trace. An Error when the trace lists unmapped nodes (they would have no kernel, and
/// ModelNew may not leave compute to PyTorch), names an operator without a Triton form, or is malformed.
Result<TaskGraph> graph_from_trace(const Json& trace);

/// The emitter's ModelNew for the DAG, fusing only within fragments: `fragments` are the sizes of
/// consecutive runs of compute operators (summing to compute_ops()); empty: one fragment, the
/// emitter's default fusion.
Solution emit_fragments(const TaskGraph& graph, const std::vector<int>& fragments, const std::string& task_id);

/// Coverage of a set of synthesized tasks (their meta): op histogram with a chi-square test
/// against uniform over the ops that were allowed, op-pair coverage, difficulty and size ranges.
Json coverage_stats(const std::vector<Task>& tasks, const std::vector<Category>& categories = {});

}  // namespace tritium::synth
