// The verifier's rules (docs/rules.md). Each rule reads the AST through ModuleInfo, so aliases
// of torch and friends resolve to their qualified names before any check.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "module_info.h"
#include "tritium/verify.h"

namespace tritium {
namespace {

using pyast::Kind;
using pyast::kNoNode;
using pyast::NodeId;
using pyast::Role;
using verify::ModuleInfo;

// A fixed word list: views of string literals, hashed, so that looking up a node's text builds
// nothing (a tree of strings cost a string comparison per level). Most lookups miss, and the
// filter answers those before any hashing.
class WordSet {
 public:
  WordSet(std::initializer_list<std::string_view> words) : words_(words) {
    for (std::string_view w : words) filter_ |= verify::name_filter_bit(w);
  }
  bool contains(std::string_view word) const {
    return (filter_ & verify::name_filter_bit(word)) && words_.count(word);
  }

 private:
  std::unordered_set<std::string_view> words_;
  std::uint64_t filter_ = 0;
};

// `path` is `prefix` or under it. The cheap tests first: the prefix must end where the path does
// or at a dot, which rules out most pairs before any comparison of text.
inline bool path_under(std::string_view path, std::string_view prefix) {
  if (path.size() < prefix.size() || (path.size() > prefix.size() && path[prefix.size()] != '.')) return false;
  return path.substr(0, prefix.size()) == prefix;
}

// The op of a torch path, as rule ids name it: the path after `torch.` (and after
// `nn.functional.`), without an overload: torch.ops.aten.mm.default -> ops.aten.mm.
std::string op_name(const std::string& path) {
  std::string p = path.substr(std::string_view("torch.").size());
  if (p.starts_with("nn.functional.")) p = p.substr(std::string_view("nn.functional.").size());
  for (std::string_view overload : {".default", ".out", ".Tensor", ".Scalar"})
    if (p.ends_with(overload)) p.resize(p.size() - overload.size());
  return p;
}

// A call that builds an nn layer: torch.nn.Linear(...), but not Parameter or init helpers.
bool builds_layer(const ModuleInfo& info, NodeId call) {
  if (call == kNoNode || info.tree.node(call).kind != Kind::Call) return false;
  const NodeId func = info.tree.child(call, Role::func);
  // The root first: most calls are not torch's, and it costs no string.
  if (info.qualified_root(func) != "torch" || !info.from_module(func)) return false;
  const auto q = info.qualify(func);
  if (!q || !path_under(*q, "torch.nn")) return false;
  return !path_under(*q, "torch.nn.functional") && !path_under(*q, "torch.nn.Parameter") &&
         !path_under(*q, "torch.nn.init") && !path_under(*q, "torch.nn.Module");
}

// torch.* calls that allocate, reshape, query or convert: never compute.
const WordSet& torch_allowed() {
  static const WordSet s = {
      "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
      "arange", "tensor", "as_tensor", "device", "Size", "is_tensor", "broadcast_shapes", "promote_types",
      "result_type", "finfo", "iinfo", "get_default_dtype", "no_grad", "inference_mode", "enable_grad",
      "is_floating_point", "is_grad_enabled", "set_grad_enabled", "dtype", "strided", "contiguous_format",
      "cuda.synchronize", "cuda.current_device", "cuda.device", "cuda.get_device_properties", "cuda.is_available",
      "cuda.device_count", "cuda.get_device_capability", "nn.Parameter", "nn.Module", "Tensor", "cuda.empty_cache",
      // the function forms of the views the docs allow as methods
      "flatten", "reshape", "permute", "transpose", "t", "squeeze", "unsqueeze", "narrow", "movedim", "swapaxes"};
  return s;
}

// Tensor methods that compute (x.relu(), a.matmul(b), ...): delegation when called on tensors.
const WordSet& compute_methods() {
  static const WordSet s = {
      "matmul", "mm", "bmm", "mv", "dot", "einsum", "addmm", "addmm_", "baddbmm", "addbmm", "addmv", "addr", "relu",
      "relu_", "sigmoid", "sigmoid_", "tanh", "tanh_", "exp", "exp_", "exp2", "log", "log_", "log1p", "log2",
      "softmax", "log_softmax", "sum", "mean", "amax", "amin", "var", "std", "norm", "cumsum", "cumprod", "prod",
      "logsumexp", "clamp", "clamp_", "clip", "abs", "abs_", "sqrt", "rsqrt", "pow", "pow_", "mul", "mul_", "add",
      "add_", "sub", "sub_", "div", "div_", "neg", "erf", "sin", "cos", "square", "reciprocal", "gelu", "silu",
      "softplus", "masked_fill", "masked_fill_", "max", "min", "argmax", "argmin", "topk", "sort", "maximum",
      "minimum", "where", "layer_norm", "conv2d", "linear", "fill_", "copy_", "zero_", "normal_", "uniform_",
      "lerp", "addcmul", "addcdiv", "floor", "ceil", "round", "sign", "tril", "triu", "outer", "kron", "cross",
      "cummax", "cummin", "logical_and", "logical_or", "eq", "ne", "lt", "le", "gt", "ge", "all", "any",
      "__matmul__", "__mul__", "__add__"};
  return s;
}

const WordSet& forbidden_modules() {
  static const WordSet s = {
      "os", "sys", "subprocess", "socket", "ctypes", "importlib", "inspect", "gc", "builtins", "pickle", "marshal",
      "shutil", "signal", "pathlib", "io", "tempfile", "urllib", "http", "requests", "time", "random", "weakref",
      "atexit", "resource", "cffi", "mmap", "code", "codeop", "runpy", "dill", "cloudpickle", "platform", "pty",
      "fcntl", "select", "asyncore", "ssl", "ftplib", "smtplib", "telnetlib", "sqlite3", "shelve", "glob"};
  return s;
}

// What the task's reference module defines: a candidate must not use it.
const WordSet& reference_names() {
  static const WordSet s = {"Model", "get_inputs", "get_init_inputs"};
  return s;
}

const WordSet& concurrency_modules() {
  static const WordSet s = {"threading", "_thread", "multiprocessing", "concurrent", "asyncio"};
  return s;
}

class Rules {
 public:
  Rules(const ModuleInfo& info, std::vector<Finding>& out) : info_(info), t_(info.tree), out_(out) {}

