// The reference Triton solution of a solved graph, with its plan. Elementwise operators fuse into
// one kernel per chain (every intermediate consumed once, by the next op, at the same shape);
// reductions, softmax and norms get a row kernel each; matmul-like ops a tiled tl.dot kernel, whose
// epilogue runs the elementwise group that reads its output when that is legal; shape ops stay
// views (or glue copies). A graph with any other operator gets no solution.
#include <fmt/format.h>

#include <algorithm>
#include <set>

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

constexpr std::string_view kEpilogueHelper = R"PY(
def _ep_layout(shape, inputs):
    """What a matmul epilogue needs to read `inputs` per tile: the output seen as (L0, L1, L2, N)
    (an output row, batch * M + m, splits into L0, L1, L2), L1, L2 and each input's broadcast strides."""
    dims = [1] * (4 - len(shape)) + list(shape)
    strides = []
    for x in inputs:
        s = list(x.expand(shape).stride())
        strides += [0] * (4 - len(s)) + s
    return dims[1], dims[2], strides


)PY";

// The tiled tl.dot kernel: 32x32 output tiles, K in steps of 32, the bias then `epilogue` applied to
// the accumulator tile in registers, and `value` stored. `params` are what the epilogue reads.
std::string matmul_kernel_source(std::string_view name, std::string_view params, std::string_view epilogue,
                                 std::string_view value) {
  return fmt::format(R"PY(@triton.jit
def {}(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn{},
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
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    coffs = batch * scb + rm[:, None] * scm + rn[None, :] * scn
{}    tl.store(c_ptr + coffs, {}, mask=cmask)


)PY",
                     name, params, epilogue, value);
}

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
      {"var",
       {"0.0",
        "    d = tl.where(mask, x - (tl.sum(x, axis=1) / R)[:, None], 0.0)\n"
        "    tl.store(out_ptr + p, tl.sum(d * d, axis=1) / (R - 1), mask=pmask)\n"}},
      {"std",
       {"0.0",
        "    d = tl.where(mask, x - (tl.sum(x, axis=1) / R)[:, None], 0.0)\n"
        "    tl.store(out_ptr + p, tl.sqrt(tl.sum(d * d, axis=1) / (R - 1)), mask=pmask)\n"}},
      {"logsumexp",
       {"-float(\"inf\")",
        "    m = tl.max(x, axis=1)\n"
        "    s = tl.sum(tl.exp(x - m[:, None]), axis=1)\n"
        "    tl.store(out_ptr + p, m + tl.log(s), mask=pmask)\n"}},
      {"norm", {"0.0", "    tl.store(out_ptr + p, tl.sqrt(tl.sum(x * x, axis=1)), mask=pmask)\n"}},
      {"softmax",
       {"-float(\"inf\")",
        "    e = tl.exp(x - tl.max(x, axis=1)[:, None])\n"
        "    tl.store(out_ptr + offs, e / tl.sum(e, axis=1)[:, None], mask=mask)\n"}},
      {"log_softmax",
       {"-float(\"inf\")",
        "    m = tl.max(x, axis=1)[:, None]\n"
        "    s = tl.sum(tl.exp(x - m), axis=1)[:, None]\n"
        "    tl.store(out_ptr + offs, x - m - tl.log(s), mask=mask)\n"}},
      {"layer_norm",
       {"0.0",
        "    d = tl.where(mask, x - (tl.sum(x, axis=1) / R)[:, None], 0.0)\n"
        "    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / R + 1e-5)\n"
        "    w = tl.load(w_ptr + r, mask=r < R, other=0.0)\n"
        "    b = tl.load(b_ptr + r, mask=r < R, other=0.0)\n"
        "    tl.store(out_ptr + offs, d * rstd[:, None] * w[None, :] + b[None, :], mask=mask)\n"}},
      {"rms_norm",
       {"0.0",
        "    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / R + 1e-6)\n"
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

bool reads(const OpNode& n, int t) { return std::find(n.operands.begin(), n.operands.end(), t) != n.operands.end(); }

// The fragment of each node: `sizes` counts compute operators per fragment, in node order; a shape
// op goes with the compute op before it. No sizes: one fragment.
std::vector<int> fragment_of(const Graph& g, const std::vector<int>& sizes) {
  std::vector<int> fragment(g.nodes.size(), 0);
  int current = 0, left = sizes.empty() ? -1 : sizes[0];
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op->compute && left == 0 && current + 1 < static_cast<int>(sizes.size())) left = sizes[++current];
    if (g.nodes[i].op->compute) --left;
    fragment[i] = current;
  }
  return fragment;
}

