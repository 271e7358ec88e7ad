// The reference Triton solution of a solved graph, with its plan. Elementwise operators fuse into
// one kernel per chain (every intermediate consumed once, by the next op, at the same shape);
// reductions, softmax and norms get a row kernel each; matmul-like ops a tiled tl.dot kernel; shape
// ops stay views (or glue copies). A graph with any other operator gets no solution.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "graph.h"

namespace tritium::synth {
namespace {

using Source = TensorNode::Source;

bool is_elementwise(const OpNode& n) {
  const auto t = n.op->triton;
  return !t.empty() && t != "row" && t != "matmul" && t != "view";
}

constexpr std::string_view kElementwiseHelper = R"PY(
def _ew_layout(inputs):
    """Output, size, padded shape and broadcast strides of a fused elementwise kernel's launch."""
    shape = torch.broadcast_shapes(*[x.shape for x in inputs])
    out = torch.empty(shape, device=inputs[0].device, dtype=torch.float32)
    dims = [1] * (5 - len(shape)) + list(shape)
    strides = []
    for x in inputs:
        s = list(x.expand(shape).stride())
        strides += [0] * (5 - len(s)) + s
    return out, out.numel(), dims[1:], strides


)PY";

constexpr std::string_view kRowHelper = R"PY(
def _rows_layout(x, dim, keep):
    """A row kernel's launch along `dim`: keep is "same" (softmax, norms), True or False (reductions).
    Each program takes BP rows at once, each row whole in registers."""
    x = x.contiguous()
    size = x.shape[dim]
    inner = 1
    for s in x.shape[dim + 1:]:
        inner *= s
    shape = x.shape if keep == "same" else x.shape[:dim] + ((1,) if keep else ()) + x.shape[dim + 1:]
    out = torch.empty(shape, device=x.device, dtype=x.dtype)
    block = triton.next_power_of_2(size)
    rows_per_program = max(1, min(64, 4096 // block))
    return x, out, x.numel() // size, size, inner, block, rows_per_program


)PY";

constexpr std::string_view kMatmulHelper = R"PY(
@triton.jit
def _mm_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
               HAS_BIAS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n, batch = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + batch * sab + rm[:, None] * sam + (k0 + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + batch * sbb + (k0 + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(c_ptr + batch * scb + rm[:, None] * scm + rn[None, :] * scn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _mm_layout(a, b):
    """a (..., M, K) @ b (K, N), or a (B, M, K) @ b (B, K, N), as batched 3-D operands and output."""
    batched = b.dim() == 3
    a3 = a if batched else a.reshape(1, -1, a.shape[-1])
    b3 = b if batched else b.unsqueeze(0)
    batch, m, k = a3.shape
    n = b3.shape[-1]
    c = torch.empty((batch, m, n), device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(m, 32), triton.cdiv(n, 32), batch)
    strides = (a3.stride(0), a3.stride(1), a3.stride(2), b3.stride(0) if batched else 0, b3.stride(1), b3.stride(2),
               c.stride(0), c.stride(1), c.stride(2))
    shape = (batch, m, n) if batched else (*a.shape[:-1], n)
    return a3, b3, c, grid, (m, n, k), strides, shape


)PY";

constexpr std::string_view kCatHelper = R"PY(
@triton.jit
def _cat_kernel(a_ptr, b_ptr, out_ptr, n, wa, wb, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    row = offs // (wa + wb)
    col = offs % (wa + wb)
    va = tl.load(a_ptr + row * wa + col, mask=mask & (col < wa), other=0.0)
    vb = tl.load(b_ptr + row * wb + col - wa, mask=mask & (col >= wa), other=0.0)
    tl.store(out_ptr + offs, tl.where(col < wa, va, vb), mask=mask)


def _cat_layout(a, b, dim):
    """Both operands contiguous, the output, and the widths each contributes per outer index."""
    a, b = a.contiguous(), b.contiguous()
    shape = list(a.shape)
    shape[dim] += b.shape[dim]
    out = torch.empty(shape, device=a.device, dtype=a.dtype)
    inner = 1
    for s in a.shape[dim + 1:]:
        inner *= s
    return a, b, out, out.numel(), a.shape[dim] * inner, b.shape[dim] * inner


)PY";

// The row kernel of one operator: the row is held in registers (BLOCK >= its length).
struct RowKernel {
  const char* fill;  // what masked lanes load
  const char* body;  // computes from x (the row), mask, offs, R; stores to out_ptr
};

const RowKernel* row_kernel(std::string_view op) {
  static const std::map<std::string_view, RowKernel> kRows = {
      {"sum", {"0.0", "    tl.store(out_ptr + p, tl.sum(x, axis=1), mask=pmask)\n"}},
      {"mean", {"0.0", "    tl.store(out_ptr + p, tl.sum(x, axis=1) / R, mask=pmask)\n"}},
      {"max", {"-float(\"inf\")", "    tl.store(out_ptr + p, tl.max(x, axis=1), mask=pmask)\n"}},
      {"amax", {"-float(\"inf\")", "    tl.store(out_ptr + p, tl.max(x, axis=1), mask=pmask)\n"}},
      {"min", {"float(\"inf\")", "    tl.store(out_ptr + p, tl.min(x, axis=1), mask=pmask)\n"}},
      {"amin", {"float(\"inf\")", "    tl.store(out_ptr + p, tl.min(x, axis=1), mask=pmask)\n"}},
      {"var", {"0.0", "    d = tl.where(mask, x - (tl.sum(x, axis=1) / R)[:, None], 0.0)\n"
                      "    tl.store(out_ptr + p, tl.sum(d * d, axis=1) / (R - 1), mask=pmask)\n"}},
      {"std", {"0.0", "    d = tl.where(mask, x - (tl.sum(x, axis=1) / R)[:, None], 0.0)\n"
                      "    tl.store(out_ptr + p, tl.sqrt(tl.sum(d * d, axis=1) / (R - 1)), mask=pmask)\n"}},
      {"logsumexp", {"-float(\"inf\")", "    m = tl.max(x, axis=1)\n"
                                         "    s = tl.sum(tl.exp(x - m[:, None]), axis=1)\n"
                                         "    tl.store(out_ptr + p, m + tl.log(s), mask=pmask)\n"}},
      {"norm", {"0.0", "    tl.store(out_ptr + p, tl.sqrt(tl.sum(x * x, axis=1)), mask=pmask)\n"}},
      {"softmax", {"-float(\"inf\")", "    e = tl.exp(x - tl.max(x, axis=1)[:, None])\n"
                                       "    tl.store(out_ptr + offs, e / tl.sum(e, axis=1)[:, None], mask=mask)\n"}},
      {"log_softmax", {"-float(\"inf\")", "    m = tl.max(x, axis=1)[:, None]\n"
                                           "    s = tl.sum(tl.exp(x - m), axis=1)[:, None]\n"
                                           "    tl.store(out_ptr + offs, x - m - tl.log(s), mask=mask)\n"}},
      {"layer_norm", {"0.0", "    d = tl.where(mask, x - (tl.sum(x, axis=1) / R)[:, None], 0.0)\n"
                             "    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / R + 1e-5)\n"
                             "    w = tl.load(w_ptr + r, mask=r < R, other=0.0)\n"
                             "    b = tl.load(b_ptr + r, mask=r < R, other=0.0)\n"
                             "    tl.store(out_ptr + offs, d * rstd[:, None] * w[None, :] + b[None, :], mask=mask)\n"}},
      {"rms_norm", {"0.0", "    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / R + 1e-6)\n"
                           "    w = tl.load(w_ptr + r, mask=r < R, other=0.0)\n"
                           "    tl.store(out_ptr + offs, x * rstd[:, None] * w[None, :], mask=mask)\n"}},
  };
  const auto it = kRows.find(op);
  return it == kRows.end() ? nullptr : &it->second;
}

std::string row_kernel_source(std::string_view op, const RowKernel& k) {
  return fmt::format(
      "@triton.jit\ndef _row_{}(x_ptr, out_ptr, w_ptr, b_ptr, rows, R, inner, BLOCK: tl.constexpr, BP: tl.constexpr):\n"
      "    p = tl.program_id(0) * BP + tl.arange(0, BP)\n"
      "    r = tl.arange(0, BLOCK)\n"
      "    pmask = p < rows\n"
      "    mask = pmask[:, None] & (r[None, :] < R)\n"
      "    offs = ((p // inner) * R * inner + p % inner)[:, None] + r[None, :] * inner\n"
      "    x = tl.load(x_ptr + offs, mask=mask, other={})\n{}\n\n",
      op, k.fill, k.body);
}

// Elementwise nodes grouped by the node whose output they feed into (the group's root).
std::vector<int> fusion_roots(const Graph& g, const std::vector<std::int64_t>& values) {
  std::vector<int> producer(g.tensors.size(), -1), root(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) producer[g.nodes[i].out] = static_cast<int>(i);
  auto shape = [&](int t) { return solved_shape(g.tensors[t], values); };
  for (int i = static_cast<int>(g.nodes.size()) - 1; i >= 0; --i) {
    root[i] = i;
    const OpNode& n = g.nodes[i];
    if (!is_elementwise(n) || g.tensors[n.out].consumers != 1) continue;
    for (int j = i + 1; j < static_cast<int>(g.nodes.size()); ++j) {
      const OpNode& c = g.nodes[j];
      const bool consumes = std::find(c.operands.begin(), c.operands.end(), n.out) != c.operands.end();
      if (consumes && is_elementwise(c) && shape(c.out) == shape(n.out)) root[i] = root[j];
      if (consumes) break;
    }
  }
  return root;
}

struct Writer {
  const Graph& g;
  const std::vector<std::int64_t>& values;
  std::vector<int> inputs;
  std::string kernels, forward;
  std::vector<std::string> plan;
  std::set<std::string> row_kernels;
  std::set<std::string_view> helpers;

  std::string name(int t) const { return tensor_name(g, t, inputs); }

  std::map<std::string, std::string> attributes(const OpNode& n) const {
    std::string powered = "{0}";
    for (int i = 1; i < n.power; ++i) powered += " * {0}";
    return {{"scalar", number(n.scalar)}, {"lo", number(n.lo)}, {"hi", number(n.hi)}, {"powered", powered}};
  }

  void elementwise_group(const std::vector<int>& members) {
    std::set<int> produced;
    for (int i : members) produced.insert(g.nodes[i].out);
    std::vector<int> external;
    for (int i : members)
      for (int t : g.nodes[i].operands)
        if (!produced.count(t) && std::find(external.begin(), external.end(), t) == external.end()) external.push_back(t);
    const int root = g.nodes[members.back()].out;
    std::string body, ops, params = "out_ptr";
    for (std::size_t j = 0; j < external.size(); ++j) params += fmt::format(", in{}_ptr", j);
    params += ", n, S1, S2, S3, S4";
    for (std::size_t j = 0; j < external.size(); ++j) params += fmt::format(", s{0}_0, s{0}_1, s{0}_2, s{0}_3, s{0}_4", j);
    for (std::size_t j = 0; j < external.size(); ++j)
      body += fmt::format(
          "    a{0} = tl.load(in{0}_ptr + i0 * s{0}_0 + i1 * s{0}_1 + i2 * s{0}_2 + i3 * s{0}_3 + i4 * s{0}_4, "
          "mask=mask, other=1.0)\n", j);
    auto value = [&](int t) {
      const auto it = std::find(external.begin(), external.end(), t);
      return it == external.end() ? fmt::format("v{}", t) : fmt::format("a{}", it - external.begin());
    };
    for (int i : members) {
      const OpNode& n = g.nodes[i];
      auto args = attributes(n);
      std::string expr = substitute(n.op->triton, args);
      args = {{"0", value(n.operands[0])}};
      if (n.operands.size() > 1) args["1"] = value(n.operands[1]);
      body += fmt::format("    v{} = {}\n", n.out, substitute(expr, args));
      ops += (ops.empty() ? "" : " -> ") + std::string(n.op->name);
    }
    const std::string kernel = fmt::format("_ew_{}", root);
    kernels += fmt::format(
        "@triton.jit\ndef {}({}, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    i4 = offs % S4\n    rest = offs // S4\n    i3 = rest % S3\n    rest = rest // S3\n"
        "    i2 = rest % S2\n    rest = rest // S2\n    i1 = rest % S1\n    i0 = rest // S1\n"
        "{}    tl.store(out_ptr + offs, v{}, mask=mask)\n\n\n",
        kernel, params, body, root);
    std::vector<std::string> args;
    for (int t : external) args.push_back(name(t));
    const std::string ins = fmt::format("{}", fmt::join(args, ", "));
    forward += fmt::format(
        "        t{0}, n, dims, strides = _ew_layout([{2}])\n"
        "        {1}[(triton.cdiv(n, 1024),)](t{0}, {2}, n, *dims, *strides, BLOCK=1024)\n", root, kernel, ins);
    helpers.insert(kElementwiseHelper);
    plan.push_back(fmt::format(
        "`{}`: {} fused in one elementwise kernel ({}); one program per 1024 output elements, operands read "
        "through broadcast strides, intermediates kept in registers",
        kernel, ops, members.size() == 1 ? "a single op" : fmt::format("{} ops, no intermediate written", members.size())));
  }

  void row(const OpNode& n, std::size_t index) {
    const std::string op(n.op->name);
    if (row_kernels.insert(op).second) kernels += row_kernel_source(op, *row_kernel(op));
    const bool norm = op == "layer_norm" || op == "rms_norm";
    const bool same = norm || op == "softmax" || op == "log_softmax";
    const int dim = norm ? static_cast<int>(g.tensors[n.operands[0]].dims.size()) - 1 : n.dim;
    helpers.insert(kRowHelper);
    const std::string x = fmt::format("rows{}", n.out), m = module_attr(n, index);
    const std::string w = norm ? m + ".weight" : x, b = op == "layer_norm" ? m + ".bias" : x;
    forward += fmt::format(
        "        {0}, t{1}, rows, size, inner, block, bp = _rows_layout({2}, {3}, {4})\n"
        "        _row_{5}[(triton.cdiv(rows, bp),)]({0}, t{1}, {6}, {7}, rows, size, inner, BLOCK=block, BP=bp)\n",
        x, n.out, name(n.operands[0]), dim, same ? "\"same\"" : (n.keepdim ? "True" : "False"), op, w, b);
    plan.push_back(fmt::format("`_row_{}`: a row kernel for {} along dim {}; each program a tile of rows, every row whole in "
                               "registers (BLOCK = next power of two of its length): one read and one write",
                               op, op, dim));
  }

  void matmul(const OpNode& n, std::size_t index) {
    const std::string m = module_attr(n, index), a = name(n.operands[0]);
    const std::string_view op = n.op->name;
    const std::string b = op == "bmm" ? name(n.operands[1]) : m + ".weight.t()";
    const bool bias = op == "linear" || op == "addmm";
    forward += fmt::format(
        "        a3, b3, c, grid, (m, n, k), strides, shape = _mm_layout({1}, {2})\n"
        "        _mm_kernel[grid](a3, b3, {3}, c, m, n, k, *strides, HAS_BIAS={4}, BM=32, BN=32, BK=32)\n"
        "        t{0} = c.reshape(shape)\n",
        n.out, a, b, bias ? m + ".bias" : "c", bias ? "True" : "False");
    helpers.insert(kMatmulHelper);
    plan.push_back(fmt::format("`_mm_kernel`: {} as 32x32 output tiles stepping K by 32, tl.dot in fp32 (IEEE, "
                               "no TF32, to meet the tolerance){}",
                               op, op == "linear" || op == "addmm" ? ", bias added in the epilogue" : ""));
  }

  void view(const OpNode& n) {
    std::map<std::string, std::string> args = {{"0", name(n.operands[0])}, {"dim", std::to_string(n.dim)},
                                               {"dim2", std::to_string(n.dim2)}};
    std::vector<std::string> perm;
    for (int d : n.perm) perm.push_back(std::to_string(d));
    args["dims"] = fmt::format("{}", fmt::join(perm, ", "));
    for (const auto& [k, v] : n.vars) args[k] = std::to_string(values[v]);
    if (n.op->name == "cat") helpers.insert(kCatHelper);
    if (n.op->name == "cat")
      forward += fmt::format(
          "        a, b, t{0}, n, wa, wb = _cat_layout({1}, {2}, {3})\n"
          "        _cat_kernel[(triton.cdiv(n, 1024),)](a, b, t{0}, n, wa, wb, BLOCK=1024)\n",
          n.out, name(n.operands[0]), name(n.operands[1]), n.dim);
    else
      forward += fmt::format("        t{} = {}\n", n.out, substitute(n.op->code, args));
  }
};

}  // namespace

bool solvable(const Graph& g) {
  return std::all_of(g.nodes.begin(), g.nodes.end(), [](const OpNode& n) { return !n.op->triton.empty(); });
}

std::optional<Solution> emit_solution(const Graph& g, const std::vector<std::int64_t>& values, const std::string& task_id) {
  if (!solvable(g)) return std::nullopt;
  Writer w{g, values, {}, {}, {}, {}, {}, {}};
  std::vector<int> outputs;
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const auto s = g.tensors[t].source;
    if (s == Source::input || s == Source::positive_input) w.inputs.push_back(static_cast<int>(t));
    if (s == Source::node && g.tensors[t].consumers == 0) outputs.push_back(static_cast<int>(t));
  }
  const auto roots = fusion_roots(g, values);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const OpNode& n = g.nodes[i];
    const auto kind = n.op->triton;
    if (is_elementwise(n)) {
      if (roots[i] != static_cast<int>(i)) continue;  // emitted with its root
      std::vector<int> members;
      for (std::size_t j = 0; j <= i; ++j)
        if (is_elementwise(g.nodes[j]) && roots[j] == static_cast<int>(i)) members.push_back(static_cast<int>(j));
      w.elementwise_group(members);
    } else if (kind == "row") {
      w.row(n, i);
    } else if (kind == "matmul") {
      w.matmul(n, i);
    } else {
      w.view(n);
    }
  }
  SizeNames sizes(g, values);
  const InitCode init = init_code(g, sizes);
  std::vector<std::string> input_names, output_names;
  for (std::size_t j = 0; j < w.inputs.size(); ++j) input_names.push_back(fmt::format("x{}", j));
  for (int t : outputs) output_names.push_back(fmt::format("t{}", t));
  std::string plan;
  for (std::size_t k = 0; k < w.plan.size(); ++k) plan += fmt::format("{}. {}.\n", k + 1, w.plan[k]);
  plan += "Shape operators stay views (a reshape copies only when the layout needs it); outputs are float32.\n";
  std::string helper_code;
  for (auto h : {kElementwiseHelper, kRowHelper, kMatmulHelper, kCatHelper})
    if (w.helpers.count(h)) helper_code += h;
  Solution s;
  s.plan = plan;
  s.code = fmt::format(
      "\"\"\"Reference Triton solution of {}, written by tritium synth.\n\n{}\"\"\"\n\n"
      "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n{}{}"
      "class ModelNew(nn.Module):\n    def __init__(self{}{}):\n        super().__init__()\n{}\n"
      "    def forward(self, {}):\n{}        return {}\n",
      task_id, plan, w.kernels, helper_code, init.args.empty() ? "" : ", ", fmt::join(init.args, ", "), init.body,
      fmt::join(input_names, ", "), w.forward, fmt::join(output_names, ", "));
  return s;
}

}  // namespace tritium::synth
