// The verifier's rules (docs/rules.md). Each rule reads the AST through ModuleInfo, so aliases
// of torch and friends resolve to their qualified names before any check.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>

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
  bool contains(std::string_view word) const { return (filter_ & verify::name_filter_bit(word)) && words_.count(word); }

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
      "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "arange",
      "tensor", "as_tensor", "device", "Size", "is_tensor", "broadcast_shapes", "promote_types", "result_type", "finfo",
      "iinfo", "get_default_dtype", "no_grad", "inference_mode", "enable_grad", "is_floating_point", "is_grad_enabled",
      "set_grad_enabled", "dtype", "strided", "contiguous_format", "cuda.synchronize", "cuda.current_device",
      "cuda.device", "cuda.get_device_properties", "cuda.is_available", "cuda.device_count",
      "cuda.get_device_capability", "nn.Parameter", "nn.Module", "Tensor", "cuda.empty_cache",
      // the function forms of the views the docs allow as methods
      "flatten", "reshape", "permute", "transpose", "t", "squeeze", "unsqueeze", "narrow", "movedim", "swapaxes"};
  return s;
}

// Tensor methods that compute (x.relu(), a.matmul(b), ...): delegation when called on tensors.
const WordSet& compute_methods() {
  static const WordSet s = {
      "matmul",      "mm",           "bmm",         "mv",         "dot",        "einsum",    "addmm",   "addmm_",
      "baddbmm",     "addbmm",       "addmv",       "addr",       "relu",       "relu_",     "sigmoid", "sigmoid_",
      "tanh",        "tanh_",        "exp",         "exp_",       "exp2",       "log",       "log_",    "log1p",
      "log2",        "softmax",      "log_softmax", "sum",        "mean",       "amax",      "amin",    "var",
      "std",         "norm",         "cumsum",      "cumprod",    "prod",       "logsumexp", "clamp",   "clamp_",
      "clip",        "abs",          "abs_",        "sqrt",       "rsqrt",      "pow",       "pow_",    "mul",
      "mul_",        "add",          "add_",        "sub",        "sub_",       "div",       "div_",    "neg",
      "erf",         "sin",          "cos",         "square",     "reciprocal", "gelu",      "silu",    "softplus",
      "masked_fill", "masked_fill_", "max",         "min",        "argmax",     "argmin",    "topk",    "sort",
      "maximum",     "minimum",      "where",       "layer_norm", "conv2d",     "linear",    "fill_",   "copy_",
      "zero_",       "normal_",      "uniform_",    "lerp",       "addcmul",    "addcdiv",   "floor",   "ceil",
      "round",       "sign",         "tril",        "triu",       "outer",      "kron",      "cross",   "cummax",
      "cummin",      "logical_and",  "logical_or",  "eq",         "ne",         "lt",        "le",      "gt",
      "ge",          "all",          "any",         "__matmul__", "__mul__",    "__add__"};
  return s;
}