// Elementwise nodes grouped by the node whose output they feed into (the group's root), within a fragment.
std::vector<int> fusion_roots(const Graph& g, const std::vector<std::int64_t>& values,
                              const std::vector<int>& fragment) {
  std::vector<int> root(g.nodes.size());
  auto shape = [&](int t) { return solved_shape(g.tensors[t], values); };
  for (int i = static_cast<int>(g.nodes.size()) - 1; i >= 0; --i) {
    root[i] = i;
    const OpNode& n = g.nodes[i];
    if (!is_elementwise(n) || g.tensors[n.out].consumers != 1) continue;
    for (int j = i + 1; j < static_cast<int>(g.nodes.size()); ++j) {
      const OpNode& c = g.nodes[j];
      if (reads(c, n.out) && is_elementwise(c) && shape(c.out) == shape(n.out) && fragment[i] == fragment[j])
        root[i] = root[j];
      if (reads(c, n.out)) break;
    }
  }
  return root;
}

// Per matmul-like node, the root of the elementwise group that runs in its epilogue, or -1: the
// group of the first elementwise reader of its output. The group's output must have the matmul
// output's shape (a tile of one is a tile of the other) and the group host no other epilogue. The
// fused kernel runs at the root's place, so every reader of the matmul output outside the group
// must come after the root; that output is then stored too. The group must lie in the matmul's fragment.
std::vector<int> epilogue_hosts(const Graph& g, const std::vector<int>& roots, const std::vector<std::int64_t>& values,
                                const std::vector<int>& fragment) {
  const int count = static_cast<int>(g.nodes.size());
  auto shape = [&](int t) { return solved_shape(g.tensors[t], values); };
  std::vector<int> host(count, -1);
  std::set<int> taken;
  for (int m = 0; m < count; ++m) {
    const int t = g.nodes[m].out;
    if (g.nodes[m].op->triton != "matmul") continue;
    int r = -1;
    for (int j = m + 1; j < count && r < 0; ++j)
      if (reads(g.nodes[j], t) && is_elementwise(g.nodes[j])) r = roots[j];
    if (r < 0 || taken.count(r) || shape(t) != shape(g.nodes[r].out) || fragment[r] != fragment[m]) continue;
    bool legal = true;
    for (int j = m + 1; j < count; ++j) legal = legal && (!reads(g.nodes[j], t) || roots[j] == r || j > r);
    if (!legal) continue;
    host[m] = r;
    taken.insert(r);
  }
  return host;
}

struct Writer {
  const Graph& g;
  const std::vector<std::int64_t>& values;
  std::vector<int> inputs;
  std::string kernels, forward;
  std::vector<std::string> plan;
  std::set<std::string> shared_kernels;  // row kernels and _mm_kernel, written once
  std::set<std::string_view> helpers;

  std::string name(int t) const { return tensor_name(g, t, inputs); }

  std::map<std::string, std::string> attributes(const OpNode& n) const {
    std::string powered = "{0}";
    for (int i = 1; i < n.power; ++i) powered += " * {0}";
    return {{"scalar", number(n.scalar)}, {"lo", number(n.lo)}, {"hi", number(n.hi)}, {"powered", powered}};
  }

  // The tensors a group reads from memory, in order of first use; `acc` is read from registers instead.
  std::vector<int> external_operands(const std::vector<int>& members, int acc = -1) const {
    std::set<int> produced = {acc};
    for (int i : members) produced.insert(g.nodes[i].out);
    std::vector<int> external;
    for (int i : members)
      for (int t : g.nodes[i].operands)
        if (!produced.count(t) && std::find(external.begin(), external.end(), t) == external.end())
          external.push_back(t);
    return external;
  }

  std::string names(const std::vector<int>& tensors) const {
    std::vector<std::string> out;
    for (int t : tensors) out.push_back(name(t));
    return fmt::format("{}", fmt::join(out, ", "));
  }

  // Kernel parameters of a group's operands: their pointers, `sizes`, then `rank` broadcast strides each.
  static std::string operand_params(std::size_t count, std::string_view sizes, int rank) {
    std::string params;
    for (std::size_t j = 0; j < count; ++j) params += fmt::format(", in{}_ptr", j);
    params += sizes;
    for (std::size_t j = 0; j < count; ++j)
      for (int d = 0; d < rank; ++d) params += fmt::format(", s{}_{}", j, d);
    return params;
  }

