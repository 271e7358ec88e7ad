// Response extraction: the plan and the code of a raw LLM response, with their byte offsets.
//
// Scanning is line based and never copies until the end: everything is an offset into the
// response, so the spans are exact by construction (also with "\r\n" line endings and multi-byte
// text, since every cut falls on an ASCII character or a line start). The rules and their reasons
// are in docs/extraction.md.
#include <fmt/format.h>

#include <optional>

#include "tritium/verify.h"

namespace tritium {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kSpace = " \t\r\n\f\v";

std::string_view slice(std::string_view s, TextSpan r) { return s.substr(r.begin, r.end - r.begin); }

std::string_view trim(std::string_view s) {
  const std::size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

TextSpan trimmed(std::string_view s, TextSpan r) {
  while (r.begin < r.end && kSpace.find(s[r.begin]) != std::string_view::npos) ++r.begin;
  while (r.end > r.begin && kSpace.find(s[r.end - 1]) != std::string_view::npos) --r.end;
  return r;
}

bool blank(std::string_view s, TextSpan r) { return trim(slice(s, r)).empty(); }

// One line of a range. `text` lacks the '\n' and a '\r' before it, so fence and keyword tests
// read CRLF responses like LF ones; the offsets still count every byte.
struct Line {
  std::size_t begin = 0;
  std::size_t next = 0;  // where the following line starts (the range end after the last line)
  std::string_view text;
};

Line line_at(std::string_view s, std::size_t pos, std::size_t limit) {
  const std::size_t nl = s.find('\n', pos);
  const bool last = nl == std::string_view::npos || nl >= limit;
  const std::size_t end = last ? limit : nl;
  std::string_view text = s.substr(pos, end - pos);
  if (text.ends_with('\r')) text.remove_suffix(1);
  return {pos, last ? limit : nl + 1, text};
}

// Calls f(line) for each line of [r.begin, r.end).
template <class F>
void for_each_line(std::string_view s, TextSpan r, F&& f) {
  for (std::size_t pos = r.begin; pos < r.end;) {
    const Line line = line_at(s, pos, r.end);
    f(line);
    pos = line.next;
  }
}

bool ident_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

std::string_view skip_blanks(std::string_view t) {
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  return t;
}

// The rest of `t` after `keyword` and the blanks that must follow it, if `t` starts so.
std::optional<std::string_view> after_keyword(std::string_view t, std::string_view keyword) {
  if (!t.starts_with(keyword) || t.size() == keyword.size()) return std::nullopt;
  const char c = t[keyword.size()];
  if (c != ' ' && c != '\t') return std::nullopt;
  return skip_blanks(t.substr(keyword.size()));
}

// The rest of `t` after a leading identifier (dots allowed: `torch.nn`), if it starts with one.
std::optional<std::string_view> after_ident(std::string_view t) {
  if (t.empty() || !ident_start(t.front())) return std::nullopt;
  std::size_t i = 1;
  while (i < t.size() && (ident_char(t[i]) || t[i] == '.')) ++i;
  return t.substr(i);
}

bool opens_body(std::string_view rest, bool colon_ok) {
  rest = skip_blanks(rest);
  return !rest.empty() && (rest.front() == '(' || (colon_ok && rest.front() == ':'));
}

// `class ModelNew(` or `class ModelNew:` at the start of the line (module level).
bool defines_model_new(std::string_view t) {
  const auto rest = after_keyword(t, "class");
  return rest && rest->starts_with("ModelNew") && opens_body(rest->substr(8), true);
}

bool is_import(std::string_view t) {
  if (const auto rest = after_keyword(t, "import")) return after_ident(*rest).has_value();
  if (const auto rest = after_keyword(t, "from")) return rest->find(" import ") != std::string_view::npos;
  return false;
}

// A line that can start a Python module. Strict enough that prose ("from the above, ...",
// "class names are ...") does not pass.
bool starts_python(std::string_view t) {
  if (t.starts_with('@')) return t.size() > 1 && ident_start(t[1]);
  if (is_import(t)) return true;
  if (const auto rest = after_keyword(t, "class")) {
    const auto tail = after_ident(*rest);
    return tail && opens_body(*tail, true);
  }
  if (const auto rest = after_keyword(t, "def")) {
    const auto tail = after_ident(*rest);
    return tail && opens_body(*tail, false);
  }
  return false;
}

// ---- Fences (CommonMark's fenced code blocks, the parts LLM output uses) ----

struct Fence {
  char ch = '`';
  std::size_t length = 0;
  std::size_t indent = 0;
  std::string_view info;
};

// Up to 3 spaces, then 3 or more backticks or tildes, then an optional info string.
std::optional<Fence> parse_fence(std::string_view line) {
  std::size_t indent = 0;
  while (indent < line.size() && line[indent] == ' ') ++indent;
  if (indent > 3 || indent == line.size()) return std::nullopt;
  const char ch = line[indent];
  if (ch != '`' && ch != '~') return std::nullopt;
  std::size_t run_end = line.find_first_not_of(ch, indent);
  if (run_end == std::string_view::npos) run_end = line.size();
  if (run_end - indent < 3) return std::nullopt;
  const std::string_view info = trim(line.substr(run_end));
  // "```x = 1```" is inline code on one line, not a fence: backtick info strings hold no backtick.
  if (ch == '`' && info.find('`') != std::string_view::npos) return std::nullopt;
  return Fence{ch, run_end - indent, indent, info};
}

// A closing fence: the opener's character, at least as long, nothing after it.
bool closes(const Fence& open, std::string_view line) {
  const auto f = parse_fence(line);
  return f && f->ch == open.ch && f->length >= open.length && f->info.empty();
}

struct Block {
  std::size_t fence_begin = 0;  // the start of the opening fence line
  TextSpan code;                // the lines between the fences, with their line endings
  std::string language;         // the info string's first word, lower-cased
  bool closed = false;
  bool python = false;
  bool model_new = false;
  bool empty = false;
};

std::string language_of(std::string_view info) {
  std::string word(info.substr(0, info.find_first_of(kSpace)));
  for (char& c : word) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return word;
}

bool python_language(const std::string& language) {
  return language.empty() || language == "python" || language == "py" || language == "python3";
}

// Fills in what the chooser needs from the block's text. Lines of an indented block are read
// without the fence's indentation, so an indented `class ModelNew(` still counts as module level.
void describe(std::string_view s, const Fence& open, Block& b) {
  b.language = language_of(open.info);
  b.python = python_language(b.language);
  b.empty = blank(s, b.code);
  for_each_line(s, b.code, [&](const Line& line) {
    std::string_view t = line.text;
    for (std::size_t i = 0; i < open.indent && t.starts_with(' '); ++i) t.remove_prefix(1);
    b.model_new = b.model_new || defines_model_new(t);
  });
}

// The fenced blocks of [r.begin, r.end), in order. An unterminated block runs to the range end.
std::vector<Block> scan_blocks(std::string_view s, TextSpan r) {
  std::vector<Block> blocks;
  std::size_t pos = r.begin;
  while (pos < r.end) {
    const Line line = line_at(s, pos, r.end);
    pos = line.next;
    const auto open = parse_fence(line.text);
    if (!open) continue;
    Block b{line.begin, {pos, r.end}, {}, false, false, false, false};
    while (pos < r.end && !b.closed) {
      const Line inner = line_at(s, pos, r.end);
      if (closes(*open, inner.text)) {
        b.code.end = inner.begin;
        b.closed = true;
      }
      pos = inner.next;
    }
    describe(s, *open, b);
    blocks.push_back(std::move(b));
  }
  return blocks;
}

std::string plural(std::size_t n, std::string_view word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

// Among Python blocks: the last one defining ModelNew, else the last one.
const Block& choose_python(const std::vector<const Block*>& python, std::vector<std::string>& notes) {
  if (python.size() == 1) return *python.front();
  std::size_t defining = 0, chosen = 0;
  for (std::size_t i = 0; i < python.size(); ++i) {
    if (!python[i]->model_new) continue;
    ++defining;
    chosen = i;
  }
  const std::string n = plural(python.size(), "python block");
  if (defining == 0) {
    notes.push_back(fmt::format("{}, none defining ModelNew; chose the last", n));
    return *python.back();
  }
  if (defining == 1)
    notes.push_back(fmt::format("{}; chose block {}, the one defining ModelNew", n, chosen + 1));
  else
    notes.push_back(
        fmt::format("{}, {} defining ModelNew; chose the last of those (block {})", n, defining, chosen + 1));
  return *python[chosen];
}

// Picks the answer among blocks, Python ones first. A non-Python block is taken only when no
// Python block exists and it defines ModelNew (e.g. ```triton); a lone ```bash block is not code
// to verify.
std::optional<Block> choose_block(const std::vector<Block>& blocks, std::vector<std::string>& notes) {
  std::vector<const Block*> python, other;
  std::size_t empty = 0;
  for (const Block& b : blocks) {
    if (b.empty)
      ++empty;
    else
      (b.python ? python : other).push_back(&b);
  }
  if (empty > 0) notes.push_back(fmt::format("ignored {}", plural(empty, "empty code block")));
  if (python.empty()) {
    for (auto it = other.rbegin(); it != other.rend(); ++it) {
      if (!(*it)->model_new) continue;
      notes.push_back(fmt::format("no python block; took the ```{} block defining ModelNew", (*it)->language));
      return **it;
    }
  }
  if (!other.empty()) {
    std::string languages;
    for (const Block* b : other) languages += (languages.empty() ? "" : ", ") + b->language;
    notes.push_back(fmt::format("skipped {} ({})", plural(other.size(), "non-python block"), languages));
  }
  if (python.empty()) return std::nullopt;
  return choose_python(python, notes);
}

// ---- The <think> block ----

struct Think {
  std::size_t tag_begin = 0;  // where "<think>" starts (0 when the opening tag was in the prompt)
  TextSpan content;           // between the tags; to the end of the response when unterminated
  std::size_t after = 0;      // just past "</think>" (the response end when unterminated)
  bool closed = false;
};

std::optional<Think> find_think(std::string_view s, std::vector<std::string>& notes) {
  constexpr auto npos = std::string_view::npos;
  const std::size_t open = s.find(kThinkOpen);
  if (open == npos) {
    // Chat templates of reasoning models often put "<think>" in the prompt; the response then
    // starts inside the block and only the closing tag shows.
    const std::size_t close = s.find(kThinkClose);
    if (close == npos) return std::nullopt;
    notes.push_back("</think> without <think>: the think block starts at the start of the response");
    return Think{0, {0, close}, close + kThinkClose.size(), true};
  }
  const std::size_t body = open + kThinkOpen.size();
  const std::size_t close = s.find(kThinkClose, body);
  if (close == npos) return Think{open, {body, s.size()}, s.size(), false};
  return Think{open, {body, close}, close + kThinkClose.size(), true};
}

// ---- Choosing the code ----

struct Choice {
  std::size_t start = 0;  // the opening fence line, or the first line of bare code: the plan stops here
  TextSpan code;
  bool in_think = false;  // the code lies inside the think block
};

Choice choice_of(const Block& b, bool in_think, std::string_view where, std::vector<std::string>& notes) {
  if (!b.closed) notes.push_back(fmt::format("unterminated fence: code runs to the end of the {}", where));
  return {b.fence_begin, b.code, in_think};
}

// No fence at all, but the text reads as a Python module defining ModelNew: code from the first
// line that can start a module to the end.
std::optional<Choice> bare_code(std::string_view s, TextSpan r, std::vector<std::string>& notes) {
  std::optional<std::size_t> start;
  bool has_import = false, has_model_new = false;
  for_each_line(s, r, [&](const Line& line) {
    if (!start && starts_python(line.text)) start = line.begin;
    has_import = has_import || is_import(line.text);
    has_model_new = has_model_new || defines_model_new(line.text);
  });
  if (!start || !has_import || !has_model_new) return std::nullopt;
  notes.push_back("no fence; took bare code");
  return Choice{*start, {*start, r.end}, false};
}

// Blocks outside the think block first; then bare code outside it (only when it has no fence at
// all); then blocks inside it, as a last resort, since those are usually drafts.
std::optional<Choice> choose_code(std::string_view s, const std::optional<Think>& think,
                                  std::vector<std::string>& notes) {
  const std::size_t n = s.size();
  if (!think) {
    const auto blocks = scan_blocks(s, {0, n});
    if (auto b = choose_block(blocks, notes)) return choice_of(*b, false, "response", notes);
    return blocks.empty() ? bare_code(s, {0, n}, notes) : std::nullopt;
  }
  auto outside = scan_blocks(s, {0, think->tag_begin});
  if (!think->closed) {
    // The think block never ended, so its fences are the answer; it ends where the chosen one starts.
    for (auto& b : scan_blocks(s, {think->content.begin, n})) outside.push_back(std::move(b));
    const auto b = choose_block(outside, notes);
    if (!b) return std::nullopt;
    return choice_of(*b, b->fence_begin >= think->content.begin, "response", notes);
  }
  for (auto& b : scan_blocks(s, {think->after, n})) outside.push_back(std::move(b));
  if (auto b = choose_block(outside, notes)) return choice_of(*b, false, "response", notes);
  if (outside.empty()) {
    if (auto bare = bare_code(s, {think->after, n}, notes)) return bare;
  }
  const auto b = choose_block(scan_blocks(s, think->content), notes);
  if (!b) return std::nullopt;
  notes.push_back("no usable code outside <think>; took a block inside it");
  return choice_of(*b, true, "think block", notes);
}

// The plan: the think block (up to the code when the code lies in it), else the text before the
// code. A blank think block (thinking switched off) gives way to the text between it and the code.
TextSpan plan_region(std::string_view s, const std::optional<Think>& think, const std::optional<Choice>& code,
                     std::vector<std::string>& notes) {
  if (!think) return {0, code ? code->start : s.size()};
  TextSpan r = think->content;
  if (code && code->in_think) r.end = code->start;
  if (!think->closed)
    notes.push_back(code && code->in_think ? "unterminated <think>: the plan runs to the code fence"
                                           : "unterminated <think>: the plan runs to the end of the response");
  if (!blank(s, r) || !code || code->in_think || code->start < think->after) return r;
  notes.push_back("empty <think> block; the plan is the text between it and the code");
  return {think->after, code->start};
}

}  // namespace

Extraction extract_response(std::string_view response) {
  Extraction x;
  const auto think = find_think(response, x.notes);
  const auto code = choose_code(response, think, x.notes);
  if (code) {
    x.has_code = true;
    x.code_span = code->code;
    x.code = std::string(slice(response, x.code_span));
  } else {
    x.notes.push_back("no code found");
  }
  x.plan_span = trimmed(response, plan_region(response, think, code, x.notes));
  x.plan = std::string(slice(response, x.plan_span));
  return x;
}

Json to_json(const TextSpan& span) { return Json::array({span.begin, span.end}); }

Json to_json(const Extraction& x) {
  return {{"plan", x.plan},
          {"code", x.code},
          {"plan_span", to_json(x.plan_span)},
          {"code_span", to_json(x.code_span)},
          {"has_code", x.has_code},
          {"notes", x.notes}};
}

}  // namespace tritium
