// From a solved graph: its cost, its canonical hash, and its KernelBench-format source.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

#include "graph.h"

namespace tritium::synth {
namespace {

using Role = ShapeProblem::Role;
using Source = TensorNode::Source;

std::int64_t numel(const TensorNode& t, const std::vector<std::int64_t>& values) {
  std::int64_t n = 1;
  for (int d : t.dims) n *= values[d];
  return n;
}

bool uses(const OpSpec& op, std::string_view placeholder) {
  return op.code.find(placeholder) != std::string_view::npos || op.module.find(placeholder) != std::string_view::npos;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
  h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}
std::uint64_t mix(std::uint64_t h, std::string_view s) {
  for (char c : s) h = mix(h, static_cast<unsigned char>(c));
  return mix(h, s.size());
}

}  // namespace

SizeNames::SizeNames(const Graph& g, const std::vector<std::int64_t>& values) : g_(g), values_(values) {}

std::string SizeNames::operator()(int v) {
  const int r = g_.shapes.representative(v);
  const Role role = g_.shapes.role(r);
  if (role == Role::attribute) return std::to_string(values_[r]);
  if (auto it = names_.find(r); it != names_.end()) return it->second;
  static constexpr std::array<const char*, 7> kBase = {"batch_size", "seq_len", "dim", "channels", "size", "", "dim"};
  const std::string base = kBase[static_cast<int>(role)];
  const int k = used_[base]++;
  std::string name = k == 0 ? base : fmt::format("{}_{}", base, k);
  names_[r] = name;
  order_.push_back(r);
  return name;
}

std::string SizeNames::shape(const std::vector<int>& dims) {
  std::vector<std::string> parts;
  for (int d : dims) parts.push_back((*this)(d));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string SizeNames::declarations() const {
  std::string out;
  for (int r : order_) out += fmt::format("{} = {}\n", names_.at(r), values_[r]);
  return out;
}

std::string number(double x) { return fmt::format("{}", x); }

std::vector<std::int64_t> solved_shape(const TensorNode& t, const std::vector<std::int64_t>& values) {
  std::vector<std::int64_t> shape;
  for (int d : t.dims) shape.push_back(values[d]);
  return shape;
}

std::string substitute(std::string_view text, const std::map<std::string, std::string>& args) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::size_t close = text[i] == '{' ? text.find('}', i) : std::string_view::npos;
    const auto it =
        close == std::string_view::npos ? args.end() : args.find(std::string(text.substr(i + 1, close - i - 1)));
    if (it == args.end()) {
      out += text[i];
    } else {
      out += it->second;
      i = close;
    }
  }
  return out;
}

InitCode init_code(const Graph& g, SizeNames& sizes) {
  InitCode init;
  auto arg = [&](int v) {  // a size the constructor needs: an argument of __init__
    const std::string name = sizes(v);
    if (g.shapes.role(v) != Role::attribute && std::find(init.args.begin(), init.args.end(), name) == init.args.end())
      init.args.push_back(name);
    return name;
  };
  auto parameter = [&](int t) {
    std::vector<std::string> dims;
    for (int d : g.tensors[t].dims) dims.push_back(arg(d));
    init.body += fmt::format("        self.p{} = nn.Parameter(torch.randn({}))\n", t, fmt::join(dims, ", "));
  };
  auto module = [&](int i) {
    const OpNode& n = g.nodes[i];
    std::map<std::string, std::string> args = {
        {"bn", std::to_string(std::max<int>(1, static_cast<int>(g.tensors[n.operands[0]].dims.size()) - 2))}};
    for (const auto& [name, v] : n.vars) args[name] = arg(v);
    init.body += fmt::format("        {} = {}\n", module_attr(n, i), substitute(n.op->module, args));
  };
  std::vector<Graph::Creator> order = g.init_order;
  if (order.empty()) {
    for (std::size_t t = 0; t < g.tensors.size(); ++t)
      if (g.tensors[t].source == Source::param) order.push_back({false, static_cast<int>(t)});
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
      if (!g.nodes[i].op->module.empty()) order.push_back({true, static_cast<int>(i)});
  }
  for (const auto& c : order) c.module ? module(c.index) : parameter(c.index);
  if (!g.init_args.empty()) init.args = g.init_args;
  return init;
}

std::string module_attr(const OpNode& n, std::size_t index) { return fmt::format("self.{}{}", n.op->name, index); }

