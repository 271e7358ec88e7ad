// Launch-configuration knobs of a kernel's source (docs/search.md): integer literals given as
// num_warps, num_stages or BLOCK* at a launch `kernel[grid](...)`, or assigned to a BLOCK* name.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "tritium/pyast.h"
#include "tritium/search.h"

namespace tritium::search {
namespace {

using pyast::Kind;
using pyast::NodeId;
using pyast::Role;

bool is_block_name(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper.find("BLOCK") != std::string::npos;
}

bool is_knob_name(std::string_view name) { return name == "num_warps" || name == "num_stages" || is_block_name(name); }

// Byte offset of each line's start (line 1 at index 1).
std::vector<std::size_t> line_starts(const std::string& code) {
  std::vector<std::size_t> starts{0, 0};
  for (std::size_t i = 0; i < code.size(); ++i)
    if (code[i] == '\n') starts.push_back(i + 1);
  return starts;
}

std::size_t offset_of(const std::vector<std::size_t>& starts, std::uint32_t line, std::uint32_t col) {
  return line < starts.size() ? starts[line] + col : std::string::npos;
}

// The expression a launch's grid comes from: the subscript itself, or, when that is a name, the
// value of its nearest assignment before the launch.
NodeId grid_expression(const pyast::Tree& tree, NodeId launch) {
  const NodeId grid = tree.child(tree.child(launch, Role::func), Role::slice);
  if (grid == pyast::kNoNode || tree.node(grid).kind != Kind::Name) return grid;
  const auto& at = tree.node(launch).span;
  NodeId found = pyast::kNoNode;
  for (NodeId id = 0; id < tree.size(); ++id) {
    const auto& n = tree.node(id);
    if (n.kind != Kind::Assign || n.span.end_line > at.line) continue;
    const auto targets = tree.children(id, Role::target);
    if (targets.size() == 1 && tree.node(targets[0]).kind == Kind::Name && tree.text(targets[0]) == tree.text(grid))
      found = tree.child(id, Role::value);
  }
  return found;
}

// Offsets of the integer literals spelled `text` inside `expr`.
std::vector<std::size_t> same_literals(const pyast::Tree& tree, const std::vector<std::size_t>& starts, NodeId expr,
                                       std::string_view text) {
  std::vector<std::size_t> out;
  if (expr == pyast::kNoNode) return out;
  const auto& span = tree.node(expr).span;
  const std::size_t begin = offset_of(starts, span.line, span.col),
                    end = offset_of(starts, span.end_line, span.end_col);
  for (NodeId id = 0; id < tree.size(); ++id) {
    const auto& n = tree.node(id);
    if (n.kind != Kind::Constant || n.op != static_cast<std::uint16_t>(pyast::ConstKind::Int) || tree.text(id) != text)
      continue;
    const std::size_t at = offset_of(starts, n.span.line, n.span.col);
    if (at != std::string::npos && at >= begin && at < end) out.push_back(at);
  }
  return out;
}

}  // namespace

std::string Knob::apply(std::string code, long v) const {
  std::vector<std::size_t> at = tied;
  at.push_back(offset);
  std::sort(at.rbegin(), at.rend());  // from the end, so earlier offsets stay valid
  for (std::size_t o : at) code.replace(o, length, o == offset ? with(v) : std::to_string(v));  // a tie has our text
  return code;
}

std::vector<Knob> find_knobs(const std::string& code) {
  const auto parsed = pyast::parse(code);
  if (!parsed.ok()) return {};
  const auto& tree = parsed.tree;
  const auto starts = line_starts(code);
  std::vector<Knob> knobs;
  auto add = [&](std::string_view name, NodeId literal) {
    if (literal == pyast::kNoNode) return;
    const auto& n = tree.node(literal);
    if (n.kind != Kind::Constant || n.op != static_cast<std::uint16_t>(pyast::ConstKind::Int)) return;
    if (n.span.line != n.span.end_line || n.span.line >= starts.size()) return;
    const std::string_view text = tree.text(literal);
    long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return;  // 0x.., 1_024: left alone
    knobs.push_back({std::string(name), starts[n.span.line] + n.span.col, n.span.end_col - n.span.col, value});
  };
  for (NodeId id = 0; id < tree.size(); ++id) {
    const auto& n = tree.node(id);
    if (n.kind == Kind::Call && tree.node(tree.child(id, Role::func)).kind == Kind::Subscript) {
      std::vector<std::string_view> named;
      for (NodeId kw : tree.children(id, Role::keyword)) {
        named.push_back(tree.text(kw));
        if (!is_knob_name(tree.text(kw))) continue;
        const std::size_t before_add = knobs.size();
        const NodeId literal = tree.child(kw, Role::value);
        add(tree.text(kw), literal);
        if (knobs.size() > before_add && is_block_name(tree.text(kw)))
          knobs.back().tied = same_literals(tree, starts, grid_expression(tree, id), tree.text(literal));
      }
      // Launches that leave num_warps / num_stages to Triton's defaults (4 and 3 on NVIDIA GPUs).
      const std::size_t close = starts[n.span.end_line] + n.span.end_col - 1;  // the call's ')'
      std::size_t before = close;
      while (before > 0 && std::isspace(static_cast<unsigned char>(code[before - 1]))) --before;
      const std::string comma = before > 0 && (code[before - 1] == ',' || code[before - 1] == '(') ? "" : ", ";
      for (const auto& [name, fallback] : {std::pair{"num_warps", 4L}, std::pair{"num_stages", 3L}})
        if (std::find(named.begin(), named.end(), name) == named.end() && n.span.end_line < starts.size())
          knobs.push_back({name, close, 0, fallback, comma + name + "="});
    } else if (n.kind == Kind::Assign) {
      const auto targets = tree.children(id, Role::target);
      if (targets.size() == 1 && tree.node(targets[0]).kind == Kind::Name && is_block_name(tree.text(targets[0])))
        add(tree.text(targets[0]), tree.child(id, Role::value));
    }
  }
  std::stable_sort(knobs.begin(), knobs.end(), [](const Knob& a, const Knob& b) { return a.offset < b.offset; });
  return knobs;
}

std::vector<long> knob_values(const Knob& knob) {
  if (knob.name == "num_warps") return {4, 8, 2, 16, 1};
  if (knob.name == "num_stages") return {2, 3, 4, 1, 5};
  // Block sizes: powers of two around the current one, nearest first, within what Triton tiles well.
  long p = 1;
  while (p * 2 <= knob.value) p *= 2;
  std::vector<long> out;
  for (long v : {p, p * 2, p / 2, p * 4, p / 4})
    if (v >= 16 && v <= 16384 && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

}  // namespace tritium::search
