// A traced task's DAG (python/tritium/runner/trace.py) as a synth Graph, so the Triton emitter can
// write its ModelNew: every dimension is a constant, parameters are created in the Model's order,
// and __init__ takes the Model's argument names.
#include <fmt/format.h>

#include <algorithm>

#include "graph.h"

namespace tritium::synth {

struct TaskGraph::Impl {
  Graph graph;
  std::vector<std::int64_t> values;
};

namespace {

using Source = TensorNode::Source;

class Builder {
 public:
  Builder(Graph& g, std::vector<std::int64_t>& values) : g_(g), values_(values) {}

  std::optional<Error> build(const Json& trace) {
    for (const auto& shape : trace.value("inputs", Json::array())) inputs_.push_back(tensor(shape, Source::input));
    for (const auto& p : trace.value("param_tensors", Json::array())) {
      params_.push_back(tensor(p.at("shape"), Source::param));
      creators_.emplace_back(p.at("init").get<int>(), Graph::Creator{false, params_.back()});
    }
    for (const auto& n : trace.value("nodes", Json::array()))
      if (auto error = node(n)) return error;
    std::stable_sort(creators_.begin(), creators_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& c : creators_) g_.init_order.push_back(c.second);
    g_.init_args = trace.value("init_args", std::vector<std::string>{});
    return std::nullopt;
  }

 private:
  int dim(std::int64_t value) {
    const int v = g_.shapes.constant(value);
    values_.resize(g_.shapes.size());
    values_[v] = value;
    return v;
  }

  int tensor(const Json& shape, Source source) {
    TensorNode t;
    for (const auto& d : shape) t.dims.push_back(dim(d.get<std::int64_t>()));
    t.source = source;
    g_.tensors.push_back(std::move(t));
    return static_cast<int>(g_.tensors.size()) - 1;
  }

  // {"input": i} | {"param": j} | {"node": k}: the tensor it names, or -1.
  int operand(const Json& ref) const {
    auto pick = [&](const char* key, const std::vector<int>& from) {
      const int i = ref.value(key, -1);
      return i >= 0 && i < static_cast<int>(from.size()) ? from[i] : -1;
    };
    if (ref.contains("input")) return pick("input", inputs_);
    return ref.contains("param") ? pick("param", params_) : pick("node", outs_);
  }

  std::optional<Error> node(const Json& j) {
    const std::string name = j.value("op", std::string());
    OpNode n;
    n.op = find_op(name);
    if (!n.op || n.op->triton.empty())
      return Error{fmt::format("traced operator '{}' has no Triton form in the emitter", name)};
    for (const auto& ref : j.value("operands", Json::array())) n.operands.push_back(operand(ref));
    if (static_cast<int>(n.operands.size()) != n.op->arity || std::count(n.operands.begin(), n.operands.end(), -1))
      return Error{
          fmt::format("traced node {} ({}): bad operands {}", outs_.size(), name, j.value("operands", Json()).dump())};
    const Json attrs = j.value("attrs", Json::object());
    n.dim = attrs.value("dim", 0);
    n.dim2 = attrs.value("dim2", 0);
    n.perm = attrs.value("perm", std::vector<int>{});
    n.keepdim = attrs.value("keepdim", false);
    n.scalar = attrs.value("scalar", 0.0);
    n.lo = attrs.value("lo", 0.0);
    n.hi = attrs.value("hi", 0.0);
    n.power = attrs.value("power", 2);
    std::map<std::string, std::string> placeholders;
    const Json vars = attrs.value("vars", Json::object());
    for (const auto& [var, value] : vars.items()) {
      n.vars[var] = dim(value.get<std::int64_t>());
      placeholders[var] = "";
    }
    if (substitute(n.op->module, placeholders).find('{') != std::string::npos)
      return Error{
          fmt::format("traced node {} ({}): its module needs sizes the trace does not give", outs_.size(), name)};
    for (int t : n.operands) ++g_.tensors[t].consumers;
    n.out = tensor(j.at("shape"), Source::node);
    if (j.contains("init"))
      creators_.emplace_back(j["init"].get<int>(), Graph::Creator{true, static_cast<int>(g_.nodes.size())});
    g_.compute += n.op->compute ? 1 : 0;
    outs_.push_back(n.out);
    g_.nodes.push_back(std::move(n));
    return std::nullopt;
  }

  Graph& g_;
  std::vector<std::int64_t>& values_;
  std::vector<int> inputs_, params_, outs_;
  std::vector<std::pair<int, Graph::Creator>> creators_;  // (the Model's order, creator)
};

}  // namespace

TaskGraph::TaskGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TaskGraph::TaskGraph(TaskGraph&&) noexcept = default;
TaskGraph& TaskGraph::operator=(TaskGraph&&) noexcept = default;
TaskGraph::~TaskGraph() = default;
int TaskGraph::compute_ops() const { return impl_->graph.compute; }

Result<TaskGraph> graph_from_trace(const Json& trace) {
  if (!trace.is_object() || !trace.value("ok", false))
    return Error{fmt::format("the task could not be traced: {}",
                             trace.is_object() ? trace.value("error", trace.dump()) : trace.dump())};
  std::vector<std::string> unmapped;
  for (const auto& u : trace.value("unmapped", Json::array()))
    unmapped.push_back(fmt::format("{} ({}): {}", u.value("name", "?"), u.value("target", "?"), u.value("why", "?")));
  if (!unmapped.empty())
    return Error{fmt::format("{} traced node{} without a catalog operator, so no kernel: {}", unmapped.size(),
                             unmapped.size() == 1 ? "" : "s", fmt::join(unmapped, "; "))};
  auto impl = std::make_unique<TaskGraph::Impl>();
  try {
    if (auto error = Builder(impl->graph, impl->values).build(trace)) return *error;
  } catch (const Json::exception& e) {
    return Error{fmt::format("malformed trace: {}", e.what())};
  }
  if (impl->graph.nodes.empty()) return Error{"the trace has no operator"};
  return TaskGraph(std::move(impl));
}

Solution emit_fragments(const TaskGraph& graph, const std::vector<int>& fragments, const std::string& task_id) {
  // Every node has a Triton form (graph_from_trace checked), so the emitter always answers.
  return *emit_solution(graph.impl_->graph, graph.impl_->values, task_id, fragments);
}

}  // namespace tritium::synth