  void run() {
    syntax();
    if (info_.model_new == kNoNode) return;
    if (info_.forward == kNoNode) {
      error("func.no_forward", info_.model_new, "ModelNew defines no forward(); the checked call is ModelNew.forward");
      return;
    }
    graph_ = verify::call_graph(info_);
    in_graph_.assign(t_.size(), false);
    for (NodeId n : info_.assignments)
      if (builds_layer(info_, t_.child(n, Role::value)))
        verify::for_each_child(t_, n, Role::target, [&](NodeId target) {
          if (t_.node(target).kind == Kind::Name) layer_names_.emplace(t_.text(target));
        });
    for (NodeId fn : graph_.functions) verify::for_each_node(t_, fn, [&](NodeId n) { in_graph_[n] = true; });
    attribute_base_.assign(t_.size(), false);
    // In arena order, not pre-order: the result is per node, and the arena is read sequentially.
    for (NodeId n = 0; n < t_.size(); ++n)
      if (t_.node(n).kind == Kind::Attribute) attribute_base_[t_.child(n, Role::value)] = true;
    functionality();
    hacks();
  }

 private:
  void add(const std::string& rule, NodeId at, const std::string& message, const char* severity = "error") {
    const auto& span = t_.node(at).span;
    // One finding per rule and line is enough to act on.
    for (const auto& f : out_)
      if (f.rule == rule && f.line == span.line) return;
    out_.push_back({rule, severity, span.line, span.col, message});
  }
  void error(const std::string& rule, NodeId at, const std::string& message) { add(rule, at, message); }

  std::string q(NodeId e) const {
    auto r = info_.qualify(e);
    return r ? *r : "";
  }

