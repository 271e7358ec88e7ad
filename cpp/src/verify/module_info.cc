#include "module_info.h"

namespace tritium::verify {

using pyast::Kind;
using pyast::kNoNode;
using pyast::Role;

bool is_kernel_decorator(const ModuleInfo& info, NodeId d) {
  const Tree& t = info.tree;
  NodeId callee = t.node(d).kind == Kind::Call ? t.child(d, Role::func) : d;
  if (info.qualified_root(callee) != "triton") return false;  // most calls: no path built
  const auto q = info.qualify(callee);
  if (!q) return false;
  return *q == "triton.jit" || *q == "triton.autotune" || *q == "triton.heuristics" || *q == "triton.runtime.jit.jit";
}

namespace {

bool is_def(Kind k) { return k == Kind::FunctionDef || k == Kind::AsyncFunctionDef; }

bool decorated_as_kernel(const ModuleInfo& info, NodeId def) {
  bool kernel = false;
  for_each_child(info.tree, def, Role::decorator, [&](NodeId d) { kernel = kernel || is_kernel_decorator(info, d); });
  return kernel;
}

// Where a statement list is: the module's top level, a block under it (`if HAS_X:`), a function's
// body (at any depth), or a class body (whose kernels are attributes, not module kernels).
enum class Scope { module, block, function, class_body };

// The statements below `parent` (statements nest only as deep as indentation, so recursion is
// bounded): kernels anywhere but in a class body, functions of top-level blocks, and the names
// each function returns (candidates for a kernel factory, decided once every kernel is known).
void scan_statements(ModuleInfo& info, NodeId parent, Scope scope, NodeId fn,
                     std::vector<std::pair<NodeId, std::string_view>>& returned) {
  const Tree& t = info.tree;
  for (NodeId s = t.node(parent).first_child; s != kNoNode; s = t.node(s).next_sibling) {
    switch (t.node(s).kind) {
      case Kind::FunctionDef:
      case Kind::AsyncFunctionDef: {
        const std::string_view name = t.text(s);
        // Top-level defs were sorted into kernels and functions already.
        const auto top = scope == Scope::module ? info.kernels.find(name) : info.kernels.end();
        const bool kernel = scope == Scope::module ? top != info.kernels.end() && top->second == s
                                                   : scope != Scope::class_body && decorated_as_kernel(info, s);
        if (kernel) {
          if (!info.kernels.count(name)) info.kernels.emplace(std::string(name), s);  // the first of a name
          info.kernel_defs.push_back(s);
          break;  // its body is Triton
        }
        if (scope == Scope::block && !info.functions.count(name)) info.functions.emplace(std::string(name), s);
        scan_statements(info, s, Scope::function, s, returned);
        break;
      }
      case Kind::ClassDef:
        scan_statements(info, s, Scope::class_body, kNoNode, returned);
        break;
      case Kind::Return: {
        const NodeId value = t.child(s, Role::value);
        if (fn == kNoNode || value == kNoNode) break;
        if (t.node(value).kind == Kind::Name) returned.emplace_back(fn, t.text(value));
        if (t.node(value).kind == Kind::Call && is_kernel_decorator(info, value))
          info.kernel_factories.emplace(t.text(fn));
        break;
      }
      case Kind::If:
      case Kind::For:
      case Kind::AsyncFor:
      case Kind::While:
      case Kind::With:
      case Kind::AsyncWith:
      case Kind::Try:
      case Kind::TryStar:
      case Kind::Match:
      case Kind::ExceptHandler:
      case Kind::match_case:
        scan_statements(info, s, scope == Scope::module ? Scope::block : scope, fn, returned);
        break;
      default:
        break;  // simple statements and expressions hold no statements
    }
  }
}

// The callee names a kernel factory: make_kernel(...), self.make_kernel(...), mod.make_kernel(...).
bool calls_factory(const ModuleInfo& info, NodeId call) {
  if (info.kernel_factories.empty() || call == kNoNode || info.tree.node(call).kind != Kind::Call) return false;
  const NodeId f = info.tree.child(call, Role::func);
  const Kind k = info.tree.node(f).kind;
  return (k == Kind::Name || k == Kind::Attribute) && info.kernel_factories.count(info.tree.text(f)) > 0;
}

// Kernels below the top level, kernel factories (a function returning a kernel), and the names
// bound to `triton.jit(fn)`, to a factory's result or to a kernel anywhere (`self.kernel = make_kernel(256)`).
void find_nested_kernels(ModuleInfo& info) {
  const Tree& t = info.tree;
  std::vector<std::pair<NodeId, std::string_view>> returned;
  scan_statements(info, t.root(), Scope::module, kNoNode, returned);
  for (const auto& [fn, name] : returned)
    if (info.kernels.count(name)) info.kernel_factories.emplace(t.text(fn));
  for (NodeId n : info.assignments) {
    const NodeId value = t.child(n, Role::value);
    if (value == kNoNode) continue;
    const Kind v = t.node(value).kind;
    bool kernel = false;
    if (v == Kind::Call) {
      // The cheap tests first: most assignments call something that is no decorator.
      const NodeId f = t.child(value, Role::func);
      const std::string_view last = t.text(f);
      const bool decorator_like = t.node(f).kind == Kind::Attribute
                                      ? last == "jit" || last == "autotune" || last == "heuristics"
                                      : t.node(f).kind == Kind::Name && info.from_module(f);
      kernel = (decorator_like && is_kernel_decorator(info, value)) || calls_factory(info, value);
    } else {
      kernel = v == Kind::Name && info.kernels.count(t.text(value)) > 0;  // self._relu = relu
    }
    if (!kernel) continue;
    for_each_child(t, n, Role::target, [&](NodeId target) {
      const Kind k = t.node(target).kind;
      if ((k == Kind::Name || k == Kind::Attribute) && !info.kernels.count(t.text(target)))
        info.kernels.emplace(std::string(t.text(target)), n);
    });
  }
  std::sort(info.kernel_defs.begin(), info.kernel_defs.end());
}

}  // namespace

ModuleInfo::ModuleInfo(const Tree& t) : tree(t) {
  const NodeId root = t.root();
  all_nodes.reserve(t.size());
  assignments.reserve(64);
  // One walk lists the nodes and reads the imports, anywhere (a function-level import binds the
  // same names for our purposes).
  for_each_node(t, root, [&](NodeId n) {
    all_nodes.push_back(n);
    const Kind k = t.node(n).kind;
    if (k == Kind::Assign) {
      assignments.push_back(n);
    } else if (k == Kind::Import) {
      for_each_child(t, n, Role::names, [&](NodeId a) {
        const std::string_view name = t.text(a);
        const NodeId as = t.child(a, Role::asname);
        if (as != kNoNode) {
          bind(t.text(as), std::string(name));
        } else {
          const std::string root_name(name.substr(0, name.find('.')));
          bind(root_name, root_name);
        }
      });
    } else if (k == Kind::ImportFrom) {
      const std::string_view module = t.text(n);
      for_each_child(t, n, Role::names, [&](NodeId a) {
        const std::string_view name = t.text(a);
        if (name == "*") return;
        const NodeId as = t.child(a, Role::asname);
        const std::string_view local = as != kNoNode ? t.text(as) : name;
        bind(local, module.empty() ? std::string(name) : std::string(module) + "." + std::string(name));
      });
    }
  });
  // Aliases by assignment, anywhere: `F = torch.nn.functional`, `mm = T.matmul` (flow-insensitive).
  for (int pass = 0; pass < 3; ++pass) {
    for (NodeId n : assignments) {
      const NodeId value = t.child(n, Role::value);
      if (!from_module(value)) continue;
      const auto q = qualify(value);
      if (!q) continue;
      for_each_child(t, n, Role::target, [&](NodeId target) {
        if (t.node(target).kind == Kind::Name) bind(t.text(target), *q);
      });
    }
  }
  std::vector<const std::string*> name_alias(t.size(), nullptr);
  for (NodeId n = 0; n < t.size(); ++n)  // arena order: sequential reads, and order is irrelevant
    if (t.node(n).kind == Kind::Name) name_alias[n] = alias_of(n);
  name_alias_ = std::move(name_alias);
  for (NodeId s = t.node(root).first_child; s != kNoNode; s = t.node(s).next_sibling) {
    if (t.node(s).role != Role::body) continue;
    const Kind k = t.node(s).kind;
    const std::string_view name = t.text(s);
    if (k == Kind::FunctionDef || k == Kind::AsyncFunctionDef) {
      bool kernel = false;
      for_each_child(t, s, Role::decorator, [&](NodeId d) { kernel = kernel || is_kernel_decorator(*this, d); });
      (kernel ? kernels : functions).insert_or_assign(std::string(name), s);
    } else if (k == Kind::ClassDef) {
      classes.insert_or_assign(std::string(name), s);
      if (name == "ModelNew") model_new = s;
    } else if (k == Kind::Assign || k == Kind::AnnAssign || k == Kind::AugAssign) {
      for_each_child(t, s, Role::target, [&](NodeId target) {
        for_each_node(t, target, [&](NodeId x) {
          if (t.node(x).kind == Kind::Name) module_variables.emplace(t.text(x));
        });
      });
      // `kernel = triton.jit(fn)` makes a kernel too.
      const NodeId value = t.child(s, Role::value);
      if (value != kNoNode && t.node(value).kind == Kind::Call && is_kernel_decorator(*this, value))
        for_each_child(t, s, Role::target, [&](NodeId target) {
          if (t.node(target).kind == Kind::Name) kernels.insert_or_assign(std::string(t.text(target)), s);
        });
    }
  }
  find_nested_kernels(*this);
  if (model_new != kNoNode) {
    model_new_methods = methods(model_new);
    if (auto it = model_new_methods.find("forward"); it != model_new_methods.end()) forward = it->second;
  }
}

NodeId ModuleInfo::chain_root(NodeId expr) const {
  NodeId n = expr;
  while (n != kNoNode && tree.node(n).kind == Kind::Attribute) n = tree.child(n, Role::value);
  return n != kNoNode && tree.node(n).kind == Kind::Name ? n : kNoNode;
}

void ModuleInfo::bind(std::string_view local, std::string path) {
  aliases.insert_or_assign(std::string(local), std::move(path));
  alias_filter_ |= name_filter_bit(local);
}

const std::string* ModuleInfo::alias_of(NodeId name) const {
  if (!name_alias_.empty()) return name_alias_[name];
  // Most names are no alias: the filter spares them the map lookup.
  const std::string_view text = tree.text(name);
  if (!(alias_filter_ & name_filter_bit(text))) return nullptr;
  const auto it = aliases.find(text);
  return it != aliases.end() ? &it->second : nullptr;
}

bool ModuleInfo::append_qualified(NodeId expr, std::string& out) const {
  // Not recursive: an a.b.c... chain is as long as the source. One walk down to the root Name
  // measures the path; a second writes it from its end.
  std::size_t size = 0;
  NodeId n = expr;
  while (n != kNoNode && tree.node(n).kind == Kind::Attribute) {
    size += 1 + tree.text(n).size();
    n = tree.child(n, Role::value);
  }
  if (n == kNoNode || tree.node(n).kind != Kind::Name) return false;
  const std::string* alias = alias_of(n);
  const std::string_view root = alias ? std::string_view(*alias) : tree.text(n);
  const std::size_t begin = out.size();
  out.resize(begin + root.size() + size);
  root.copy(out.data() + begin, root.size());
  std::size_t end = out.size();
  for (NodeId a = expr; a != n; a = tree.child(a, Role::value)) {
    const std::string_view attr = tree.text(a);
    end -= attr.size();
    attr.copy(out.data() + end, attr.size());
    out[--end] = '.';
  }
  return true;
}

std::optional<std::string> ModuleInfo::qualify(NodeId expr) const {
  std::string out;
  if (!append_qualified(expr, out)) return std::nullopt;
  return out;
}

std::string_view ModuleInfo::qualified_root(NodeId expr) const {
  const NodeId n = chain_root(expr);
  if (n == kNoNode) return {};
  const std::string* alias = alias_of(n);
  if (!alias) return tree.text(n);  // a name has no dots
  return std::string_view(*alias).substr(0, alias->find('.'));
}

bool ModuleInfo::from_module(NodeId expr) const {
  const NodeId n = chain_root(expr);
  return n != kNoNode && alias_of(n) != nullptr;
}

std::map<std::string_view, NodeId> ModuleInfo::methods(NodeId cls) const {
  std::map<std::string_view, NodeId> out;
  for_each_child(tree, cls, Role::body, [&](NodeId s) {
    const Kind k = tree.node(s).kind;
    if (k == Kind::FunctionDef || k == Kind::AsyncFunctionDef) out.insert_or_assign(tree.text(s), s);
  });
  return out;
}

CallGraph call_graph(const ModuleInfo& info) {
  CallGraph g;
  if (info.forward == kNoNode) return g;
  const Tree& t = info.tree;
  const auto& own_methods = info.model_new_methods;
  // Every class's methods, once (a call site asks them all).
  std::vector<std::map<std::string_view, NodeId>> class_methods;
  class_methods.reserve(info.classes.size());
  for (const auto& [name, cls] : info.classes) class_methods.push_back(info.methods(cls));
  // Breadth-first: g.functions holds every function reached, in order, and is the queue too.
  std::vector<bool> seen(t.size(), false);
  auto enqueue = [&](NodeId fn) {
    if (fn != kNoNode && !seen[fn]) {
      seen[fn] = true;
      g.functions.push_back(fn);
    }
  };
  enqueue(info.forward);
  auto is_kernel_ref = [&](NodeId e) {
    if (e == kNoNode) return false;
    // A kernel's name, or self.kernel / module.kernel aliases: the attribute names a module kernel;
    // or a factory's result used on the spot (make_kernel(256)[grid](...)).
    const Kind k = t.node(e).kind;
    return ((k == Kind::Name || k == Kind::Attribute) && info.kernels.count(t.text(e)) > 0) || calls_factory(info, e);
  };
  std::vector<NodeId> nested;  // the functions defined inside the one being walked
  for (std::size_t next = 0; next < g.functions.size(); ++next) {
    const NodeId fn = g.functions[next];
    nested.clear();
    // Kernels' bodies are Triton; a nested def runs only if the function refers to it (below).
    walk_pruned(t, fn, [&](NodeId n) {
      const Kind k = t.node(n).kind;
      if (n != fn && is_def(k)) {  // a kernel's body is Triton: not entered either
        if (!info.is_kernel_def(n)) nested.push_back(n);
        return false;
      }
      if (k != Kind::Call) return true;
      const NodeId callee = t.child(n, Role::func);
      const auto& c = t.node(callee);
      if (c.kind == Kind::Subscript && is_kernel_ref(t.child(callee, Role::value))) {
        g.launches.push_back(n);
        return true;
      }
      if (c.kind == Kind::Attribute && t.text(callee) == "run" && is_kernel_ref(t.child(callee, Role::value))) {
        g.launches.push_back(n);
        return true;
      }
      if (c.kind == Kind::Name) {
        const std::string_view name = t.text(callee);
        if (auto it = info.functions.find(name); it != info.functions.end()) enqueue(it->second);
        if (auto it = info.classes.find(name); it != info.classes.end()) {
          const auto& methods = class_methods[std::distance(info.classes.begin(), it)];
          for (const char* m : {"__call__", "__init__"})
            if (auto mit = methods.find(m); mit != methods.end()) enqueue(mit->second);
        }
      } else if (c.kind == Kind::Attribute) {
        const std::string_view attr = t.text(callee);
        const NodeId base = t.child(callee, Role::value);
        const bool on_self = t.node(base).kind == Kind::Name && t.text(base) == "self";
        if (on_self) {
          if (auto it = own_methods.find(attr); it != own_methods.end()) enqueue(it->second);
        }
        if (!info.from_module(callee)) {
          // obj.method(...): any module class's method of that name may run.
          for (const auto& methods : class_methods)
            if (auto it = methods.find(attr); it != methods.end()) enqueue(it->second);
        }
      }
      return true;
    });
    // A nested def called, passed or returned anywhere in the function (its own nested defs
    // included) may run: `def launch(): k[grid](...)` then `launch()`; one never named is a decoy.
    if (nested.empty()) continue;
    walk_pruned(t, fn, [&](NodeId n) {
      if (info.is_kernel_def(n)) return false;
      if (t.node(n).kind == Kind::Name)
        for (NodeId d : nested)
          if (t.text(d) == t.text(n)) enqueue(d);
      return true;
    });
  }
  return g;
}

}  // namespace tritium::verify
