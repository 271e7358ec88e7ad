// Private to verify: what a candidate module defines and imports, name resolution through
// aliases, and the call graph from ModelNew.forward.
#pragma once

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

struct ModuleInfo {
  const Tree& tree;
  // Local name -> qualified path ("F" -> "torch.nn.functional"). Its keys are exactly the names
  // bound by imports (or assigned an imported path): from_module asks whether a chain starts at one.
  std::map<std::string, std::string, std::less<>> aliases;
  NodeByName functions;       // top-level functions that are not kernels
  NodeByName kernels;         // top-level Triton kernels
  NodeByName classes;         // top-level classes
  NameSet module_variables;   // names assigned at module level
  std::vector<NodeId> all_nodes;  // the whole tree in pre-order
  NodeId model_new = pyast::kNoNode;
  NodeId forward = pyast::kNoNode;

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

 private:
  // The Name at the root of an attribute chain, or kNoNode.
  NodeId chain_root(NodeId expr) const;
  // The alias a Name node stands for, or null.
  const std::string* alias_of(NodeId name) const;
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

/// Calls visit(n) for every node of a subtree, in pre-order, along the child/sibling links
/// (no list is built: the rules walk many subtrees). Not recursive: a long `a + b + ...` chain
/// is a deep tree that the parser built in a loop.
template <class Visit>
void for_each_node(const Tree& tree, NodeId root, Visit&& visit) {
  // The stack holds where to resume after a subtree.
  std::vector<NodeId> resume;
  NodeId n = root;
  while (true) {
    visit(n);
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
      break;
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