  // ---- syntax ----
  void syntax() {
    const NodeId root = t_.root();
    if (info_.kernels.empty())
      error("syntax.no_kernel", root, "no @triton.jit kernel: the answer must define Triton kernels and launch them");
    if (info_.model_new == kNoNode)
      error("syntax.no_model_new", root, "no top-level `class ModelNew`; the harness builds ModelNew(*get_init_inputs())");
    for (const auto& [name, kernel] : info_.kernels) {
      if (t_.node(kernel).kind == Kind::Assign) continue;
      // The body only: a `tl.constexpr` annotation does no work. The search stops at the first use.
      auto is_tl = [&](NodeId n) {
        const Kind k = t_.node(n).kind;
        return (k == Kind::Name || k == Kind::Attribute) && info_.qualified_root(n) == "triton" &&
               path_under(q(n), "triton.language");
      };
      bool uses_tl = false;
      for (NodeId stmt = t_.node(kernel).first_child; stmt != kNoNode && !uses_tl; stmt = t_.node(stmt).next_sibling)
        uses_tl = t_.node(stmt).role == Role::body && verify::find_node(t_, stmt, is_tl) != kNoNode;
      if (!uses_tl) error("syntax.kernel_without_tl", kernel, fmt::format("kernel `{}` uses nothing from triton.language", name));
    }
  }

  // ---- functionality ----
  void functionality() {
    if (graph_.launches.empty())
      error("func.kernel_not_launched", info_.forward,
            "no Triton kernel launch (kernel[grid](...)) is reachable from ModelNew.forward");
    const auto& own_methods = info_.model_new_methods;
    for (NodeId n : info_.all_nodes) {
      if (!in_graph_[n]) continue;
      const auto& node = t_.node(n);
      if (node.kind == Kind::BinOp && node.op == 3) {
        error("func.torch_compute:matmul", n, "`@` computes a matmul in PyTorch; do it in a Triton kernel");
      } else if (node.kind == Kind::AugAssign && node.op == 3) {
        error("func.torch_compute:matmul", n, "`@=` computes a matmul in PyTorch; do it in a Triton kernel");
      } else if (node.kind == Kind::Call) {
        const NodeId callee = t_.child(n, Role::func);
        torch_call(n, callee);
        module_call(n, callee, own_methods);
      }
    }
  }

  void torch_call(NodeId call, NodeId callee) {
    const auto kind = t_.node(callee).kind;
    if (kind != Kind::Name && kind != Kind::Attribute) return;
    const bool from_module = info_.from_module(callee);
    // Only a path rooted at torch can be torch's (the root costs no string).
    if (from_module && info_.qualified_root(callee) == "torch") {
      const std::string path = q(callee);
      const std::string_view rest = path.size() > 6 ? std::string_view(path).substr(6) : "";
      if (torch_allowed().contains(rest)) return;
      if (path_under(path, "torch.cuda") || path_under(path, "torch.testing") || path_under(path, "torch.backends") ||
          path_under(path, "torch.random") || path_under(path, "torch.initial_seed") || path_under(path, "torch.seed") ||
          path_under(path, "torch.manual_seed") || path_under(path, "torch.get_rng_state") ||
          path_under(path, "torch.set_rng_state") || path.ends_with("._make_subclass"))
        return;  // no compute: streams, graphs, RNG probes and subclasses are the hack rules' business
      if (path_under(path, "torch.nn") && !path_under(path, "torch.nn.functional")) {
        // nn.Linear(...)(x): constructing a layer is fine in __init__; calling it is module_call.
        return;
      }
      error("func.torch_compute:" + op_name(path), call,
            fmt::format("`{}` computes in PyTorch; the work must be done by Triton kernels", path));
      return;
    }
    // Tensor methods: x.relu(), a.matmul(b) on values that are not modules.
    if (kind == Kind::Attribute && !from_module) {
      const std::string_view attr = t_.text(callee);
      if (compute_methods().contains(attr)) {
        const NodeId base = t_.child(callee, Role::value);
        const bool on_self = t_.node(base).kind == Kind::Name && t_.text(base) == "self";
        if (!on_self)
          error("func.torch_compute:" + std::string(attr), call,
                fmt::format("tensor method `.{}()` computes in PyTorch; do it in a Triton kernel", attr));
      }
    }
  }