std::string tensor_name(const Graph& g, int t, const std::vector<int>& input_order) {
  if (g.tensors[t].source == Source::param) return fmt::format("self.p{}", t);
  if (g.tensors[t].source == Source::node) return fmt::format("t{}", t);
  return fmt::format("x{}", std::find(input_order.begin(), input_order.end(), t) - input_order.begin());
}

Estimate estimate(const Graph& g, const std::vector<std::int64_t>& values, const Profile& p) {
  const bool cpu = p.size == SizeProfile::cpu;
  const double dense_rate = cpu ? 2e10 : 4e13, other_rate = cpu ? 2e9 : 2e13, byte_rate = cpu ? 5e9 : 4e12;
  const double overhead_s = cpu ? 5e-6 : 4e-6;
  Estimate c;
  for (const auto& t : g.tensors) c.max_elements = std::max(c.max_elements, numel(t, values));
  for (const auto& n : g.nodes) {
    const double out = static_cast<double>(numel(g.tensors[n.out], values));
    const double in = static_cast<double>(numel(g.tensors[n.operands[0]], values));
    double bytes = out, flops = 0;
    for (int t : n.operands) bytes += static_cast<double>(numel(g.tensors[t], values));
    auto var = [&](const char* name) { return static_cast<double>(values[n.vars.at(name)]); };
    const int spatial = n.op->spatial;
    switch (n.op->cost) {
      case Cost::elementwise:
        flops = n.op->flops * out;
        break;
      case Cost::per_input:
        flops = n.op->flops * in;
        break;
      case Cost::matmul: {
        const auto& a = g.tensors[n.operands[0]];
        flops = 2 * out * static_cast<double>(values[a.dims.back()]);
        break;
      }
      case Cost::conv:
      case Cost::conv_transpose: {
        const double window = std::pow(var("k"), spatial) / var("groups");
        flops = 2 * window * (n.op->cost == Cost::conv ? out * var("cin") : in * var("cout"));
        bytes += var("cin") * var("cout") * window;
        break;
      }
      case Cost::window:
        flops = out * std::pow(var("k"), spatial);
        break;
      case Cost::none:
        break;
    }
    const bool dense = n.op->cost == Cost::matmul || n.op->cost == Cost::conv || n.op->cost == Cost::conv_transpose;
    c.flops += flops;
    c.bytes += 4 * bytes;
    c.est_ms += 1e3 * (flops / (dense ? dense_rate : other_rate) + 4 * bytes / byte_rate + overhead_s);
  }
  return c;
}

std::uint64_t canonical_hash(const Graph& g, const std::vector<std::int64_t>& values) {
  std::vector<std::uint64_t> h(g.tensors.size());
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].source == Source::node) continue;
    std::uint64_t x = mix(0, static_cast<std::uint64_t>(g.tensors[t].source));
    for (int d : g.tensors[t].dims) x = mix(x, static_cast<std::uint64_t>(values[d]));
    h[t] = x;
  }
  std::set<std::uint64_t> outputs;
  for (const auto& n : g.nodes) {
    const OpSpec& op = *n.op;
    std::uint64_t x = mix(0, op.name);
    if (uses(op, "{dim}")) x = mix(x, static_cast<std::uint64_t>(n.dim));
    if (uses(op, "{dim2}")) x = mix(x, static_cast<std::uint64_t>(n.dim2));
    if (uses(op, "{keepdim}")) x = mix(x, static_cast<std::uint64_t>(n.keepdim));
    if (uses(op, "{scalar}")) x = mix(x, number(n.scalar));
    if (uses(op, "{power}")) x = mix(x, static_cast<std::uint64_t>(n.power));
    if (uses(op, "{lo}")) x = mix(x, number(n.lo) + number(n.hi));
    for (int i : n.perm) x = mix(x, static_cast<std::uint64_t>(i));
    for (const auto& [name, v] : n.vars) x = mix(mix(x, name), static_cast<std::uint64_t>(values[v]));
    std::vector<std::uint64_t> operands;
    for (int t : n.operands) operands.push_back(h[t]);
    const bool commutative = op.name == "add" || op.name == "mul" || op.name == "maximum" || op.name == "minimum";
    if (commutative) std::sort(operands.begin(), operands.end());
    for (auto o : operands) x = mix(x, o);
    h[n.out] = x;
    if (g.tensors[n.out].consumers == 0) outputs.insert(x);
  }
  std::uint64_t x = 0;
  for (auto o : outputs) x = mix(x, o);
  return x;
}

