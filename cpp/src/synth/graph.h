// Private to synth: the sampled DAG (operators over tensors whose dims are shape variables), the
// sampler that draws it, and the emitter that writes it as a KernelBench task.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shapes.h"
#include "tritium/synth.h"

namespace tritium::synth {

struct TensorNode {
  enum class Source : std::uint8_t { input, positive_input, param, node };
  std::vector<int> dims;  // shape variables
  Source source = Source::node;
  Domain sign = Domain::any;  // what its values are known to be
  int consumers = 0;
};

struct OpNode {
  const OpSpec* op = nullptr;
  std::vector<int> operands;  // tensor ids
  int out = -1;
  // Attributes written as literals in forward.
  int dim = 0, dim2 = 0;
  bool keepdim = false;
  double scalar = 0, lo = 0, hi = 0;
  int power = 2;
  std::vector<int> perm;
  // Shape variables the op's module or code names ({k}, {n}, {cin}...), by placeholder.
  std::map<std::string, int> vars;
};

struct Graph {
  std::vector<TensorNode> tensors;
  std::vector<OpNode> nodes;
  ShapeProblem shapes;
  int compute = 0;  // compute operators: the difficulty
  // A traced graph (trace_graph.cc) keeps its Model's parameter order, which ModelNew must repeat:
  // each creator is a parameter tensor or the node whose module holds parameters. Empty for sampled
  // graphs: parameter tensors first, then modules in node order. Likewise Model.__init__'s argument
  // names, which sampled graphs derive from their size variables.
  struct Creator {
    bool module;
    int index;  // node index (module) or tensor id (parameter)
  };
  std::vector<Creator> init_order;
  std::vector<std::string> init_args;
};

/// Shape domains and runtime bounds of a size profile.
struct Profile {
  SizeProfile size;
  std::int64_t batch_hi, rows_lo, rows_hi, features_lo, features_hi, channels_lo, channels_hi;
  std::int64_t spatial_lo, spatial_hi, spatial3_hi, kernel_hi;
  std::int64_t max_elements;
  double min_ms, max_ms;  // estimated reference time band
};
const Profile& profile(SizeProfile size);

/// Draws ops with weights that favour those drawn least so far (coverage counts per shard).
class OpPicker {
 public:
  explicit OpPicker(const std::vector<const OpSpec*>& allowed);
  const OpSpec* pick(Rng& rng) const;
  void count(const Graph& g);
  const std::vector<const OpSpec*>& allowed() const { return allowed_; }

 private:
  std::vector<const OpSpec*> allowed_;
  std::vector<std::int64_t> counts_;
};

/// A DAG with `difficulty` compute operators, or nullopt when this draw went nowhere.
std::optional<Graph> sample_graph(int difficulty, const Profile& p, const OpPicker& picker, Rng& rng);

/// Cost of the solved graph: FLOPs, bytes, estimated ms on the profile's machine, largest tensor.
struct Estimate {
  double flops = 0, bytes = 0, est_ms = 0;
  std::int64_t max_elements = 0;
};
Estimate estimate(const Graph& g, const std::vector<std::int64_t>& values, const Profile& p);

/// Canonical hash: equal for graphs that compute the same thing on the same shapes, whatever the
/// order the nodes were drawn in.
std::uint64_t canonical_hash(const Graph& g, const std::vector<std::int64_t>& values);

/// Names of the size variables a source shows at module level (batch_size, seq_len, dim, channels,
/// size; numbered by role, in order of first use); attributes and 1s come out as literals.
class SizeNames {
 public:
  SizeNames(const Graph& g, const std::vector<std::int64_t>& values);
  std::string operator()(int v);
  std::string shape(const std::vector<int>& dims);
  std::string declarations() const;  // "name = value" lines

 private:
  const Graph& g_;
  const std::vector<std::int64_t>& values_;
  std::map<int, std::string> names_;
  std::map<std::string, int> used_;
  std::vector<int> order_;
};

/// Model.__init__ (sizes as arguments, parameters, modules); ModelNew repeats it, so both hold the
/// same parameters in the same order.
struct InitCode {
  std::vector<std::string> args;
  std::string body;
};
InitCode init_code(const Graph& g, SizeNames& sizes);

std::string module_attr(const OpNode& n, std::size_t index);                                    // "self.conv2d3"
std::string tensor_name(const Graph& g, int t, const std::vector<int>& input_order);            // x0, t5, self.p2
std::string substitute(std::string_view text, const std::map<std::string, std::string>& args);  // {name} -> value
std::string number(double x);  // a Python literal of an attribute: 0.5, 2
std::vector<std::int64_t> solved_shape(const TensorNode& t, const std::vector<std::int64_t>& values);

/// A reference Triton ModelNew for the graph and its plan (which ops go into which kernel, how).
/// `fragments` (sizes of consecutive runs of compute operators) are fusion barriers: ops of two
/// fragments never share a kernel. Empty: the whole graph is one fragment.
bool solvable(const Graph& g);  // every operator has a Triton form
std::optional<Solution> emit_solution(const Graph& g, const std::vector<std::int64_t>& values,
                                      const std::string& task_id, const std::vector<int>& fragments = {});

/// The KernelBench-format source of a solved graph, and its meta.
Task emit_task(const Graph& g, const std::vector<std::int64_t>& values, const Estimate& cost, const std::string& id,
               Json meta);

}  // namespace tritium::synth