  void module_call(NodeId call, NodeId callee, const std::map<std::string_view, NodeId>& own_methods) {
    // nn.AvgPool2d(...)(x), or a name bound to a layer and called.
    const bool layer_name = t_.node(callee).kind == Kind::Name && layer_names_.count(t_.text(callee));
    if (builds_layer(info_, callee) || layer_name) {
      error("func.module_call", call, "calling an nn layer runs it in PyTorch; compute with Triton kernels");
      return;
    }
    if (t_.node(callee).kind != Kind::Attribute) return;
    // self.layer(x) or self.layer.forward(x), where layer is not one of ModelNew's methods.
    NodeId base = t_.child(callee, Role::value);
    std::string_view attr = t_.text(callee);
    if (attr == "forward" && t_.node(base).kind == Kind::Attribute) {
      attr = t_.text(base);
      base = t_.child(base, Role::value);
    }
    if (t_.node(base).kind != Kind::Name || t_.text(base) != "self") return;
    if (own_methods.count(attr)) return;
    if (info_.kernels.count(attr)) return;
    error("func.module_call", call,
          fmt::format("`self.{}(...)` runs a submodule in PyTorch; keep layers as parameter holders and compute "
                      "with Triton",
                      attr));
  }

  // ---- hacks ----
  void hacks() {
    for (NodeId n : info_.all_nodes) {
      const auto& node = t_.node(n);
      switch (node.kind) {
        case Kind::Import:
        case Kind::ImportFrom:
          import_rules(n);
          break;
        case Kind::Name:
          name_rules(n);
          break;
        case Kind::Attribute:
          attribute_rules(n);
          break;
        case Kind::Call:
          call_rules(n);
          break;
        case Kind::ClassDef:
          verify::for_each_child(t_, n, Role::base, [&](NodeId b) {
            if (info_.qualified_root(b) == "torch" && (path_under(q(b), "torch.Tensor") || path_under(q(b), "torch._C")))
              error("hack.tensor_subclass", n, "a torch.Tensor subclass can defer or fake the work");
          });
          break;
        case Kind::FunctionDef:
        case Kind::AsyncFunctionDef:
          if (t_.text(n) == "__torch_function__" || t_.text(n) == "__torch_dispatch__")
            error("hack.tensor_subclass", n, "__torch_function__/__torch_dispatch__ intercepts tensor operations");
          break;
        case Kind::Assign:
        case Kind::AugAssign:
        case Kind::AnnAssign:
        case Kind::Delete:
          verify::for_each_child(t_, n, Role::target, [&](NodeId target) { assignment_rules(n, target); });
          break;
        case Kind::Try:
        case Kind::TryStar:
          if (in_graph_[n])
            error("hack.try_fallback", n, "try/except in the forward path can fall back to PyTorch or hide failures");
          break;
        case Kind::With:
        case Kind::AsyncWith:
          verify::for_each_child(t_, n, Role::item, [&](NodeId item) {
            const NodeId ctx = t_.child(item, Role::context);
            if (in_graph_[n] && t_.node(ctx).kind == Kind::Call &&
                path_under(q(t_.child(ctx, Role::func)), "contextlib.suppress"))
              error("hack.try_fallback", n, "contextlib.suppress in the forward path swallows failures");
          });
          break;
        case Kind::Global:
          if (in_graph_[n])
            error("hack.output_cache", n, "`global` in the forward path keeps state across calls");
          break;
        default:
          break;
      }
    }
  }

  void import_rules(NodeId n) {
    // The modules reached, all checked after the names imported (the first finding of a rule on
    // a line is the one kept).
    std::vector<std::string> modules;
    if (t_.node(n).kind == Kind::Import) {
      verify::for_each_child(t_, n, Role::names, [&](NodeId a) { modules.emplace_back(t_.text(a)); });
    } else {
      const std::string_view base = t_.text(n);
      if (t_.node(n).op > 0) {
        error("hack.reference", n, "a relative import can reach the task or the harness");
        return;
      }
      modules.emplace_back(base);
      verify::for_each_child(t_, n, Role::names, [&](NodeId a) {
        const std::string_view name = t_.text(a);
        if (reference_names().contains(name))
          error("hack.reference", n, fmt::format("imports `{}` from the reference", name));
        modules.push_back(std::string(base).append(".").append(name));
      });
    }
    for (const std::string& m : modules) {
      const std::string root = m.substr(0, m.find('.'));
      if (concurrency_modules().contains(root))
        error("hack.concurrency", n, fmt::format("`{}`: threads and processes can run work outside the timed call", root));
      else if (forbidden_modules().contains(root) || path_under(m, "numpy.random"))
        error("hack.forbidden_module:" + root, n, fmt::format("importing `{}` is not allowed in a candidate", root));
      if (root == "task" || root == "reference" || root == "harness" || root == "tritium")
        error("hack.reference", n, fmt::format("importing `{}` reaches the reference or the harness", root));
    }
  }