Task emit_task(const Graph& g, const std::vector<std::int64_t>& values, const Estimate& cost, const std::string& id,
               Json meta) {
  SizeNames sizes(g, values);
  std::vector<int> inputs, outputs;
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const auto source = g.tensors[t].source;
    if (source == Source::input || source == Source::positive_input) inputs.push_back(static_cast<int>(t));
    if (source == Source::node && g.tensors[t].consumers == 0) outputs.push_back(static_cast<int>(t));
  }
  const InitCode init = init_code(g, sizes);
  std::string forward;
  std::vector<std::string> op_names;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const OpNode& n = g.nodes[i];
    const OpSpec& op = *n.op;
    op_names.emplace_back(op.name);
    const std::string attr = module_attr(n, i);
    std::map<std::string, std::string> args = {
        {"0", tensor_name(g, n.operands[0], inputs)},
        {"m", attr},
        {"dim", std::to_string(n.dim)},
        {"dim2", std::to_string(n.dim2)},
        {"keepdim", n.keepdim ? "True" : "False"},
        {"scalar", number(n.scalar)},
        {"power", std::to_string(n.power)},
        {"lo", number(n.lo)},
        {"hi", number(n.hi)},
        {"bn", std::to_string(std::max<int>(1, static_cast<int>(g.tensors[n.operands[0]].dims.size()) - 2))}};
    if (n.operands.size() > 1) args["1"] = tensor_name(g, n.operands[1], inputs);
    std::vector<std::string> perm;
    for (int d : n.perm) perm.push_back(std::to_string(d));
    args["dims"] = fmt::format("{}", fmt::join(perm, ", "));
    for (const auto& [name, v] : n.vars) args[name] = std::to_string(values[v]);
    forward += fmt::format("        t{} = {}\n", n.out, substitute(op.code, args));
  }
  std::vector<std::string> input_names, input_exprs, output_names;
  for (std::size_t j = 0; j < inputs.size(); ++j) {
    const auto& t = g.tensors[inputs[j]];
    input_names.push_back(fmt::format("x{}", j));
    input_exprs.push_back(t.source == Source::positive_input ? fmt::format("torch.rand({}) + 0.5", sizes.shape(t.dims))
                                                             : fmt::format("torch.randn({})", sizes.shape(t.dims)));
  }
  for (int t : outputs) output_names.push_back(fmt::format("t{}", t));

  Json shapes = {{"inputs", Json::array()}, {"outputs", Json::array()}};
  for (int t : inputs) shapes["inputs"].push_back(solved_shape(g.tensors[t], values));
  for (int t : outputs) shapes["outputs"].push_back(solved_shape(g.tensors[t], values));
  const std::string declarations = sizes.declarations();
  std::string source = fmt::format(
      "\"\"\"Synthesized by tritium synth (seed {}, index {}): {} compute operator{}.\n\n{}\n\"\"\"\n\n"
      "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
      "class Model(nn.Module):\n    def __init__(self{}{}):\n        super().__init__()\n{}\n"
      "    def forward(self, {}):\n{}        return {}\n\n\n{}\n\n"
      "def get_inputs():\n    return [{}]\n\n\n"
      "def get_init_inputs():\n    return [{}]\n",
      meta.value("seed", std::uint64_t{0}), meta.value("index", std::uint64_t{0}), g.compute, g.compute == 1 ? "" : "s",
      fmt::join(op_names, " -> "), init.args.empty() ? "" : ", ", fmt::join(init.args, ", "), init.body,
      fmt::join(input_names, ", "), forward, fmt::join(output_names, ", "), declarations, fmt::join(input_exprs, ", "),
      fmt::join(init.args, ", "));
  meta["ops"] = op_names;
  meta["difficulty"] = g.compute;
  meta["shapes"] = std::move(shapes);
  meta["flops"] = cost.flops;
  meta["bytes"] = cost.bytes;
  meta["est_ms"] = cost.est_ms;
  meta["hash"] = fmt::format("{:016x}", canonical_hash(g, values));
  Task task;
  task.id = id;
  task.source = std::move(source);
  task.origin = id;
  task.level = g.compute == 1 ? 1 : 2;
  task.meta = std::move(meta);
  return task;
}

}  // namespace tritium::synth
