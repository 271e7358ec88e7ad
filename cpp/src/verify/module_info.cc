#include "module_info.h"

#include <deque>

namespace tritium::verify {

using pyast::Kind;
using pyast::kNoNode;
using pyast::Role;

std::vector<NodeId> walk(const Tree& tree, NodeId root) {
  // Pre-order along the child/sibling links; the stack holds where to resume after a subtree.
  std::vector<NodeId> out, resume;
  NodeId n = root;
  while (true) {
    out.push_back(n);
    const auto& node = tree.node(n);
    const NodeId next = n == root ? kNoNode : node.next_sibling;
    if (node.first_child != kNoNode) {
      if (next != kNoNode) resume.push_back(next);
      n = node.first_child;
    } else if (next != kNoNode) {
      n = next;
    } else if (!resume.empty()) {
      n = resume.back();
      resume.pop_back();
    } else {
      break;
    }
  }
  return out;
}


bool is_kernel_decorator(const ModuleInfo& info, NodeId d) {
  const Tree& t = info.tree;
  NodeId callee = t.node(d).kind == Kind::Call ? t.child(d, Role::func) : d;
  const auto q = info.qualify(callee);
  if (!q) return false;
  return *q == "triton.jit" || *q == "triton.autotune" || *q == "triton.heuristics" || *q == "triton.runtime.jit.jit";
}

ModuleInfo::ModuleInfo(const Tree& t) : tree(t) {
  const NodeId root = t.root();
  all_nodes = walk(t, root);
  std::vector<NodeId> assignments;
  // Imports anywhere (a function-level import binds the same names for our purposes).
  for (NodeId n : all_nodes) {
    if (t.node(n).kind == Kind::Assign) assignments.push_back(n);
    const Kind k = t.node(n).kind;
    if (k == Kind::Import) {
      for (NodeId a : t.children(n, Role::names)) {
        const std::string name(t.text(a));
        const NodeId as = t.child(a, Role::asname);
        if (as != kNoNode) {
          aliases[std::string(t.text(as))] = name;
          imported_roots.insert(std::string(t.text(as)));
        } else {
          const std::string root_name = name.substr(0, name.find('.'));
          aliases[root_name] = root_name;
          imported_roots.insert(root_name);
        }
      }
    } else if (k == Kind::ImportFrom) {
      const std::string module(t.text(n));
      for (NodeId a : t.children(n, Role::names)) {
        const std::string name(t.text(a));
        if (name == "*") continue;
        const NodeId as = t.child(a, Role::asname);
        const std::string local = as != kNoNode ? std::string(t.text(as)) : name;
        aliases[local] = module.empty() ? name : module + "." + name;
        imported_roots.insert(local);
      }
    }
  }
  // Aliases by assignment, anywhere: `F = torch.nn.functional`, `mm = T.matmul` (flow-insensitive).
  for (int pass = 0; pass < 3; ++pass) {
    for (NodeId n : assignments) {
      const NodeId value = t.child(n, Role::value);
      const auto q = qualify(value);
      if (!q || !from_module(value)) continue;
      for (NodeId target : t.children(n, Role::target))
        if (t.node(target).kind == Kind::Name) {
          aliases[std::string(t.text(target))] = *q;
          imported_roots.insert(std::string(t.text(target)));
        }
    }
  }
  for (NodeId s : t.children(root, Role::body)) {
    const Kind k = t.node(s).kind;
    const std::string name(t.text(s));
    if (k == Kind::FunctionDef || k == Kind::AsyncFunctionDef) {
      bool kernel = false;
      for (NodeId d : t.children(s, Role::decorator)) kernel = kernel || is_kernel_decorator(*this, d);
      (kernel ? kernels : functions)[name] = s;
    } else if (k == Kind::ClassDef) {
      classes[name] = s;
      if (name == "ModelNew") model_new = s;
    } else if (k == Kind::Assign || k == Kind::AnnAssign || k == Kind::AugAssign) {
      for (NodeId target : t.children(s, Role::target))
        for (NodeId x : walk(t, target))
          if (t.node(x).kind == Kind::Name) module_variables.insert(std::string(t.text(x)));
      // `kernel = triton.jit(fn)` makes a kernel too.
      const NodeId value = t.child(s, Role::value);
      if (value != kNoNode && t.node(value).kind == Kind::Call && is_kernel_decorator(*this, value))
        for (NodeId target : t.children(s, Role::target))
          if (t.node(target).kind == Kind::Name) kernels[std::string(t.text(target))] = s;
    }
  }
  if (model_new != kNoNode) {
    const auto m = methods(model_new);
    if (auto it = m.find("forward"); it != m.end()) forward = it->second;
  }
}

std::optional<std::string> ModuleInfo::qualify(NodeId expr) const {
  if (expr == kNoNode) return std::nullopt;
  const auto& n = tree.node(expr);
  if (n.kind == Kind::Name) {
    const std::string name(tree.text(expr));
    if (auto it = aliases.find(name); it != aliases.end()) return it->second;
    return name;
  }
  if (n.kind == Kind::Attribute) {
    auto base = qualify(tree.child(expr, Role::value));
    if (!base) return std::nullopt;
    return *base + "." + std::string(tree.text(expr));
  }
  return std::nullopt;
}

bool ModuleInfo::from_module(NodeId expr) const {
  NodeId n = expr;
  while (n != kNoNode && tree.node(n).kind == Kind::Attribute) n = tree.child(n, Role::value);
  if (n == kNoNode || tree.node(n).kind != Kind::Name) return false;
  return imported_roots.find(tree.text(n)) != imported_roots.end();
}

std::map<std::string, NodeId> ModuleInfo::methods(NodeId cls) const {
  std::map<std::string, NodeId> out;
  for (NodeId s : tree.children(cls, Role::body)) {
    const Kind k = tree.node(s).kind;
    if (k == Kind::FunctionDef || k == Kind::AsyncFunctionDef) out[std::string(tree.text(s))] = s;
  }
  return out;
}

CallGraph call_graph(const ModuleInfo& info) {
  CallGraph g;
  if (info.forward == kNoNode) return g;
  const Tree& t = info.tree;
  const auto own_methods = info.methods(info.model_new);
  std::set<NodeId> seen;
  std::deque<NodeId> queue{info.forward};
  auto enqueue = [&](NodeId fn) {
    if (fn != kNoNode && seen.insert(fn).second) queue.push_back(fn);
  };
  seen.insert(info.forward);
  auto is_kernel_ref = [&](NodeId e) {
    if (e == kNoNode) return false;
    if (t.node(e).kind == Kind::Name) return info.kernels.count(std::string(t.text(e))) > 0;
    // self.kernel / module.kernel aliases: the attribute names a module kernel.
    if (t.node(e).kind == Kind::Attribute) return info.kernels.count(std::string(t.text(e))) > 0;
    return false;
  };
  while (!queue.empty()) {
    const NodeId fn = queue.front();
    queue.pop_front();
    g.functions.push_back(fn);
    for (NodeId n : walk(t, fn)) {
      if (t.node(n).kind != Kind::Call) continue;
      const NodeId callee = t.child(n, Role::func);
      const auto& c = t.node(callee);
      if (c.kind == Kind::Subscript && is_kernel_ref(t.child(callee, Role::value))) {
        g.launches.push_back(n);
        continue;
      }
      if (c.kind == Kind::Attribute && t.text(callee) == "run" && is_kernel_ref(t.child(callee, Role::value))) {
        g.launches.push_back(n);
        continue;
      }
      if (c.kind == Kind::Name) {
        const std::string name(t.text(callee));
        if (auto it = info.functions.find(name); it != info.functions.end()) enqueue(it->second);
        if (auto it = info.classes.find(name); it != info.classes.end())
          for (const auto& [m, node] : info.methods(it->second))
            if (m == "__init__" || m == "__call__") enqueue(node);
      } else if (c.kind == Kind::Attribute) {
        const std::string attr(t.text(callee));
        const NodeId base = t.child(callee, Role::value);
        const bool on_self = t.node(base).kind == Kind::Name && t.text(base) == "self";
        if (on_self) {
          if (auto it = own_methods.find(attr); it != own_methods.end()) enqueue(it->second);
        }
        if (!info.from_module(callee)) {
          // obj.method(...): any module class's method of that name may run.
          for (const auto& [name, cls] : info.classes)
            for (const auto& [m, node] : info.methods(cls))
              if (m == attr) enqueue(node);
        }
      }
    }
  }
  return g;
}

}  // namespace tritium::verify