const WordSet& forbidden_modules() {
  static const WordSet s = {
      "os",       "sys",     "subprocess", "socket",      "ctypes",   "importlib", "inspect",  "gc",     "builtins",
      "pickle",   "marshal", "shutil",     "signal",      "pathlib",  "io",        "tempfile", "urllib", "http",
      "requests", "time",    "random",     "weakref",     "atexit",   "resource",  "cffi",     "mmap",   "code",
      "codeop",   "runpy",   "dill",       "cloudpickle", "platform", "pty",       "fcntl",    "select", "asyncore",
      "ssl",      "ftplib",  "smtplib",    "telnetlib",   "sqlite3",  "shelve",    "glob"};
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
    // A kernel defined inside a function of the graph is Triton, not host code: its body is not in the graph.
    for (NodeId fn : graph_.functions)
      verify::walk_pruned(t_, fn, [&](NodeId n) {
        if (info_.is_kernel_def(n)) return false;
        in_graph_[n] = true;
        return true;
      });
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
      error("syntax.no_model_new", root,
            "no top-level `class ModelNew`; the harness builds ModelNew(*get_init_inputs())");
    for (const NodeId kernel : info_.kernel_defs) {
      const std::string_view name = t_.text(kernel);
      // The body only: a `tl.constexpr` annotation does no work. The search stops at the first use.
      auto is_tl = [&](NodeId n) {
        const Kind k = t_.node(n).kind;
        return (k == Kind::Name || k == Kind::Attribute) && info_.qualified_root(n) == "triton" &&
               path_under(q(n), "triton.language");
      };
      bool uses_tl = false;
      for (NodeId stmt = t_.node(kernel).first_child; stmt != kNoNode && !uses_tl; stmt = t_.node(stmt).next_sibling)
        uses_tl = t_.node(stmt).role == Role::body && verify::find_node(t_, stmt, is_tl) != kNoNode;
      if (!uses_tl)
        error("syntax.kernel_without_tl", kernel, fmt::format("kernel `{}` uses nothing from triton.language", name));
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
          path_under(path, "torch.random") || path_under(path, "torch.initial_seed") ||
          path_under(path, "torch.seed") || path_under(path, "torch.manual_seed") ||
          path_under(path, "torch.get_rng_state") || path_under(path, "torch.set_rng_state") ||
          path.ends_with("._make_subclass"))
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
            if (info_.qualified_root(b) == "torch" &&
                (path_under(q(b), "torch.Tensor") || path_under(q(b), "torch._C")))
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
          if (in_graph_[n]) error("hack.output_cache", n, "`global` in the forward path keeps state across calls");
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
        error("hack.concurrency", n,
              fmt::format("`{}`: threads and processes can run work outside the timed call", root));
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
    static const WordSet dunder = {"__dict__",    "__class__", "__subclasses__",   "__globals__",  "__code__",
                                   "__closure__", "__mro__",   "__bases__",        "__builtins__", "f_back",
                                   "f_globals",   "f_locals",  "__getattribute__", "_getframe"};
    if (dunder.contains(attr)) error("hack.dynamic_code", n, fmt::format("`.{}` reaches interpreter internals", attr));
    if (attr == "_make_subclass") error("hack.tensor_subclass", n, "_make_subclass builds a tensor subclass");
    if (attr == "training" && in_graph_[n]) {
      const NodeId base = t_.child(n, Role::value);
      if (t_.node(base).kind == Kind::Name && t_.text(base) == "self")
        error("hack.training_branch", n,
              "reading self.training in the forward path: the work must not depend on the mode");
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
      if (t_.node(callee).kind == Kind::Attribute) {
        data_ptr_key(n, callee);
        state_mutation(n, callee);
      }
      return;
    }
    const std::string_view name = t_.text(callee);
    if (info_.functions.count(name) || info_.classes.count(name)) return;  // the module's own
    static const WordSet dynamic = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "breakpoint"};
    if (dynamic.contains(name))
      error("hack.dynamic_code", n, fmt::format("`{}()` runs or inspects code dynamically", name));
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
    verify::for_each_node(t_, target, [&](NodeId x) {
      if (t_.node(x).kind == Kind::Attribute && info_.from_module(x))
        error("hack.monkeypatch", stmt, fmt::format("assigning `{}` patches an imported module", q(x)));
    });
    if (!in_graph_[stmt]) return;
    // Each expression written: `a, self.b = ...` writes two.
    verify::walk_pruned(t_, target, [&](NodeId x) {
      const Kind k = t_.node(x).kind;
      if (k == Kind::Tuple || k == Kind::List || k == Kind::Starred) return true;
      state_write(stmt, x);
      return false;
    });
  }

  // ---- hack.output_cache: state kept across calls ----
  //
  // State written in forward's call graph (an attribute of self, a module-level container)
  // outlives the call: the classic output cache keyed on a shape, a pointer, an identity or a
  // call count. What may be kept is a launch configuration: values computed only from shapes,
  // sizes and constants (never from tensor data), read only as launch grids or kernel arguments,
  // or by a membership test that fills the cache.

  // The state an expression writes: `self.name` (any depth below self) or a module container.
  struct Slot {
    bool on_self = false;
    std::string_view name;
    bool operator<(const Slot& o) const { return on_self != o.on_self ? on_self < o.on_self : name < o.name; }
  };

  std::optional<Slot> slot_of(NodeId x) const {
    const Kind k = t_.node(x).kind;
    if (k != Kind::Attribute && k != Kind::Subscript) return std::nullopt;
    NodeId below = x, root = t_.child(x, Role::value);
    while (root != kNoNode && (t_.node(root).kind == Kind::Attribute || t_.node(root).kind == Kind::Subscript)) {
      below = root;
      root = t_.child(root, Role::value);
    }
    if (root == kNoNode || t_.node(root).kind != Kind::Name) return std::nullopt;
    if (t_.text(root) == "self")  // `self[key] = v` is state too, under no attribute's name
      return Slot{true, t_.node(below).kind == Kind::Attribute ? t_.text(below) : std::string_view()};
    if (info_.module_variables.count(t_.text(root))) return Slot{false, t_.text(root)};
    return std::nullopt;
  }

  void state_write(NodeId stmt, NodeId x) {
    const auto slot = slot_of(x);
    if (!slot) return;
    const Kind k = t_.node(stmt).kind;
    const NodeId value = t_.child(stmt, Role::value);
    if ((k == Kind::Assign || k == Kind::AnnAssign) && value != kNoNode && kept_config(*slot, {value}, stmt)) return;
    error("hack.output_cache", stmt,
          "state written in the forward path outlives the call (a cache of outputs, a call counter); only launch "
          "grids and configurations computed from shapes may be kept, and read only by launches");
  }

  // self._cache.update(...), _RESULTS.append(out), self._grids.setdefault(key, grid), ...
  void state_mutation(NodeId call, NodeId callee) {
    if (!in_graph_[call] || !mutators().contains(t_.text(callee))) return;
    const auto slot = mutated_slot(callee);
    if (!slot) return;
    const Slot s = *slot;
    std::vector<NodeId> values;
    for (NodeId c = t_.node(call).first_child; c != kNoNode; c = t_.node(c).next_sibling)
      if (t_.node(c).role == Role::arg || t_.node(c).role == Role::keyword) values.push_back(c);
    if (kept_config(s, values, call)) return;
    error("hack.output_cache", call,
          fmt::format("`.{}()` on state in the forward path keeps values across calls (a cache of outputs); only "
                      "launch grids and configurations computed from shapes may be kept",
                      t_.text(callee)));
  }

  static const WordSet& mutators() {
    static const WordSet s = {"append", "extend", "insert", "update", "setdefault", "add", "__setitem__"};
    return s;
  }

  // The write keeps a launch configuration: every value is one, and the slot is read only as one.
  bool kept_config(const Slot& slot, const std::vector<NodeId>& values, NodeId at) {
    ensure_parents();
    const NodeId scope = enclosing_def(at);
    budget_ = 4000;
    evaluating_ = slot;
    bool ok = true;
    for (NodeId v : values) ok = ok && config_value(v, scope, 0);
    evaluating_.reset();
    return ok && write_sites(slot) == 1 && slot_reads_ok(slot);
  }

  static bool same(const Slot& a, const Slot& b) { return !(a < b) && !(b < a); }

  // The slot of the object a mutating method is called on (`self._cache.update`, `_RESULTS.append`).
  std::optional<Slot> mutated_slot(NodeId callee) const {
    const NodeId base = t_.child(callee, Role::value);
    if (auto slot = slot_of(base)) return slot;
    if (t_.node(base).kind == Kind::Name && info_.module_variables.count(t_.text(base)))
      return Slot{false, t_.text(base)};
    return std::nullopt;
  }

  // How many statements of the graph write the slot. A configuration is one value per key, written
  // in one place: a second write (`cache.setdefault(key, 0)`, later `cache[key] = 1`) records history.
  int write_sites(const Slot& slot) {
    if (auto it = write_sites_.find(slot); it != write_sites_.end()) return it->second;
    int sites = 0;
    for (NodeId n : info_.all_nodes) {
      if (!in_graph_[n]) continue;
      const Kind k = t_.node(n).kind;
      bool writes = false;
      if (k == Kind::Assign || k == Kind::AugAssign || k == Kind::AnnAssign || k == Kind::Delete) {
        verify::for_each_child(t_, n, Role::target, [&](NodeId target) {
          verify::walk_pruned(t_, target, [&](NodeId x) {
            const Kind xk = t_.node(x).kind;
            if (xk == Kind::Tuple || xk == Kind::List || xk == Kind::Starred) return true;
            const auto s = slot_of(x);
            writes = writes || (s && same(*s, slot));
            return false;
          });
        });
      } else if (k == Kind::Call) {
        const NodeId callee = t_.child(n, Role::func);
        if (t_.node(callee).kind == Kind::Attribute && mutators().contains(t_.text(callee))) {
          const auto s = mutated_slot(callee);
          writes = s && same(*s, slot);
        }
      }
      sites += writes ? 1 : 0;
    }
    write_sites_.emplace(slot, sites);
    return sites;
  }

  // ---- values computed only from shapes, sizes and constants ----

  bool config_value(NodeId e, NodeId scope, int depth) {
    if (e == kNoNode || --budget_ < 0 || depth > 40) return false;
    const auto& node = t_.node(e);
    switch (node.kind) {
      case Kind::Constant:
        return true;
      case Kind::Tuple:
      case Kind::List:
      case Kind::Set:
      case Kind::Dict:
      case Kind::DictItem:
      case Kind::BinOp:
      case Kind::UnaryOp:
      case Kind::BoolOp:
      case Kind::Compare:
      case Kind::IfExp:
      case Kind::JoinedStr:
      case Kind::FormattedValue:
      case Kind::Slice:
      case Kind::Starred:
      case Kind::keyword:
        for (NodeId c = node.first_child; c != kNoNode; c = t_.node(c).next_sibling)
          if (!config_value(c, scope, depth + 1)) return false;
        return true;
      case Kind::Lambda: {  // a grid function: its parameters are Triton's meta-parameters
        const std::size_t assumed = assumed_.size();
        if (const NodeId args = t_.child(e, Role::args); args != kNoNode)
          verify::for_each_node(t_, args, [&](NodeId a) {
            if (t_.node(a).kind == Kind::arg) assumed_.push_back(t_.text(a));
          });
        const bool ok = config_value(t_.child(e, Role::body), scope, depth + 1);
        assumed_.resize(assumed);
        return ok;
      }
      case Kind::GeneratorExp:
      case Kind::ListComp:
      case Kind::SetComp:
      case Kind::DictComp: {
        const std::size_t assumed = assumed_.size();
        bool ok = true;
        verify::for_each_child(t_, e, Role::generator, [&](NodeId g) {
          ok = ok && config_value(t_.child(g, Role::iter), scope, depth + 1);
          verify::for_each_child(t_, g, Role::ifs, [&](NodeId c) { ok = ok && config_value(c, scope, depth + 1); });
          verify::for_each_node(t_, t_.child(g, Role::target), [&](NodeId n) {
            if (t_.node(n).kind == Kind::Name) assumed_.push_back(t_.text(n));
          });
        });
        for (Role r : {Role::elt, Role::key, Role::value})
          if (const NodeId c = t_.child(e, r); c != kNoNode) ok = ok && config_value(c, scope, depth + 1);
        assumed_.resize(assumed);
        return ok;
      }
      case Kind::Subscript:
        return config_value(t_.child(e, Role::value), scope, depth + 1) &&
               config_value(t_.child(e, Role::slice), scope, depth + 1);
      case Kind::Attribute: {
        static const WordSet metadata = {"shape", "ndim", "dtype", "device", "is_cuda", "itemsize", "layout"};
        if (metadata.contains(t_.text(e)) || info_.from_module(e) || info_.kernels.count(t_.text(e))) return true;
        const auto slot = slot_of(e);
        if (slot && slot->on_self) return config_attribute(*slot, depth);
        return config_value(t_.child(e, Role::value), scope, depth + 1);  // an attribute of a configuration
      }
      case Kind::Name:
        return config_name(e, scope, depth);
      case Kind::Call:
        return config_call(e, scope, depth);
      default:
        return false;
    }
  }

  bool config_call(NodeId call, NodeId scope, int depth) {
    const NodeId f = t_.child(call, Role::func);
    auto args_config = [&] {
      for (NodeId c = t_.node(call).first_child; c != kNoNode; c = t_.node(c).next_sibling)
        if (t_.node(c).role != Role::func && !config_value(c, scope, depth + 1)) return false;
      return true;
    };
    if (calls_kernel_factory(call)) return true;  // a kernel object, not an output
    if (t_.node(f).kind == Kind::Name && !info_.from_module(f)) {
      const std::string_view name = t_.text(f);
      if (name == "len" || name == "isinstance") return true;  // a size or a type, whatever the argument
      static const WordSet builtins = {"min",    "max",  "int",    "float",    "bool", "abs",       "round",
                                       "tuple",  "list", "dict",   "range",    "zip",  "enumerate", "sum",
                                       "divmod", "pow",  "sorted", "reversed", "any",  "all",       "str"};
      return builtins.contains(name) && !info_.functions.count(name) && !info_.classes.count(name) && args_config();
    }
    if (t_.node(f).kind != Kind::Attribute) return false;
    if (info_.from_module(f)) {
      const std::string path = q(f);
      if (path_under(path, "torch.cuda.get_device_properties") ||
          path_under(path, "torch.cuda.get_device_capability") || path_under(path, "torch.cuda.device_count") ||
          path_under(path, "torch.cuda.current_device"))
        return true;
      return (path_under(path, "math") || path == "triton.cdiv" || path == "triton.next_power_of_2" ||
              path == "triton.Config" || path == "torch.Size") &&
             args_config();
    }
    // An entry of a kept configuration (cfg.get("BLOCK"), self._grids.get(key)).
    static const WordSet lookups = {"get", "setdefault", "pop", "copy", "keys", "values", "items"};
    if (lookups.contains(t_.text(f))) return config_value(t_.child(f, Role::value), scope, depth + 1) && args_config();
    // Size queries of a tensor: numbers, not its data.
    static const WordSet queries = {"numel",          "size",          "stride",   "dim",        "element_size",
                                    "storage_offset", "is_contiguous", "nelement", "ndimension", "get_device"};
    return queries.contains(t_.text(f)) && args_config();
  }

  bool calls_kernel_factory(NodeId call) const {
    const NodeId f = t_.child(call, Role::func);
    const Kind k = t_.node(f).kind;
    return (k == Kind::Name || k == Kind::Attribute) && info_.kernel_factories.count(t_.text(f)) > 0;
  }

  // A name is a configuration when every binding of it in its scope (else at module level) is.
  bool config_name(NodeId name, NodeId scope, int depth) {
    const std::string_view text = t_.text(name);
    if (std::find(assumed_.begin(), assumed_.end(), text) != assumed_.end()) return true;
    if (text == "self") return false;
    if (info_.from_module(name) || info_.kernels.count(text)) return true;
    if (scope == kNoNode) scope = t_.root();
    for (const auto& [s, n] : resolving_)
      if (s == scope && n == text) return true;  // a cycle (n = n // 2): the other bindings decide
    resolving_.emplace_back(scope, text);
    bool found = false;
    bool ok = bindings_config(text, scope, depth, found);
    if (!found && scope != t_.root()) ok = bindings_config(text, t_.root(), depth, found);
    resolving_.pop_back();
    return found && ok;
  }

  // Every binding of `name` in `scope` (a def, or the module) has a configuration as its value;
  // `found` says whether there was any.
  bool bindings_config(std::string_view name, NodeId scope, int depth, bool& found) {
    bool ok = true;
    const bool in_init = scope != t_.root() && t_.text(scope) == "__init__";
    verify::walk_pruned(t_, scope, [&](NodeId n) {
      if (!ok) return false;
      const Kind k = t_.node(n).kind;
      if (n != scope && is_scope(k)) return false;
      if (k == Kind::arg && t_.text(n) == name) {  // a parameter: built once in __init__, else per call
        found = true;
        ok = in_init;
        return false;
      }
      if (k != Kind::Name || t_.text(n) != name) return true;
      const NodeId binder = binder_of(n);
      if (binder == kNoNode) return true;
      found = true;
      const Kind b = t_.node(binder).kind;
      NodeId value = kNoNode;
      if (b == Kind::Assign || b == Kind::AnnAssign || b == Kind::AugAssign || b == Kind::NamedExpr)
        value = t_.child(binder, Role::value);
      else if (b == Kind::For || b == Kind::AsyncFor)
        value = t_.child(binder, Role::iter);
      if (b == Kind::AnnAssign && value == kNoNode) return true;  // `x: int` binds nothing
      ok = value != kNoNode && config_value(value, scope, depth + 1);
      return false;
    });
    return ok;
  }

  static bool is_scope(Kind k) {
    return k == Kind::FunctionDef || k == Kind::AsyncFunctionDef || k == Kind::ClassDef || k == Kind::Lambda ||
           k == Kind::GeneratorExp || k == Kind::ListComp || k == Kind::SetComp || k == Kind::DictComp;
  }

  // The statement (or walrus) that binds a Name it is the target of, or kNoNode when it is read.
  NodeId binder_of(NodeId name) {
    ensure_parents();
    NodeId u = name;
    while (parent_[u] != kNoNode &&
           (t_.node(parent_[u]).kind == Kind::Tuple || t_.node(parent_[u]).kind == Kind::List ||
            t_.node(parent_[u]).kind == Kind::Starred))
      u = parent_[u];
    const NodeId p = parent_[u];
    if (p == kNoNode) return kNoNode;
    const Role r = t_.node(u).role;
    const Kind k = t_.node(p).kind;
    if (r == Role::target && (k == Kind::Assign || k == Kind::AnnAssign || k == Kind::AugAssign || k == Kind::For ||
                              k == Kind::AsyncFor || k == Kind::NamedExpr || k == Kind::comprehension))
      return p;
    if (r == Role::vars) return p;  // with ... as name: whatever the context gives
    return kNoNode;
  }

  // self.name as a value: every assignment to it in the module (and a class attribute of that
  // name) is a configuration; the slot being checked counts as one (its writes are all checked).
  bool config_attribute(const Slot& slot, int depth) {
    if (evaluating_ && same(*evaluating_, slot)) return true;
    for (const auto& [s, n] : resolving_)
      if (s == kNoNode && n == slot.name) return true;
    resolving_.emplace_back(kNoNode, slot.name);
    bool found = false, ok = true;
    for (NodeId n : info_.all_nodes) {
      if (!ok) break;
      const Kind k = t_.node(n).kind;
      if (k != Kind::Assign && k != Kind::AnnAssign && k != Kind::AugAssign) continue;
      verify::for_each_child(t_, n, Role::target, [&](NodeId target) {
        const bool on_self = t_.node(target).kind == Kind::Attribute && t_.text(target) == slot.name &&
                             t_.node(t_.child(target, Role::value)).kind == Kind::Name &&
                             t_.text(t_.child(target, Role::value)) == "self";
        const bool class_attribute = t_.node(target).kind == Kind::Name && t_.text(target) == slot.name &&
                                     enclosing_def(n) == kNoNode && in_class_body(n);
        if (!on_self && !class_attribute) return;
        found = true;
        const NodeId value = t_.child(n, Role::value);
        ok = ok && value != kNoNode && k != Kind::AugAssign &&
             config_value(value, class_attribute ? t_.root() : enclosing_def(n), depth + 1);
      });
    }
    resolving_.pop_back();
    return found && ok;
  }

  bool in_class_body(NodeId n) {
    ensure_parents();
    return parent_[n] != kNoNode && t_.node(parent_[n]).kind == Kind::ClassDef;
  }

  // ---- how the kept state is read ----

  bool slot_reads_ok(const Slot& slot) {
    if (auto it = slot_reads_.find(slot); it != slot_reads_.end()) return it->second;
    bool ok = true;
    for (NodeId n : info_.all_nodes) {
      if (!ok) break;
      if (!in_graph_[n]) continue;
      const auto& node = t_.node(n);
      bool read = false;
      if (slot.on_self) {
        read = node.kind == Kind::Attribute && t_.text(n) == slot.name &&
               t_.node(t_.child(n, Role::value)).kind == Kind::Name && t_.text(t_.child(n, Role::value)) == "self";
      } else {
        read = node.kind == Kind::Name && t_.text(n) == slot.name;
      }
      if (read) ok = read_use_ok(n, slot, 0);
    }
    slot_reads_.emplace(slot, ok);
    return ok;
  }

  bool is_launch(NodeId call) const {
    return call != kNoNode && std::binary_search(launches_sorted_.begin(), launches_sorted_.end(), call);
  }

  // A value read from kept state is used as a launch grid or a kernel argument, tested by a
  // membership (or None) test that only fills the cache, stored back, or held in a local used so.
  // `probe` names a local holding `cache.get(key)`: None until the cache is filled, so it says
  // whether this call is the first; it may only be None-tested by a fill that rebinds it.
  bool read_use_ok(NodeId r, const Slot& slot, int depth, std::string_view probe = {}) {
    ensure_parents();
    NodeId u = r;
    bool got = false;  // u is cache.get(key)
    while (parent_[u] != kNoNode) {
      const NodeId p = parent_[u];
      const Kind pk = t_.node(p).kind;
      if (pk == Kind::Subscript && t_.node(u).role == Role::value) {
        u = p;
        continue;
      }
      if (pk != Kind::Attribute) break;
      const NodeId call = parent_[p];
      if (call != kNoNode && t_.node(call).kind == Kind::Call && t_.node(p).role == Role::func) {
        const std::string_view method = t_.text(p);
        if (method == "setdefault" ||
            (method == "get" && t_.children(call, Role::arg).size() == 1 && t_.child(call, Role::keyword) == kNoNode)) {
          got = got || method == "get";
          u = call;
          continue;
        }
        // A mutation is checked as a write of its own; pop, get with a default, items() and the
        // rest read the cache's history or the cache itself.
        return mutators().contains(method) && method != "setdefault";
      }
      u = p;  // a field of a kept configuration
    }
    const NodeId p = parent_[u];
    if (p == kNoNode) return false;
    const Role role = t_.node(u).role;
    const Kind pk = t_.node(p).kind;
    if (written_by(u)) return true;                               // the write itself, checked on its own
    if (pk == Kind::Compare) return guards_filling(p, u, probe);  // before launches: `key in cache` as an argument
    if (!got && in_launch(u)) return true;
    if (pk == Kind::Assign && role == Role::value) {
      bool into_slot = true;
      std::vector<NodeId> targets;
      verify::for_each_child(t_, p, Role::target, [&](NodeId t) {
        targets.push_back(t);
        const auto s = slot_of(t);
        into_slot = into_slot && s && same(*s, slot);
      });
      if (into_slot) return true;
      if (targets.size() == 1 && t_.node(targets[0]).kind == Kind::Name && depth < 3)
        return local_uses_ok(t_.text(targets[0]), enclosing_def(p), slot, depth + 1, got);
    }
    return false;
  }

  // The expression is (part of) a launch's grid or of its arguments: kernel[grid](args).
  bool in_launch(NodeId u) {
    for (NodeId x = u; parent_[x] != kNoNode && !pyast::is_statement(t_.node(parent_[x]).kind); x = parent_[x]) {
      const NodeId p = parent_[x];
      if (is_launch(p) && t_.node(x).role != Role::func) return true;
      if (t_.node(p).kind == Kind::Subscript && t_.node(x).role == Role::slice && t_.node(p).role == Role::func &&
          is_launch(parent_[p]))
        return true;
    }
    return false;
  }

  bool written_by(NodeId u) {
    NodeId x = u;
    while (parent_[x] != kNoNode &&
           (t_.node(parent_[x]).kind == Kind::Tuple || t_.node(parent_[x]).kind == Kind::List ||
            t_.node(parent_[x]).kind == Kind::Starred))
      x = parent_[x];
    const NodeId p = parent_[x];
    if (p == kNoNode || t_.node(x).role != Role::target) return false;
    const Kind k = t_.node(p).kind;
    return k == Kind::Assign || k == Kind::AnnAssign || k == Kind::AugAssign || k == Kind::Delete;
  }

  // `key in cache`, `key not in cache`, `cache.get(key) is None`: fine as the test of an `if`
  // whose branches return nothing and launch nothing (they fill the cache); one testing a probe
  // (see read_use_ok) must also rebind it.
  bool guards_filling(NodeId compare, NodeId operand, std::string_view probe) {
    const auto& c = t_.node(compare);
    if (c.first_child == kNoNode || t_.node(c.first_child).next_sibling != c.last_child) return false;  // one op
    const bool membership = (c.op == 8 || c.op == 9) && t_.node(operand).role == Role::comparator;
    const NodeId other = operand == c.first_child ? c.last_child : c.first_child;
    const bool none_test = (c.op == 6 || c.op == 7) && t_.node(other).kind == Kind::Constant &&
                           t_.node(other).op == static_cast<std::uint16_t>(pyast::ConstKind::None);
    if (!membership && !none_test) return false;
    NodeId u = compare;
    while (parent_[u] != kNoNode &&
           (t_.node(parent_[u]).kind == Kind::BoolOp || t_.node(parent_[u]).kind == Kind::UnaryOp))
      u = parent_[u];
    const NodeId stmt = parent_[u];
    if (stmt == kNoNode || t_.node(stmt).kind != Kind::If || t_.node(u).role != Role::test) return false;
    bool fills_only = true, rebinds = probe.empty();
    for (NodeId s = t_.node(stmt).first_child; s != kNoNode && fills_only; s = t_.node(s).next_sibling) {
      if (t_.node(s).role != Role::body && t_.node(s).role != Role::orelse) continue;
      fills_only = verify::find_node(t_, s, [&](NodeId n) {
                     const Kind k = t_.node(n).kind;
                     if (k == Kind::Name && t_.text(n) == probe && binder_of(n) != kNoNode) rebinds = true;
                     return k == Kind::Return || k == Kind::Yield || is_launch(n);
                   }) == kNoNode;
    }
    return fills_only && rebinds;
  }

  // Every read of a local holding a value from kept state is a use read_use_ok accepts; a probe
  // (cache.get(key)) must be None-tested by a fill that rebinds it before it is used.
  bool local_uses_ok(std::string_view local, NodeId scope, const Slot& slot, int depth, bool probe) {
    if (scope == kNoNode) return false;
    std::vector<NodeId> uses;
    verify::for_each_node(t_, scope, [&](NodeId n) {
      if (t_.node(n).kind == Kind::Name && t_.text(n) == local && binder_of(n) == kNoNode) uses.push_back(n);
    });
    // A probe only tested (`if cache.get(key) is None: fill`) tells nothing to anything else.
    const bool used =
        std::any_of(uses.begin(), uses.end(), [&](NodeId n) { return t_.node(parent_[n]).kind != Kind::Compare; });
    bool guarded = !probe || !used;
    for (NodeId n : uses) {
      if (!read_use_ok(n, slot, depth, probe && used ? local : std::string_view())) return false;
      guarded = guarded || t_.node(parent_[n]).kind == Kind::Compare;
    }
    return guarded;
  }

  NodeId enclosing_def(NodeId n) {
    ensure_parents();
    for (NodeId p = parent_[n]; p != kNoNode; p = parent_[p])
      if (t_.node(p).kind == Kind::FunctionDef || t_.node(p).kind == Kind::AsyncFunctionDef) return p;
    return kNoNode;
  }

  // Parents, built the first time state written in the graph needs them (most candidates keep none).
  void ensure_parents() {
    if (!parent_.empty()) return;
    parent_.assign(t_.size(), kNoNode);
    for (NodeId n = 0; n < t_.size(); ++n)
      for (NodeId c = t_.node(n).first_child; c != kNoNode; c = t_.node(c).next_sibling) parent_[c] = n;
    launches_sorted_ = graph_.launches;
    std::sort(launches_sorted_.begin(), launches_sorted_.end());
  }

  const ModuleInfo& info_;
  const pyast::Tree& t_;
  std::vector<Finding>& out_;
  verify::CallGraph graph_;
  std::vector<bool> in_graph_;
  std::vector<bool> attribute_base_;  // nodes that are the `value` of an Attribute
  verify::NameSet layer_names_;
  // hack.output_cache's analysis of kept state (only when some state is written in the graph).
  std::vector<NodeId> parent_;
  std::vector<NodeId> launches_sorted_;
  std::map<Slot, bool> slot_reads_;
  std::map<Slot, int> write_sites_;
  std::vector<std::string_view> assumed_;  // names bound to configurations: a lambda's, a comprehension's
  std::vector<std::pair<NodeId, std::string_view>> resolving_;  // names being resolved, by scope
  std::optional<Slot> evaluating_;                              // the state whose written values are being checked
  int budget_ = 0;  // steps left for one check: a name chain is not followed forever
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

Result<Verification> verify_item(const Json& item, std::string_view task_source) {
  const auto text = [&](const char* key) { return item.is_object() && item.contains(key) ? &item[key] : nullptr; };
  const Json *code = text("code"), *response = text("response");
  if (!code == !response || !(code ? code : response)->is_string())
    return Error{"expected exactly one of \"code\" or \"response\", a string"};
  return code ? verify_code(code->get<std::string>(), task_source)
              : verify_response(response->get<std::string>(), task_source);
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
