#include "fstring.h"

#include <cctype>

namespace tritium::pyast {
namespace {

bool ident_char(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// CPython 3.12's tokenizer limits (Parser/lexer/state.h): MAXFSTRINGLEVEL f-strings open at
// once (the outermost counts), and MAX_EXPR_NESTING: a field in a format spec may not have a
// spec with fields of its own. They also bound this scanner's recursion.
constexpr int kMaxFStringLevel = 150;
constexpr int kMaxSpecNesting = 2;

class Scanner {
 public:
  explicit Scanner(std::string_view src, int level = 0) : s_(src), level_(level) {}

  StringResult scan(std::uint32_t pos) {
    StringResult r;
    const Prefix prefix = read_prefix(s_, pos);
    if (prefix.fstring && level_ + 1 >= kMaxFStringLevel) {
      r.error = "too many nested f-strings";
      r.error_pos = pos;
      return r;
    }
    pos_ = pos + prefix.length;
    quote_ = s_[pos_];
    triple_ = pos_ + 2 < s_.size() && s_[pos_ + 1] == quote_ && s_[pos_ + 2] == quote_;
    pos_ += triple_ ? 3 : 1;
    raw_ = prefix.raw;
    r.body_begin = pos_;
    if (prefix.fstring)
      body(r.pieces, /*in_spec=*/false);
    else
      plain(prefix.bytes);
    if (error_) {
      r.error = error_;
      r.error_pos = error_pos_;
      return r;
    }
    r.body_end = pos_;
    pos_ += triple_ ? 3 : 1;
    r.end = pos_;
    return r;
  }

 private:
  bool at_end() const { return pos_ >= s_.size(); }
  bool at_close() const {
    if (at_end() || s_[pos_] != quote_) return false;
    return !triple_ || (pos_ + 2 < s_.size() && s_[pos_ + 1] == quote_ && s_[pos_ + 2] == quote_);
  }
  void fail(const char* message, std::uint32_t where) {
    if (!error_) {
      error_ = message;
      error_pos_ = where;
    }
  }
  void unterminated() {
    fail(triple_ ? "unterminated triple-quoted string literal" : "unterminated string literal", start_);
  }

  // A backslash escapes the next character (in raw strings too, as far as ending goes).
  void escape() {
    pos_ += 1;
    if (at_end()) return;
    if (s_[pos_] == '\r' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
  }

  void plain(bool bytes) {
    start_ = pos_;
    while (!at_close()) {
      if (at_end() || (!triple_ && (s_[pos_] == '\n' || s_[pos_] == '\r'))) return unterminated();
      const unsigned char c = s_[pos_];
      if (bytes && c >= 0x80) return fail("bytes can only contain ASCII literal characters", pos_);
      if (c == '\\')
        escape();
      else
        ++pos_;
    }
  }

  // The body of an f-string, or of a format spec (which ends at the field's '}').
  void body(std::vector<FPiece>& pieces, bool in_spec) {
    start_ = pos_;
    std::uint32_t lit = pos_;
    auto flush = [&](std::uint32_t end) {
      if (end > lit) pieces.push_back(FPiece{false, lit, end, {}});
    };
    while (!error_) {
      if (at_close()) break;
      if (at_end() || (!triple_ && (s_[pos_] == '\n' || s_[pos_] == '\r'))) {
        if (in_spec) return fail("f-string: expecting '}'", pos_);
        return unterminated();
      }
      const char c = s_[pos_];
      if (in_spec && c == '}') break;
      if (c == '\\') {
        // \N{NAME} is an escape, not a field.
        if (!raw_ && pos_ + 1 < s_.size() && s_[pos_ + 1] == 'N' && pos_ + 2 < s_.size() && s_[pos_ + 2] == '{') {
          const auto close = s_.find('}', pos_);
          if (close == std::string_view::npos) return unterminated();
          pos_ = static_cast<std::uint32_t>(close + 1);
        } else if (raw_) {
          pos_ += (pos_ + 1 < s_.size() && (s_[pos_ + 1] == quote_ || s_[pos_ + 1] == '\\')) ? 2 : 1;
        } else {
          escape();
        }
      } else if (c == '{' && !in_spec && pos_ + 1 < s_.size() && s_[pos_ + 1] == '{') {
        pos_ += 2;
      } else if (c == '}' && !in_spec) {
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '}') {
          pos_ += 2;
        } else {
          return fail("f-string: single '}' is not allowed", pos_);
        }
      } else if (c == '{') {
        flush(pos_);
        FPiece piece{true, pos_, pos_, {}};
        field(piece.field);
        piece.end = piece.field.end;
        pieces.push_back(std::move(piece));
        lit = pos_;
      } else {
        ++pos_;
      }
    }
    flush(pos_);
  }

  void skip_space() {
    while (!at_end() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\f' || s_[pos_] == '\n' || s_[pos_] == '\r' ||
            (s_[pos_] == '\\' && pos_ + 1 < s_.size() && (s_[pos_ + 1] == '\n' || s_[pos_ + 1] == '\r'))))
      ++pos_;
  }

  // From '{' to just past the matching '}'.
  void field(FField& f) {
    if (spec_depth_ >= kMaxSpecNesting) return fail("f-string: expressions nested too deeply", pos_);
    f.begin = pos_++;
    f.expr_begin = pos_;
    int depth = 0;
    bool expr_done = false;
    while (!error_) {
      if (at_end()) return fail("f-string: expecting '}'", f.begin);
      const char c = s_[pos_];
      if (!triple_ && (c == '\n' || c == '\r')) {
        // PEP 701 allows newlines in fields of triple-quoted f-strings only.
        return fail("f-string: expecting '}'", f.begin);
      }
      if (c == '\'' || c == '"') {
        nested_string(pos_);
        continue;
      }
      if (ident_char(static_cast<unsigned char>(c))) {
        const Prefix p = read_prefix(s_, pos_);
        if (p.valid) {
          nested_string(pos_);
          continue;
        }
        while (!at_end() && ident_char(static_cast<unsigned char>(s_[pos_]))) ++pos_;
        continue;
      }
      if (c == '#') return fail("f-string expression part cannot include '#'", pos_);
      if (c == '(' || c == '[' || c == '{') {
        ++depth;
        ++pos_;
        continue;
      }
      if ((c == ')' || c == ']' || c == '}') && depth > 0) {
        --depth;
        ++pos_;
        continue;
      }
      if (depth == 0) {
        const char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : 0;
        if ((c == '=' || c == '!' || c == '<' || c == '>') && next == '=') {
          pos_ += 2;
          continue;
        }
        if (c == '=' || c == '!' || c == ':' || c == '}') {
          if (!expr_done) f.expr_end = pos_;
          expr_done = true;
          if (c == '=') {
            f.debug = true;
            ++pos_;
            skip_space();
            continue;
          }
          if (c == '!') {
            ++pos_;
            if (at_end() || !std::isalpha(static_cast<unsigned char>(s_[pos_])))
              return fail("f-string: missing conversion character", pos_);
            f.conversion = s_[pos_++];
            skip_space();
            continue;
          }
          if (c == ':') {
            ++pos_;
            f.has_spec = true;
            const auto saved_start = start_;
            ++spec_depth_;
            body(f.spec, /*in_spec=*/true);
            --spec_depth_;
            start_ = saved_start;
            if (error_) return;
            if (at_end() || s_[pos_] != '}') return fail("f-string: expecting '}'", f.begin);
            ++pos_;
            f.end = pos_;
            return;
          }
          ++pos_;  // '}'
          f.end = pos_;
          if (f.expr_end == f.expr_begin) return fail("f-string: valid expression required before '}'", f.begin);
          return;
        }
      }
      if (c == '\\' && pos_ + 1 < s_.size() && (s_[pos_ + 1] == '\n' || s_[pos_ + 1] == '\r')) {
        pos_ += 2;
        continue;
      }
      if (at_close() && depth == 0) return fail("f-string: expecting '}'", f.begin);
      ++pos_;
    }
  }

  void nested_string(std::uint32_t at) {
    Scanner inner(s_, level_ + 1);
    StringResult r = inner.scan(at);
    if (r.error) return fail(r.error, r.error_pos);
    pos_ = r.end;
  }

  std::string_view s_;
  std::uint32_t pos_ = 0, start_ = 0;
  char quote_ = 0;
  bool triple_ = false, raw_ = false;
  int level_;           // f-strings open around this literal
  int spec_depth_ = 0;  // format specs open around the scan position
  const char* error_ = nullptr;
  std::uint32_t error_pos_ = 0;
};

}  // namespace

Prefix read_prefix(std::string_view src, std::uint32_t pos) {
  Prefix p;
  std::uint32_t i = pos;
  int r = 0, b = 0, u = 0, f = 0;
  while (i < src.size() && i - pos < 3) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(src[i])));
    if (c == 'r')
      ++r;
    else if (c == 'b')
      ++b;
    else if (c == 'u')
      ++u;
    else if (c == 'f')
      ++f;
    else
      break;
    ++i;
  }
  if (i >= src.size() || (src[i] != '\'' && src[i] != '"')) return p;
  const int n = static_cast<int>(i - pos);
  const bool ok = r <= 1 && b <= 1 && u <= 1 && f <= 1 && (u == 0 || n == 1) && !(b && f) && n <= 2;
  if (!ok) return p;
  return Prefix{r == 1, b == 1, f == 1, true, static_cast<std::uint32_t>(n)};
}

StringResult scan_string(std::string_view src, std::uint32_t pos) { return Scanner(src).scan(pos); }

}  // namespace tritium::pyast
