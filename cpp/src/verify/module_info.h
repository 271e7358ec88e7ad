// Private to verify: what a candidate module defines and imports, name resolution through
// aliases, and the call graph from ModelNew.forward.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tritium/pyast.h"

namespace tritium::verify {

using pyast::NodeId;
using pyast::Tree;

struct ModuleInfo {
  const Tree& tree;
  std::map<std::string, std::string> aliases;         // local name -> qualified path ("F" -> "torch.nn.functional")
  std::set<std::string, std::less<>> imported_roots;  // top-level names bound by imports ("torch", "F", "tl")
  std::map<std::string, NodeId> functions;            // top-level functions that are not kernels
  std::map<std::string, NodeId> kernels;              // top-level Triton kernels
  std::map<std::string, NodeId> classes;              // top-level classes
  std::set<std::string> module_variables;             // names assigned at module level
  std::vector<NodeId> all_nodes;                      // the whole tree in pre-order
  NodeId model_new = pyast::kNoNode;
  NodeId forward = pyast::kNoNode;

  explicit ModuleInfo(const Tree& t);

  /// The qualified dotted path of an expression through imports and aliases
  /// (`T.nn.functional.relu` -> "torch.nn.functional.relu"), if it is a dotted name.
  std::optional<std::string> qualify(NodeId expr) const;
  /// True when the expression is rooted in an imported module (or an alias of one).
  bool from_module(NodeId expr) const;
  /// Methods of a class, by name.
  std::map<std::string, NodeId> methods(NodeId cls) const;
};

/// Functions reachable from ModelNew.forward (forward included), and the kernel launches found
/// in them. Kernels are not entered.
struct CallGraph {
  std::vector<NodeId> functions;
  std::vector<NodeId> launches;  // the Call nodes of kernel[grid](...) / kernel.run(...)
};

CallGraph call_graph(const ModuleInfo& info);

/// Every node of a subtree, in pre-order.
std::vector<NodeId> walk(const Tree& tree, NodeId root);

/// The name a decorator or callee ends with, e.g. "triton.autotune(...)" -> qualified callee.
bool is_kernel_decorator(const ModuleInfo& info, NodeId decorator);

}  // namespace tritium::verify
