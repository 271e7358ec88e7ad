// Private to verify: what a candidate module defines and imports, name resolution through
// aliases, and the call graph from ModelNew.forward.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tritium/pyast.h"

namespace tritium::verify {

using pyast::NodeId;
using pyast::Tree;

// Maps and sets keyed by name take std::less<> so that lookups by a node's string_view text
// build no std::string.
using NodeByName = std::map<std::string, NodeId, std::less<>>;
using NameSet = std::set<std::string, std::less<>>;

/// One bit of a 64-bit filter for a name, from its length and first letter. OR-ing the bits of a
/// set's names gives a filter that answers most misses (most names are in no set) with no lookup.
inline std::uint64_t name_filter_bit(std::string_view name) {
  const unsigned first = name.empty() ? 0 : static_cast<unsigned char>(name[0]);
  return std::uint64_t{1} << ((name.size() * 31 + first) & 63);
}

struct ModuleInfo {
  const Tree& tree;
  // Shorter names first, so that most comparisons in a lookup are of lengths, not text: every
  // name of the module is looked up in `aliases`.
  struct ShortFirst {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    }
  };
  // Local name -> qualified path ("F" -> "torch.nn.functional"). Its keys are exactly the names
  // bound by imports (or assigned an imported path): from_module asks whether a chain starts at one.
  std::map<std::string, std::string, ShortFirst> aliases;
  NodeByName functions;  // top-level functions that are not kernels (or in a top-level if/try/with block)
  // Triton kernels by name: defined anywhere but in a class body (top level, in an `if HAS_X:` block,
  // inside forward or a factory function), and names bound to `triton.jit(fn)` or to a factory's result.
  NodeByName kernels;
  std::vector<NodeId> kernel_defs;  // every kernel's def, wherever it is (names may repeat), sorted
  NameSet kernel_factories;         // functions and methods that return a kernel they define
  NodeByName classes;               // top-level classes
  NameSet module_variables;         // names assigned at module level
  std::vector<NodeId> all_nodes;    // the whole tree in pre-order
  std::vector<NodeId> assignments;  // every Assign, in pre-order
  NodeId model_new = pyast::kNoNode;
  NodeId forward = pyast::kNoNode;
  std::map<std::string_view, NodeId> model_new_methods;  // methods(model_new), asked for often

  explicit ModuleInfo(const Tree& t);
  ModuleInfo(const ModuleInfo&) = delete;  // name_alias_ points into aliases

  /// The qualified dotted path of an expression through imports and aliases
  /// (`T.nn.functional.relu` -> "torch.nn.functional.relu"), if it is a dotted name.
  std::optional<std::string> qualify(NodeId expr) const;
  /// The first component of qualify(expr) ("torch" for `T.nn.functional.relu`), without building
  /// the path; "" when the expression is not a dotted name.
  std::string_view qualified_root(NodeId expr) const;
  /// True when the expression is rooted in an imported module (or an alias of one).
  bool from_module(NodeId expr) const;
  /// Methods of a class, by name (views of the tree's text).
  std::map<std::string_view, NodeId> methods(NodeId cls) const;
  /// The node is a kernel's def: its body is Triton, not host code.
  bool is_kernel_def(NodeId n) const {
    const auto k = tree.node(n).kind;
    return (k == pyast::Kind::FunctionDef || k == pyast::Kind::AsyncFunctionDef) &&
           std::binary_search(kernel_defs.begin(), kernel_defs.end(), n);
  }

 private:
  // The Name at the root of an attribute chain, or kNoNode.
  NodeId chain_root(NodeId expr) const;
  // Binds a local name to a qualified path (aliases is only written here).
  void bind(std::string_view local, std::string path);
  // The alias a Name node stands for, or null.
  const std::string* alias_of(NodeId name) const;
  std::uint64_t alias_filter_ = 0;  // name_filter_bit of every alias
  // Each Name node's alias, filled once the aliases are final: the rules resolve every name,
  // several times, and a map lookup each time was a tenth of verification.
  std::vector<const std::string*> name_alias_;
  bool append_qualified(NodeId expr, std::string& out) const;
};

/// Functions reachable from ModelNew.forward (forward included), and the kernel launches found
/// in them. Kernels are not entered.
struct CallGraph {
  std::vector<NodeId> functions;
  std::vector<NodeId> launches;  // the Call nodes of kernel[grid](...) / kernel.run(...)
};

CallGraph call_graph(const ModuleInfo& info);

/// The first node of a subtree, in pre-order, for which pred(n) holds, or kNoNode. It walks the
/// child/sibling links (no list is built: the rules walk many subtrees), and is not recursive: a
/// long `a + b + ...` chain is a deep tree that the parser built in a loop.
template <class Pred>
NodeId find_node(const Tree& tree, NodeId root, Pred&& pred) {
  // The stack holds where to resume after a subtree.
  std::vector<NodeId> resume;
  NodeId n = root;
  while (true) {
    if (pred(n)) return n;
    const auto& node = tree.node(n);
    const NodeId next = n == root ? pyast::kNoNode : node.next_sibling;
    if (node.first_child != pyast::kNoNode) {
      if (next != pyast::kNoNode) resume.push_back(next);
      n = node.first_child;
    } else if (next != pyast::kNoNode) {
      n = next;
    } else if (!resume.empty()) {
      n = resume.back();
      resume.pop_back();
    } else {
      return pyast::kNoNode;
    }
  }
}

/// Calls visit(n) for every node of a subtree, in pre-order.
template <class Visit>
void for_each_node(const Tree& tree, NodeId root, Visit&& visit) {
  find_node(tree, root, [&](NodeId n) {
    visit(n);
    return false;
  });
}

/// Calls visit(n) for the nodes of a subtree in pre-order, entering n's children only when
/// visit(n) returns true (a nested def or a kernel's body can be skipped whole).
template <class Visit>
void walk_pruned(const Tree& tree, NodeId root, Visit&& visit) {
  std::vector<NodeId> resume;  // as find_node: where to go on after a subtree
  NodeId n = root;
  while (true) {
    const bool enter = visit(n);
    const auto& node = tree.node(n);
    const NodeId next = n == root ? pyast::kNoNode : node.next_sibling;
    if (enter && node.first_child != pyast::kNoNode) {
      if (next != pyast::kNoNode) resume.push_back(next);
      n = node.first_child;
    } else if (next != pyast::kNoNode) {
      n = next;
    } else if (!resume.empty()) {
      n = resume.back();
      resume.pop_back();
    } else {
      return;
    }
  }
}

/// Calls visit(c) for each child of `id` playing `role`, in order (Tree::children without the vector).
template <class Visit>
void for_each_child(const Tree& tree, NodeId id, pyast::Role role, Visit&& visit) {
  for (NodeId c = tree.node(id).first_child; c != pyast::kNoNode; c = tree.node(c).next_sibling)
    if (tree.node(c).role == role) visit(c);
}

/// The name a decorator or callee ends with, e.g. "triton.autotune(...)" -> qualified callee.
bool is_kernel_decorator(const ModuleInfo& info, NodeId decorator);

}  // namespace tritium::verify