  // A group's body: a{j} loads operand j at `offset` ({0} stands for j), then v{t} for each member.
  std::string group_body(const std::vector<int>& members, const std::vector<int>& external, std::string_view offset,
                         std::string_view mask) const {
    std::string body;
    for (std::size_t j = 0; j < external.size(); ++j)
      body += fmt::format("    a{} = tl.load(in{}_ptr + {}, mask={}, other=1.0)\n", j, j,
                          fmt::format(fmt::runtime(offset), j), mask);
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
    }
    return body;
  }

  std::string op_names(const std::vector<int>& members) const {
    std::string ops;
    for (int i : members) ops += (ops.empty() ? "" : " -> ") + std::string(g.nodes[i].op->name);
    return ops;
  }

  void elementwise_group(const std::vector<int>& members) {
    const auto external = external_operands(members);
    const int root = g.nodes[members.back()].out;
    const std::string kernel = fmt::format("_ew_{}", root);
    kernels += fmt::format(
        "@triton.jit\ndef {}(out_ptr{}, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    i4 = offs % S4\n    rest = offs // S4\n    i3 = rest % S3\n    rest = rest // S3\n"
        "    i2 = rest % S2\n    rest = rest // S2\n    i1 = rest % S1\n    i0 = rest // S1\n"
        "{}    tl.store(out_ptr + offs, v{}, mask=mask)\n\n\n",
        kernel, operand_params(external.size(), ", n, S1, S2, S3, S4", 5),
        group_body(members, external, "i0 * s{0}_0 + i1 * s{0}_1 + i2 * s{0}_2 + i3 * s{0}_3 + i4 * s{0}_4", "mask"),
        root);
    // One name for the block size of the grid and of the kernel: tuning it keeps them in step.
    forward += fmt::format(
        "        t{0}, n, dims, strides = _ew_layout([{2}])\n"
        "        BLOCK = 1024\n"
        "        {1}[(triton.cdiv(n, BLOCK),)](t{0}, {2}, n, *dims, *strides, BLOCK=BLOCK)\n",
        root, kernel, names(external));
    helpers.insert(kElementwiseHelper);
    plan.push_back(fmt::format(
        "`{}`: {} fused in one elementwise kernel ({}); one program per 1024 output elements, operands read "
        "through broadcast strides, intermediates kept in registers",
        kernel, op_names(members),
        members.size() == 1 ? "a single op" : fmt::format("{} ops, no intermediate written", members.size())));
  }

  void row(const OpNode& n, std::size_t index) {
    const std::string op(n.op->name);
    if (shared_kernels.insert("_row_" + op).second) kernels += row_kernel_source(op, *row_kernel(op));
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
    plan.push_back(
        fmt::format("`_row_{}`: a row kernel for {} along dim {}; each program a tile of rows, every row whole in "
                    "registers (BLOCK = next power of two of its length): one read and one write",
                    op, op, dim));
  }

  // How a matmul that makes tensor t ends: its kernel, extra launch arguments, lines after the launch
  // and what the plan adds.
  struct Ending {
    std::string kernel, args, after, note;
  };

  Ending plain_ending(int t) {
    if (shared_kernels.insert("_mm_kernel").second) kernels += matmul_kernel_source("_mm_kernel", "", "", "acc");
    return {"_mm_kernel", "", fmt::format("        t{} = c.reshape(shape)\n", t), ""};
  }

  // The elementwise group `members`, which reads t, runs on the accumulator tile in a kernel of this
  // matmul's own; t is stored as well only when a kernel outside the group reads it.
  Ending fused_ending(int t, const std::vector<int>& members) {
    const int root = g.nodes[members.back()].out;
    const auto external = external_operands(members, t);
    int reads_here = 0;
    for (int i : members)
      for (int operand : g.nodes[i].operands) reads_here += operand == t;
    const bool keep = g.tensors[t].consumers > reads_here;
    Ending e{fmt::format("_mm_{}", root), "", fmt::format("        t{} = c.reshape(shape)\n", root), ""};
    std::string params, body;
    if (keep) {
      forward += fmt::format("        t{} = torch.empty_like(c)\n", t);
      params = ", mm_ptr";
      e.args = fmt::format(", t{}", t);
      e.after += fmt::format("        t{0} = t{0}.reshape(shape)\n", t);
      body = "    tl.store(mm_ptr + coffs, acc, mask=cmask)\n";
    }
    if (!external.empty()) {
      forward += fmt::format("        l1, l2, ep_strides = _ep_layout(shape, [{}])\n", names(external));
      e.args += fmt::format(", {}, l1, l2, *ep_strides", names(external));
      params += operand_params(external.size(), ", L1, L2", 4);
      body +=
          "    row = batch * M + rm\n    d2 = (row % L2)[:, None]\n    d1 = (row // L2 % L1)[:, None]\n"
          "    d0 = (row // L2 // L1)[:, None]\n";
      helpers.insert(kEpilogueHelper);
    }
    body += fmt::format("    v{} = acc\n", t) +
            group_body(members, external, "d0 * s{0}_0 + d1 * s{0}_1 + d2 * s{0}_2 + rn[None, :] * s{0}_3", "cmask");
    kernels += matmul_kernel_source(e.kernel, params, body, fmt::format("v{}", root));
    const char* loads =
        external.empty() ? "no other operand" : "its other operands loaded per tile through broadcast strides";
    e.note = fmt::format("; {} fused into the epilogue on the accumulator tile before the store ({}), so {}",
                         op_names(members), loads,
                         keep ? "one pass writes both the matmul output (another kernel reads it) and the result"
                              : "the matmul output never goes to memory");
    return e;
  }

  // A matmul-like op as one tiled tl.dot kernel, with `epilogue` (an elementwise group reading its
  // output) fused in when given.
  void matmul(const OpNode& n, std::size_t index, const std::vector<int>& epilogue = {}) {
    const std::string m = module_attr(n, index);
    const std::string_view op = n.op->name;
    const std::string b = op == "bmm" ? name(n.operands[1]) : m + ".weight.t()";
    const bool bias = op == "linear" || op == "addmm";
    forward += fmt::format("        a3, b3, c, grid, (m, n, k), strides, shape = _mm_layout({}, {})\n",
                           name(n.operands[0]), b);
    const Ending e = epilogue.empty() ? plain_ending(n.out) : fused_ending(n.out, epilogue);
    forward += fmt::format("        {}[grid](a3, b3, {}, c, m, n, k, *strides{}, HAS_BIAS={}, BM=32, BN=32, BK=32)\n{}",
                           e.kernel, bias ? m + ".bias" : "c", e.args, bias ? "True" : "False", e.after);
    helpers.insert(kMatmulHelper);
    plan.push_back(
        fmt::format("`{}`: {} as 32x32 output tiles stepping K by 32, tl.dot in fp32 (IEEE, no TF32, to "
                    "meet the tolerance){}{}",
                    e.kernel, op, bias ? ", bias added in the epilogue" : "", e.note));
  }

  void view(const OpNode& n) {
    std::map<std::string, std::string> args = {
        {"0", name(n.operands[0])}, {"dim", std::to_string(n.dim)}, {"dim2", std::to_string(n.dim2)}};
    std::vector<std::string> perm;
    for (int d : n.perm) perm.push_back(std::to_string(d));
    args["dims"] = fmt::format("{}", fmt::join(perm, ", "));
    for (const auto& [k, v] : n.vars) args[k] = std::to_string(values[v]);
    if (n.op->name == "cat") helpers.insert(kCatHelper);
    if (n.op->name == "cat")
      forward += fmt::format(
          "        a, b, t{0}, n, wa, wb = _cat_layout({1}, {2}, {3})\n"
          "        BLOCK = 1024\n"
          "        _cat_kernel[(triton.cdiv(n, BLOCK),)](a, b, t{0}, n, wa, wb, BLOCK=BLOCK)\n",
          n.out, name(n.operands[0]), name(n.operands[1]), n.dim);
    else
      forward += fmt::format("        t{} = {}\n", n.out, substitute(n.op->code, args));
  }
};

}  // namespace