  void name_rules(NodeId n) {
    const std::string_view name = t_.text(n);
    const bool dunder = name.size() >= 2 && name[0] == '_' && name[1] == '_';  // starts_with("__"), inline
    const bool reference = reference_names().contains(name);
    if (!reference && !dunder) {
      path_rules(n);
      return;
    }
    if (reference) {
      if (!info_.classes.count(name) && !info_.functions.count(name) && !info_.module_variables.count(name))
        error("hack.reference", n, fmt::format("`{}` belongs to the reference; ModelNew must stand alone", name));
      else
        error("hack.reference", n, fmt::format("`{}` copies the reference into the answer", name));
    }
    if (name == "__builtins__" || name == "__loader__" || name == "__spec__")
      error("hack.dynamic_code", n, fmt::format("`{}` reaches the interpreter's internals", name));
    path_rules(n);
  }

  void attribute_rules(NodeId n) {
    const std::string_view attr = t_.text(n);
    static const WordSet dunder = {"__dict__", "__class__", "__subclasses__", "__globals__", "__code__",
                                   "__closure__", "__mro__", "__bases__", "__builtins__", "f_back",
                                   "f_globals", "f_locals", "__getattribute__", "_getframe"};
    if (dunder.contains(attr)) error("hack.dynamic_code", n, fmt::format("`.{}` reaches interpreter internals", attr));
    if (attr == "_make_subclass") error("hack.tensor_subclass", n, "_make_subclass builds a tensor subclass");
    if (attr == "training" && in_graph_[n]) {
      const NodeId base = t_.child(n, Role::value);
      if (t_.node(base).kind == Kind::Name && t_.text(base) == "self")
        error("hack.training_branch", n, "reading self.training in the forward path: the work must not depend on the mode");
    }
    path_rules(n);
  }

  // Rules on what a name or attribute resolves to through imports and aliases, so that
  // `from torch.cuda import graph as capture` is `torch.cuda.graph`.
  void path_rules(NodeId n) {
    // Only the outermost name of a chain: `torch.cuda` inside `torch.cuda.Stream` adds nothing,
    // since every rule matches a path and everything under it.
    if (attribute_base_[n]) return;
    // Every path below is under torch, numpy, os or sys: the root rules out the rest (Triton's
    // `tl.*` above all) without building the path.
    const std::string_view root = info_.qualified_root(n);
    static const WordSet roots = {"torch", "numpy", "os", "sys"};
    if (!roots.contains(root)) return;
    if (!info_.from_module(n)) return;
    const std::string path = q(n);
    if (path_under(path, "torch.cuda.Stream") || path_under(path, "torch.cuda.stream") ||
        path_under(path, "torch.cuda.set_stream") || path_under(path, "torch.cuda.Event") ||
        path_under(path, "torch.cuda.ExternalStream") || path_under(path, "torch.Stream") ||
        path_under(path, "torch.cuda.StreamContext") || path_under(path, "torch.cuda.current_stream") ||
        path_under(path, "torch.cuda.default_stream"))
      error("hack.stream", n, fmt::format("`{}`: work on other streams escapes the timing", path));
    if (path_under(path, "torch.cuda.CUDAGraph") || path_under(path, "torch.cuda.graph") ||
        path_under(path, "torch.cuda.graphs") || path_under(path, "torch.cuda.make_graphed_callables"))
      error("hack.cuda_graph", n, fmt::format("`{}`: replayed CUDA graphs fake the timed work", path));
    if (path_under(path, "torch.initial_seed") || path_under(path, "torch.seed") ||
        path_under(path, "torch.get_rng_state") || path_under(path, "torch.random") ||
        path_under(path, "torch.cuda.initial_seed") || path_under(path, "torch.cuda.get_rng_state") ||
        path_under(path, "torch.default_generator") || path_under(path, "numpy.random.get_state"))
      error("hack.rng_probe", n, fmt::format("`{}` probes the random state to detect the harness", path));
    if (path_under(path, "os.environ") || path_under(path, "os.getenv") || path_under(path, "torch.load") ||
        path_under(path, "torch.save") || path_under(path, "numpy.load"))
      error("hack.file_env", n, fmt::format("`{}` reads or writes files or the environment", path));
    if (path_under(path, "os.fork") || path_under(path, "os.system") || path_under(path, "os.popen"))
      error("hack.concurrency", n, fmt::format("`{}` starts processes", path));
    if (path_under(path, "sys.modules") || path_under(path, "sys._getframe"))
      error("hack.dynamic_code", n, fmt::format("`{}` reaches the interpreter's internals", path));
  }

