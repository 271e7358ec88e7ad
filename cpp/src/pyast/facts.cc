// The verifier's facts as text lines, the C++ twin of python/tests/pyast_facts.py: the
// differential tests compare the two on real corpora. docs/pyast.md defines the format.
#include <string>

#include "tritium/pyast.h"

namespace tritium::pyast {
namespace {

std::string join(const Tree& tree, const std::vector<NodeId>& exprs) {
  std::string out;
  for (std::size_t k = 0; k < exprs.size(); ++k) out += (k ? "," : "") + render(tree, exprs[k]);
  return out;
}

std::string line(const Tree& tree, NodeId id) { return std::to_string(tree.node(id).span.line); }

// Recursive over the tuples, lists and starred items of a target, which nest only in brackets:
// at most 200 deep (the lexer's limit).
void attribute_targets(const Tree& tree, NodeId t, std::vector<std::string>& out) {
  const Kind k = tree.node(t).kind;
  if (k == Kind::Attribute) out.push_back("attrassign\t" + line(tree, t) + "\t" + render(tree, t));
  if (k == Kind::Tuple || k == Kind::List)
    for (NodeId e : tree.children(t)) attribute_targets(tree, e, out);
  if (k == Kind::Starred) attribute_targets(tree, tree.child(t, Role::value), out);
}

// The facts of one node; facts() walks the tree.
void visit(const Tree& tree, NodeId id, std::vector<std::string>& out) {
  const Node& n = tree.node(id);
  const std::string ln = line(tree, id);
  switch (n.kind) {
    case Kind::FunctionDef:
    case Kind::AsyncFunctionDef:
      out.push_back("def\t" + ln + "\t" + std::string(tree.text(id)) + "\t" +
                    (n.kind == Kind::AsyncFunctionDef ? "1" : "0") + "\t" +
                    join(tree, tree.children(id, Role::decorator)));
      break;
    case Kind::ClassDef:
      out.push_back("class\t" + ln + "\t" + std::string(tree.text(id)) + "\t" +
                    join(tree, tree.children(id, Role::base)) + "\t" + join(tree, tree.children(id, Role::decorator)));
      break;
    case Kind::Call:
      out.push_back("call\t" + ln + "\t" + render(tree, tree.child(id, Role::func)));
      break;
    case Kind::Import:
      for (NodeId a : tree.children(id, Role::names)) {
        const NodeId as = tree.child(a, Role::asname);
        out.push_back("import\t" + ln + "\t" + std::string(tree.text(a)) + "\t" +
                      (as == kNoNode ? "-" : std::string(tree.text(as))));
      }
      break;
    case Kind::ImportFrom:
      for (NodeId a : tree.children(id, Role::names)) {
        const NodeId as = tree.child(a, Role::asname);
        out.push_back("from\t" + ln + "\t" + std::to_string(n.op) + "\t" + std::string(tree.text(id)) + "\t" +
                      std::string(tree.text(a)) + "\t" + (as == kNoNode ? "-" : std::string(tree.text(as))));
      }
      break;
    case Kind::Assign:
      for (NodeId t : tree.children(id, Role::target)) attribute_targets(tree, t, out);
      break;
    case Kind::AugAssign:
    case Kind::AnnAssign:
      attribute_targets(tree, tree.child(id, Role::target), out);
      break;
    case Kind::Try:
    case Kind::TryStar: {
      std::string handlers;
      for (NodeId h : tree.children(id, Role::handler)) {
        const NodeId type = tree.child(h, Role::type);
        handlers += (handlers.empty() ? "" : ",") + (type == kNoNode ? std::string("*") : render(tree, type));
      }
      out.push_back("try\t" + ln + "\t" + (n.kind == Kind::TryStar ? "1" : "0") + "\t" + handlers + "\t" +
                    (tree.child(id, Role::finalbody) == kNoNode ? "0" : "1"));
      break;
    }
    case Kind::With:
    case Kind::AsyncWith: {
      std::vector<NodeId> contexts;
      for (NodeId item : tree.children(id, Role::item)) contexts.push_back(tree.child(item, Role::context));
      out.push_back("with\t" + ln + "\t" + (n.kind == Kind::AsyncWith ? "1" : "0") + "\t" + join(tree, contexts));
      break;
    }
    default:
      break;
  }
}

}  // namespace

std::vector<std::string> facts(const Tree& tree) {
  std::vector<std::string> out;
  if (tree.root() == kNoNode) return out;
  // Pre-order without recursion: a long chain (a + b + ..., a.b.c, elif) is a tree as deep as
  // the source is long. `resume` holds where to go on after each open subtree.
  std::vector<NodeId> resume;
  NodeId n = tree.root();
  while (true) {
    visit(tree, n, out);
    const Node& node = tree.node(n);
    if (node.first_child != kNoNode) {
      if (node.next_sibling != kNoNode) resume.push_back(node.next_sibling);
      n = node.first_child;
    } else if (node.next_sibling != kNoNode) {
      n = node.next_sibling;
    } else if (!resume.empty()) {
      n = resume.back();
      resume.pop_back();
    } else {
      break;
    }
  }
  return out;
}

}  // namespace tritium::pyast