bool solvable(const Graph& g) {
  return std::all_of(g.nodes.begin(), g.nodes.end(), [](const OpNode& n) { return !n.op->triton.empty(); });
}

std::optional<Solution> emit_solution(const Graph& g, const std::vector<std::int64_t>& values,
                                      const std::string& task_id, const std::vector<int>& fragments) {
  if (!solvable(g)) return std::nullopt;
  Writer w{g, values, {}, {}, {}, {}, {}, {}};
  std::vector<int> outputs;
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const auto s = g.tensors[t].source;
    if (s == Source::input || s == Source::positive_input) w.inputs.push_back(static_cast<int>(t));
    if (s == Source::node && g.tensors[t].consumers == 0) outputs.push_back(static_cast<int>(t));
  }
  const auto fragment = fragment_of(g, fragments);
  const auto roots = fusion_roots(g, values, fragment);
  const auto hosts = epilogue_hosts(g, roots, values, fragment);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const OpNode& n = g.nodes[i];
    const auto kind = n.op->triton;
    if (is_elementwise(n)) {
      if (roots[i] != static_cast<int>(i)) continue;  // emitted with its root
      std::vector<int> members;
      for (std::size_t j = 0; j <= i; ++j)
        if (is_elementwise(g.nodes[j]) && roots[j] == static_cast<int>(i)) members.push_back(static_cast<int>(j));
      const auto host = std::find(hosts.begin(), hosts.end(), static_cast<int>(i));
      if (host == hosts.end())
        w.elementwise_group(members);
      else  // the matmul runs here, its epilogue this group
        w.matmul(g.nodes[host - hosts.begin()], host - hosts.begin(), members);
    } else if (kind == "row") {
      w.row(n, i);
    } else if (kind == "matmul") {
      if (hosts[i] < 0) w.matmul(n, i);
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
  for (auto h : {kElementwiseHelper, kRowHelper, kMatmulHelper, kEpilogueHelper, kCatHelper})
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