  void call_rules(NodeId n) {
    const NodeId callee = t_.child(n, Role::func);
    if (t_.node(callee).kind != Kind::Name) {
      if (t_.node(callee).kind == Kind::Attribute) data_ptr_key(n, callee);
      return;
    }
    const std::string_view name = t_.text(callee);
    if (info_.functions.count(name) || info_.classes.count(name)) return;  // the module's own
    static const WordSet dynamic = {"exec", "eval", "compile", "__import__", "globals", "locals",
                                    "vars", "breakpoint"};
    if (dynamic.contains(name)) error("hack.dynamic_code", n, fmt::format("`{}()` runs or inspects code dynamically", name));
    if (name == "open" || name == "input") error("hack.file_env", n, fmt::format("`{}()` reads files or input", name));
    if (name == "id" && in_graph_[n])
      error("hack.output_cache", n, "id() in the forward path keys results on object identity");
    if (name == "getattr" || name == "setattr" || name == "delattr") {
      const auto args = t_.children(n, Role::arg);  // rare: the vector is fine
      const bool constant_name = args.size() >= 2 && t_.node(args[1]).kind == pyast::Kind::Constant;
      const bool on_module = !args.empty() && info_.from_module(args[0]);
      if (!constant_name || on_module)
        error(name == "getattr" ? "hack.dynamic_code" : "hack.monkeypatch", n,
              fmt::format("`{}()` {} hides what is called or patched", name,
                          constant_name ? "on a module" : "with a computed name"));
    }
  }

  // x.data_ptr() used as a key or compared: results cached on tensor addresses.
  void data_ptr_key(NodeId call, NodeId callee) {
    if (t_.text(callee) != "data_ptr" || !in_graph_[call]) return;
    error("hack.output_cache", call, "data_ptr() in the forward path can key cached results on tensor addresses");
  }

  void assignment_rules(NodeId stmt, NodeId target) {
    verify::for_each_node(t_, target, [&](NodeId x) { assignment_rule(stmt, x); });
  }

  void assignment_rule(NodeId stmt, NodeId x) {
    const auto k = t_.node(x).kind;
    if (k != Kind::Attribute && k != Kind::Subscript) return;
    // The object written to: for a.b.c = v it is a.b; for a[k] = v it is a.
    const NodeId base = t_.child(x, Role::value);
    if (k == Kind::Attribute && info_.from_module(x)) {
      error("hack.monkeypatch", stmt, fmt::format("assigning `{}` patches an imported module", q(x)));
      return;
    }
    if (!in_graph_[stmt]) return;
    NodeId root = base;
    while (root != kNoNode && (t_.node(root).kind == Kind::Attribute || t_.node(root).kind == Kind::Subscript))
      root = t_.child(root, Role::value);
    const bool self_state = k == Kind::Attribute && t_.node(base).kind == Kind::Name && t_.text(base) == "self";
    const bool self_container = root != kNoNode && t_.node(root).kind == Kind::Name && t_.text(root) == "self" &&
                                k == Kind::Subscript;
    const bool module_container = root != kNoNode && t_.node(root).kind == Kind::Name &&
                                  info_.module_variables.count(t_.text(root));
    if (self_state || self_container || module_container)
      error("hack.output_cache", stmt,
            "state written in the forward path outlives the call (a cache of outputs, a call counter)");
  }

  const ModuleInfo& info_;
  const pyast::Tree& t_;
  std::vector<Finding>& out_;
  verify::CallGraph graph_;
  std::vector<bool> in_graph_;
  std::vector<bool> attribute_base_;  // nodes that are the `value` of an Attribute
  verify::NameSet layer_names_;
};

// How many positional arguments a method accepts (self excluded): [min, max], max unbounded
// with *args; the text for messages.
struct Arity {
  int min = 0, max = 0;
  std::string text;
};

Arity arity_of(const pyast::Tree& t, NodeId fn) {
  Arity r;
  const NodeId args = t.child(fn, Role::args);
  if (args == kNoNode) return r;
  int positional = 0, defaults = 0;
  bool self_skipped = false, star = false;
  for (NodeId a : t.children(args)) {
    const auto role = t.node(a).role;
    if (role == Role::default_) ++defaults;
    if (t.node(a).kind != Kind::arg) continue;
    const bool is_positional = role == Role::posonly || role == Role::args;
    if (is_positional && !self_skipped) {
      self_skipped = true;
      continue;
    }
    positional += is_positional ? 1 : 0;
    star = star || role == Role::vararg;
    const char* prefix = role == Role::vararg ? "*" : role == Role::kwarg ? "**" : "";
    r.text += (r.text.empty() ? "" : ", ") + std::string(prefix) + std::string(t.text(a));
  }
  r.min = positional - defaults;
  r.max = star ? 1 << 20 : positional;
  return r;
}

std::map<std::string, NodeId> class_methods(const pyast::Tree& t, const std::string& cls) {
  std::map<std::string, NodeId> out;
  for (NodeId s : t.children(t.root(), Role::body)) {
    if (t.node(s).kind != Kind::ClassDef || t.text(s) != cls) continue;
    for (NodeId m : t.children(s, Role::body))
      if (t.node(m).kind == Kind::FunctionDef) out[std::string(t.text(m))] = m;
  }
  return out;
}

// ModelNew is built as ModelNew(*get_init_inputs()) and called like Model: same parameters.
void check_signatures(const pyast::Tree& candidate, std::string_view task_source, std::vector<Finding>& out) {
  const pyast::Parsed task = pyast::parse(task_source);
  if (!task.ok()) return;
  const auto model = class_methods(task.tree, "Model");
  const auto model_new = class_methods(candidate, "ModelNew");
  for (const char* method : {"__init__", "forward"}) {
    const auto a = model.find(method), b = model_new.find(method);
    if (a == model.end() || b == model_new.end()) continue;
    // Called positionally like Model: some argument count Model accepts must suit ModelNew too.
    const Arity expected = arity_of(task.tree, a->second), actual = arity_of(candidate, b->second);
    if (actual.max < expected.min || actual.min > expected.max) {
      const auto& span = candidate.node(b->second).span;
      out.push_back({"func.signature_mismatch", "error", span.line, span.col,
                     fmt::format("ModelNew.{}({}) cannot be called like Model.{}({})", method, actual.text, method,
                                 expected.text)});
    }
  }
}

const char* stage_of(const std::string& rule) {
  if (rule.starts_with("syntax.")) return "invalid_syntax";
  if (rule.starts_with("func.")) return "invalid_functionality";
  return "hack";
}

int stage_rank(const std::string& status) {
  return status == "invalid_syntax" ? 0 : status == "invalid_functionality" ? 1 : status == "hack" ? 2 : 3;
}

Verification finish(std::vector<Finding> findings) {
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.line < b.line; });
  std::string status = "valid";
  for (const auto& f : findings)
    if (f.severity == "error" && stage_rank(stage_of(f.rule)) < stage_rank(status)) status = stage_of(f.rule);
  return {status, std::move(findings)};
}

}  // namespace

Verification verify_code(std::string_view code, std::string_view task_source) {
  std::vector<Finding> findings;
  const pyast::Parsed parsed = pyast::parse(code);
  if (!parsed.ok()) {
    findings.push_back({"syntax.parse", "error", parsed.error->line, parsed.error->col, parsed.error->message});
    return finish(std::move(findings));
  }
  const ModuleInfo info(parsed.tree);
  Rules(info, findings).run();
  if (!task_source.empty()) check_signatures(parsed.tree, task_source, findings);
  return finish(std::move(findings));
}

Verification verify_response(std::string_view response, std::string_view task_source) {
  const Extraction extraction = extract_response(response);
  if (!extraction.has_code) return finish({{"syntax.no_code", "error", 0, 0, "the response holds no code block"}});
  return verify_code(extraction.code, task_source);
}

Json to_json(const Finding& f) {
  return {{"rule", f.rule}, {"severity", f.severity}, {"line", f.line}, {"col", f.col}, {"message", f.message}};
}

Json to_json(const Verification& v) {
  Json findings = Json::array();
  for (const auto& f : v.findings) findings.push_back(to_json(f));
  return {{"status", v.status}, {"findings", findings}};
}

}  // namespace tritium
