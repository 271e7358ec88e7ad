#include "lexer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>

#include "fstring.h"

namespace tritium::pyast {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// ASCII identifier characters, as a table over all bytes (false from 0x80): the lexer's hottest loop.
constexpr auto kAsciiIdentifier = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 128; ++c)
    t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  return t;
}();

// Only these letters can start a string prefix (r, b, u, f in either case).
bool may_prefix_string(char c) {
  switch (c) {
    case 'r':
    case 'R':
    case 'b':
    case 'B':
    case 'u':
    case 'U':
    case 'f':
    case 'F':
      return true;
    default:
      return false;
  }
}
// Bytes that start a name (or a prefixed string): ASCII letters, '_', and any non-ASCII byte
// (name_or_string decodes and checks it).
constexpr auto kNameStart = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = c >= 0x80 || (c < 128 && kAsciiIdentifier[c] && !(c >= '0' && c <= '9'));
  return t;
}();
bool starts_name(char c) { return kNameStart[static_cast<unsigned char>(c)]; }

// How many of the 8 bytes at p, from the first, are ASCII identifier bytes [0-9A-Za-z_]: all
// bytes tested at once (SWAR), with no branch per byte to mispredict at the end of each name.
unsigned ascii_name_bytes(const char* p) {
  std::uint64_t x;
  std::memcpy(&x, p, 8);
  constexpr std::uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  // For bytes below 0x80: the high bit set where lo <= byte <= hi (no carry crosses bytes).
  auto in_range = [](std::uint64_t v, unsigned lo, unsigned hi) {
    return (v + ones * (0x80 - lo)) & ~(v + ones * (0x7F - hi)) & high;
  };
  const std::uint64_t low7 = x & ~high;
  const std::uint64_t folded = low7 | (ones * 0x20);  // A-Z onto a-z
  const std::uint64_t ok =
      (in_range(low7, '0', '9') | in_range(folded, 'a', 'z') | in_range(low7, '_', '_')) & ~x;  // & ~x: not ASCII
  const std::uint64_t stop = ~ok & high;
  if constexpr (std::endian::native == std::endian::little)
    return stop ? static_cast<unsigned>(std::countr_zero(stop)) / 8 : 8;
  else
    return stop ? static_cast<unsigned>(std::countl_zero(stop)) / 8 : 8;
}

// Decodes one UTF-8 code point at s[i]; returns its length (0 when malformed).
int decode_utf8(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  int n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
  if (n == 0 || b >= 0xF8 || i + n > s.size()) return 0;
  cp = b & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

// An approximation of Unicode XID_Continue for code points above ASCII: letters and marks of
// every script are accepted; punctuation, symbols, spaces and emoji blocks are not.
bool is_identifier_code_point(char32_t c) {
  if (c < 0xC0) return c == 0xAA || c == 0xB5 || c == 0xBA || c == 0xB7;
  if (c == 0xD7 || c == 0xF7) return false;
  if (c >= 0x2000 && c <= 0x206F) return c == 0x203F || c == 0x2040 || c == 0x2054;  // punctuation
  if (c >= 0x20A0 && c <= 0x20CF) return false;                                      // currency
  if (c >= 0x2190 && c <= 0x2BFF) return false;  // arrows, math operators, shapes, dingbats
  if (c >= 0x3000 && c <= 0x3004) return false;  // CJK punctuation
  if (c >= 0x3008 && c <= 0x3020) return false;
  if (c >= 0xFE00 && c <= 0xFE0F) return false;  // variation selectors
  if (c >= 0xFF01 && c <= 0xFF0F) return false;  // fullwidth punctuation
  if (c >= 0xFFF0 && c <= 0xFFFF) return false;
  if (c >= 0x1F000 && c <= 0x1FAFF) return false;  // emoji and pictographs
  return true;
}

class Lexer {
 public:
  Lexer(std::string_view s, const LexStart& start)
      : s_(s),
        pos_(start.begin),
        end_(static_cast<std::uint32_t>(std::min<std::size_t>(start.end, s.size()))),
        line_(start.line),
        line_start_(start.line_start),
        brackets_mode_(start.in_brackets),
        depth_(start.brackets) {}

  Lexed run() {
    out_.tokens.reserve((end_ - pos_) / 3 + 16);  // typical code has a token per 3.5 bytes
    if (!brackets_mode_) {                        // a module: room for usual nesting at once, rather than growing
      brackets_.reserve(16);
      indents_.reserve(16);
      alt_indents_.reserve(16);
    }
    indents_.push_back(0);
    alt_indents_.push_back(0);
    while (!out_.error) {
      if (at_bol_ && brackets_.empty() && !brackets_mode_) {
        indentation();
        if (out_.error) break;
      }
      skip_blanks();
      if (pos_ >= end_) break;
      const char c = s_[pos_];
      if (starts_name(c)) {  // the commonest token first
        name_or_string();
      } else if (c == '#') {
        skip_comment();
      } else if (c == '\\') {
        continuation();
      } else if (c == '\n' || c == '\r') {
        newline_char();
      } else if (is_digit(c) || (c == '.' && pos_ + 1 < end_ && is_digit(s_[pos_ + 1]))) {
        number();
      } else if (c == '\'' || c == '"') {
        string_at(pos_);
      } else {
        op();
      }
    }
    if (!out_.error) finish();
    return std::move(out_);
  }

 private:
  Span span_at(std::uint32_t begin) const { return {line_, begin - line_start_, line_, begin - line_start_}; }

  void emit(Tok kind, std::uint32_t begin, std::uint32_t end, Span span) {
    // Written field by field into the vector's slot: a Token built on the stack and copied made
    // the compiler reload it in wide words right after narrow stores (a store-forwarding stall).
    Token& t = out_.tokens.emplace_back();
    t.kind = kind;
    t.begin = begin;
    t.end = end;
    t.span.line = span.line;
    t.span.col = span.col;
    t.span.end_line = span.end_line;
    t.span.end_col = span.end_col;
    if (kind == Tok::Op || kind == Tok::Name) {
      t.code = pack_at(begin, end - begin);
      t.keyword = kind == Tok::Name && t.code != kLongText && is_keyword_code(t.code);
    }
  }
  // pack() of s_[begin, begin + n): one unaligned load where the source has 8 bytes there (the
  // loop in pack() was a good part of the lexer's time).
  std::uint64_t pack_at(std::uint32_t begin, std::uint32_t n) const {
    if constexpr (std::endian::native == std::endian::little) {
      if (n <= 8 && begin + 8 <= s_.size()) {
        std::uint64_t word;
        std::memcpy(&word, s_.data() + begin, 8);
        return n == 8 ? word : word & ((std::uint64_t{1} << (8 * n)) - 1);
      }
    }
    return pack(s_.substr(begin, n));
  }

  // A token on one line from `begin` to pos_.
  void emit_here(Tok kind, std::uint32_t begin) {
    emit(kind, begin, pos_, {line_, begin - line_start_, line_, pos_ - line_start_});
    at_bol_ = false;
  }
  void error(const std::string& message, std::uint32_t at) {
    error_at(message, line_, at >= line_start_ ? at - line_start_ : 0);
  }
  void error_at(const std::string& message, std::uint32_t line, std::uint32_t col) {
    if (!out_.error) out_.error = SyntaxError{line, col, message};
  }

  // Consumes one line break at pos_ ("\n", "\r\n" or "\r").
  void eat_newline() {
    if (s_[pos_] == '\r' && pos_ + 1 < end_ && s_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++line_;
    line_start_ = pos_;
  }

  void skip_blanks() {
    while (pos_ < end_ && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\f')) ++pos_;
  }
  // To the end of the line ('\n', or '\r' alone): memchr scans a long comment far faster than a loop.
  void skip_comment() {
    const char* p = s_.data() + pos_;
    const char* end = s_.data() + end_;
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (!nl) nl = end;
    const char* cr = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(nl - p)));
    pos_ = static_cast<std::uint32_t>((cr ? cr : nl) - s_.data());
  }

  void continuation() {
    const std::uint32_t at = pos_;
    ++pos_;
    if (pos_ >= end_) return error("unexpected EOF while parsing", at);
    if (s_[pos_] != '\n' && s_[pos_] != '\r')
      return error("unexpected character after line continuation character", at);
    eat_newline();
    if (pos_ >= end_ && !brackets_mode_) error("unexpected EOF while parsing", at);
  }

  void newline_char() {
    if (!brackets_.empty() || brackets_mode_) return eat_newline();
    const std::uint32_t at = pos_;
    const Span span = span_at(at);
    eat_newline();
    emit(Tok::Newline, at, pos_, {span.line, span.col, span.line, span.col + 1});
    at_bol_ = true;
  }

  // At the start of a logical line: measure indentation, skip blank lines, emit INDENT/DEDENT.
  void indentation() {
    while (true) {
      std::uint32_t col = 0, alt = 0;
      while (pos_ < end_) {
        const char c = s_[pos_];
        if (c == ' ') {
          const std::uint32_t n = spaces_here();
          col += n;
          alt += n;
          pos_ += n;
          continue;
        } else if (c == '\t') {
          col = (col / 8 + 1) * 8;
          ++alt;
        } else if (c == '\f') {
          col = alt = 0;
        } else {
          break;
        }
        ++pos_;
      }
      if (pos_ >= end_) return;
      const char c = s_[pos_];
      if (c == '#' || c == '\n' || c == '\r') {  // a blank line: no tokens, no indentation
        skip_comment();
        if (pos_ < end_) eat_newline();
        continue;
      }
      apply_indent(col, alt);
      return;
    }
  }

  // How many spaces start at pos_ (within end_): eight at a time, for indentation.
  std::uint32_t spaces_here() const {
    std::uint32_t n = 0;
    while (pos_ + n + 8 <= end_) {
      std::uint64_t x;
      std::memcpy(&x, s_.data() + pos_ + n, 8);
      x ^= 0x2020202020202020ull;  // zero bytes where the spaces are
      if (x != 0) {
        const int zeros = std::endian::native == std::endian::little ? std::countr_zero(x) : std::countl_zero(x);
        return n + static_cast<std::uint32_t>(zeros) / 8;
      }
      n += 8;
    }
    while (pos_ + n < end_ && s_[pos_ + n] == ' ') ++n;
    return n;
  }

  void apply_indent(std::uint32_t col, std::uint32_t alt) {
    const Span here = span_at(pos_);
    if (col == indents_.back()) {
      if (alt != alt_indents_.back()) error("inconsistent use of tabs and spaces in indentation", pos_);
      return;
    }
    if (col > indents_.back()) {
      if (alt <= alt_indents_.back()) return error("inconsistent use of tabs and spaces in indentation", pos_);
      // CPython's MAXINDENT: the 100th level is refused (the stack holds level 0 too).
      if (indents_.size() >= kMaxIndent) return error_at("too many levels of indentation", line_, 0);
      indents_.push_back(col);
      alt_indents_.push_back(alt);
      emit(Tok::Indent, pos_, pos_, here);
      return;
    }
    while (col < indents_.back()) {
      indents_.pop_back();
      alt_indents_.pop_back();
      emit(Tok::Dedent, pos_, pos_, here);
    }
    if (col != indents_.back()) return error("unindent does not match any outer indentation level", pos_);
    if (alt != alt_indents_.back()) error("inconsistent use of tabs and spaces in indentation", pos_);
  }

  void finish() {
    if (!brackets_.empty()) {
      const auto& [ch, line, col] = brackets_.back();
      return error_at(std::string("'") + ch + "' was never closed", line, col);
    }
    if (brackets_mode_) {
      emit(Tok::End, pos_, pos_, span_at(pos_));
      return;
    }
    const bool need_newline = !out_.tokens.empty() && out_.tokens.back().kind != Tok::Newline &&
                              out_.tokens.back().kind != Tok::Dedent && out_.tokens.back().kind != Tok::Indent;
    if (need_newline) emit(Tok::Newline, pos_, pos_, span_at(pos_));
    for (std::size_t i = 1; i < indents_.size(); ++i) emit(Tok::Dedent, pos_, pos_, span_at(pos_));
    emit(Tok::End, pos_, pos_, span_at(pos_));
  }

  void digits(bool (*ok)(char), const char* what) {
    // digit (_? digit)*, with the first digit already consumed by the caller or not.
    while (pos_ < end_) {
      if (s_[pos_] == '_') {
        if (pos_ + 1 < end_ && ok(s_[pos_ + 1])) {
          pos_ += 2;
          continue;
        }
        return error(std::string("invalid ") + what + " literal", pos_);
      }
      if (!ok(s_[pos_])) return;
      ++pos_;
    }
  }

  void number() {
    const std::uint32_t begin = pos_;
    const char c = s_[pos_];
    const char x = pos_ + 1 < end_ ? static_cast<char>(std::tolower(static_cast<unsigned char>(s_[pos_ + 1]))) : 0;
    if (c == '0' && (x == 'x' || x == 'o' || x == 'b')) {
      pos_ += 2;
      auto ok = x == 'x'   ? +[](char d) { return std::isxdigit(static_cast<unsigned char>(d)) != 0; }
                : x == 'o' ? +[](char d) { return d >= '0' && d <= '7'; }
                           : +[](char d) { return d == '0' || d == '1'; };
      const char* what = x == 'x' ? "hexadecimal" : x == 'o' ? "octal" : "binary";
      if (pos_ < end_ && s_[pos_] == '_') ++pos_;
      if (pos_ >= end_ || !ok(s_[pos_])) return error(std::string("invalid ") + what + " literal", pos_);
      digits(ok, what);
      if (out_.error) return;
      if (pos_ < end_ && is_digit(s_[pos_]))
        return error(std::string("invalid digit '") + s_[pos_] + "' in " + what + " literal", pos_);
      return number_end(begin);
    }
    auto dec = +[](char d) { return is_digit(d); };
    bool is_float = false;
    if (c != '.') digits(dec, "decimal");
    if (out_.error) return;
    const std::uint32_t int_end = pos_;
    if (pos_ < end_ && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      if (pos_ < end_ && is_digit(s_[pos_])) digits(dec, "decimal");
    }
    if (out_.error) return;
    if (pos_ < end_ && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      std::uint32_t save = pos_;
      ++pos_;
      if (pos_ < end_ && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= end_ || !is_digit(s_[pos_])) {
        pos_ = save;
        return error("invalid decimal literal", pos_);
      }
      digits(dec, "decimal");
      is_float = true;
    }
    if (out_.error) return;
    bool imaginary = false;
    if (pos_ < end_ && (s_[pos_] == 'j' || s_[pos_] == 'J')) {
      ++pos_;
      imaginary = true;
    }
    if (!is_float && !imaginary && s_[begin] == '0') {
      for (std::uint32_t i = begin; i < int_end; ++i)
        if (s_[i] != '0' && s_[i] != '_')
          return error(
              "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal "
              "integers",
              begin);
    }
    number_end(begin);
  }

  // A number directly followed by a name is an error, except before the keywords CPython allows.
  void number_end(std::uint32_t begin) {
    if (pos_ < end_ && starts_name(s_[pos_])) {
      std::uint32_t e = pos_;
      while (e < end_ && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
      const std::string_view word = s_.substr(pos_, e - pos_);
      static constexpr std::array<std::string_view, 8> allowed = {"and", "else", "for", "if", "in", "is", "not", "or"};
      const bool ok =
          std::any_of(allowed.begin(), allowed.end(), [&](std::string_view k) { return word.starts_with(k); });
      if (!ok) return error("invalid decimal literal", begin);
    }
    emit_here(Tok::Number, begin);
  }

  void string_at(std::uint32_t begin) {
    const Span start = span_at(begin);
    StringResult r = scan_string(s_.substr(0, end_), begin);
    if (r.error) {
      // Report at the literal's start, as CPython does for unterminated strings.
      advance_lines(begin, r.error_pos);
      return error_at(r.error, start.line, start.col);
    }
    advance_lines(begin, r.end);
    pos_ = r.end;
    emit(Tok::String, begin, pos_, {start.line, start.col, line_, pos_ - line_start_});
    out_.tokens.back().brackets = static_cast<std::uint16_t>(depth_ + brackets_.size());
    at_bol_ = false;
  }

  // Moves line tracking over [from, to) (a multi-line string).
  void advance_lines(std::uint32_t from, std::uint32_t to) {
    for (std::uint32_t i = from; i < to && i < end_; ++i) {
      if (s_[i] == '\n' || (s_[i] == '\r' && (i + 1 >= end_ || s_[i + 1] != '\n'))) {
        ++line_;
        line_start_ = i + 1;
      }
    }
  }

  // Skips the ASCII identifier bytes at pos_ (the whole of nearly every name), eight at a time
  // while the lexed range has eight more.
  void skip_ascii_name() {
    while (pos_ + 8 <= end_) {
      const unsigned n = ascii_name_bytes(s_.data() + pos_);
      pos_ += n;
      if (n < 8) return;
    }
    while (pos_ < end_ && kAsciiIdentifier[static_cast<unsigned char>(s_[pos_])]) ++pos_;
  }

  // A valid prefix is one or two letters: a string needs a quote right after them (a cheap test
  // before read_prefix, since many names start with r, b, u or f).
  bool quote_follows_prefix() const {
    for (std::uint32_t k = pos_ + 1; k < end_ && k <= pos_ + 2; ++k)
      if (s_[k] == '\'' || s_[k] == '"') return true;
    return false;
  }

  void name_or_string() {
    const std::uint32_t begin = pos_;
    if (may_prefix_string(s_[pos_]) && quote_follows_prefix() && read_prefix(s_.substr(0, end_), pos_).valid)
      return string_at(begin);
    skip_ascii_name();
    while (pos_ < end_) {
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c < 0x80) {
        if (!kAsciiIdentifier[c]) break;
        ++pos_;
        continue;
      }
      char32_t cp = 0;
      const int n = decode_utf8(s_, pos_, cp);
      if (n == 0) return error("invalid UTF-8 in source", pos_);
      if (!is_identifier_code_point(cp) || (pos_ == begin && cp >= 0x300 && cp <= 0x36F)) {
        if (pos_ == begin) return invalid_character(cp);
        break;
      }
      pos_ += n;
    }
    if (pos_ < end_ && static_cast<unsigned char>(s_[pos_]) >= 0x80) {
      char32_t cp = 0;
      if (decode_utf8(s_, pos_, cp) == 0) return error("invalid UTF-8 in source", pos_);
      return invalid_character(cp);
    }
    emit_here(Tok::Name, begin);
  }

  void invalid_character(char32_t cp) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "invalid character (U+%04X)", static_cast<unsigned>(cp));
    error(buf, pos_);
  }

  // The length of the operator at pos_ (longest match), or 0.
  std::uint32_t operator_length() const {
    const std::size_t left = end_ - pos_;
    const char* p = s_.data() + pos_;
    const char c0 = p[0], c1 = left > 1 ? p[1] : 0, c2 = left > 2 ? p[2] : 0;
    switch (c0) {
      case '(':
      case ')':
      case '[':
      case ']':
      case '{':
      case '}':
      case ',':
      case ';':
      case '~':
        return 1;
      case '.':
        return c1 == '.' && c2 == '.' ? 3 : 1;
      case ':':
        return c1 == '=' ? 2 : 1;
      case '-':
        return c1 == '=' || c1 == '>' ? 2 : 1;
      case '!':
        return c1 == '=' ? 2 : 0;
      case '+':
      case '%':
      case '@':
      case '&':
      case '|':
      case '^':
      case '=':
        return c1 == '=' ? 2 : 1;
      case '*':
      case '/':
      case '<':
      case '>': {
        if (c1 == c0) return c2 == '=' ? 3 : 2;  // ** // << >> and their op= forms
        return c1 == '=' ? 2 : 1;
      }
      default:
        return 0;
    }
  }

  void op() {
    const std::uint32_t begin = pos_;
    const std::uint32_t n = operator_length();
    if (n == 0) return not_an_operator();
    pos_ += n;
    const char c = s_[begin];
    if (n == 1 && (c == '(' || c == '[' || c == '{')) {
      if (depth_ + brackets_.size() >= kMaxBrackets) return error("too many nested parentheses", begin);
      brackets_.push_back({c, line_, begin - line_start_});
    } else if (n == 1 && (c == ')' || c == ']' || c == '}')) {
      const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (brackets_.empty() || std::get<0>(brackets_.back()) != open) return unmatched(c, begin);
      brackets_.pop_back();
    }
    emit_here(Tok::Op, begin);
  }

  // The error paths of op(), kept out of it: the hot path then needs no string temporaries.
  [[gnu::noinline]] void unmatched(char c, std::uint32_t begin) {
    if (brackets_.empty()) return error(std::string("unmatched '") + c + "'", begin);
    error(std::string("closing parenthesis '") + c + "' does not match opening parenthesis '" +
              std::get<0>(brackets_.back()) + "'",
          begin);
  }

  [[gnu::noinline]] void not_an_operator() {
    const auto c = static_cast<unsigned char>(s_[pos_]);
    if (c == '!' || c == '$' || c == '?' || c == '`') return error("invalid syntax", pos_);
    char buf[64];
    std::snprintf(buf, sizeof buf, "invalid non-printable character U+%04X", static_cast<unsigned>(c));
    error(buf, pos_);
  }

  std::string_view s_;
  std::uint32_t pos_, end_, line_, line_start_;
  bool brackets_mode_;
  std::uint32_t depth_;  // brackets open around the lexed range (an f-string field's)
  bool at_bol_ = true;
  std::vector<std::tuple<char, std::uint32_t, std::uint32_t>> brackets_;
  std::vector<std::uint32_t> indents_, alt_indents_;  // from 0, pushed by run()
  Lexed out_;
};

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The NFKC image of one code point when it is ASCII text, else nullptr.
const char* nfkc_ascii(char32_t c, char* buf) {
  auto one = [&](char ch) {
    buf[0] = ch;
    buf[1] = 0;
    return buf;
  };
  if (c >= 0xFF01 && c <= 0xFF5E) return one(static_cast<char>(c - 0xFEE0));  // fullwidth ASCII
  if (c >= 0x1D400 && c <= 0x1D6A3) {  // mathematical Latin letters, 13 styles of A-Z a-z
    const int k = static_cast<int>((c - 0x1D400) % 52);
    return one(static_cast<char>(k < 26 ? 'A' + k : 'a' + k - 26));
  }
  if (c == 0x1D6A4) return one('i');
  if (c == 0x1D6A5) return one('j');
  if (c >= 0x1D7CE && c <= 0x1D7FF) return one(static_cast<char>('0' + (c - 0x1D7CE) % 10));
  switch (c) {
    case 0xAA:
      return one('a');
    case 0xBA:
      return one('o');
    case 0x17F:
      return one('s');
    case 0x2071:
      return one('i');
    case 0x207F:
      return one('n');
    case 0x2102:
      return one('C');
    case 0x210A:
      return one('g');
    case 0x210B:
    case 0x210C:
    case 0x210D:
      return one('H');
    case 0x210E:
      return one('h');
    case 0x2110:
    case 0x2111:
      return one('I');
    case 0x2112:
      return one('L');
    case 0x2113:
      return one('l');
    case 0x2115:
      return one('N');
    case 0x2119:
      return one('P');
    case 0x211A:
      return one('Q');
    case 0x211B:
    case 0x211C:
    case 0x211D:
      return one('R');
    case 0x2124:
    case 0x2128:
      return one('Z');
    case 0x212A:
      return one('K');
    case 0x212C:
      return one('B');
    case 0x212D:
      return one('C');
    case 0x212F:
      return one('e');
    case 0x2130:
      return one('E');
    case 0x2131:
      return one('F');
    case 0x2133:
      return one('M');
    case 0x2134:
      return one('o');
    case 0x2139:
      return one('i');
    case 0xFB00:
      return "ff";
    case 0xFB01:
      return "fi";
    case 0xFB02:
      return "fl";
    case 0xFB03:
      return "ffi";
    case 0xFB04:
      return "ffl";
    case 0xFB05:
    case 0xFB06:
      return "st";
    default:
      return nullptr;
  }
}

}  // namespace

std::string normalize_identifier(std::string_view word) {
  if (std::all_of(word.begin(), word.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return std::string(word);
  std::string out;
  for (std::size_t i = 0; i < word.size();) {
    char32_t cp = 0;
    const int n = static_cast<unsigned char>(word[i]) < 0x80 ? 1 : decode_utf8(word, i, cp);
    if (n <= 1) {
      out += word[i++];
      continue;
    }
    char buf[2];
    if (const char* ascii = nfkc_ascii(cp, buf))
      out += ascii;
    else
      append_utf8(out, cp);
    i += static_cast<std::size_t>(n);
  }
  return out;
}

namespace {

constexpr std::string_view kKeywords[] = {"False",  "None",   "True",    "and",      "as",       "assert", "async",
                                          "await",  "break",  "class",   "continue", "def",      "del",    "elif",
                                          "else",   "except", "finally", "for",      "from",     "global", "if",
                                          "import", "in",     "is",      "lambda",   "nonlocal", "not",    "or",
                                          "pass",   "raise",  "return",  "try",      "while",    "with",   "yield"};

// A perfect hash of the keywords' codes into 64 slots: a multiply, a shift and one comparison per
// name (a switch over 35 codes was a chain of mispredicted branches). The multiplier was found by
// search; the static_assert below checks that no two keywords share a slot.
constexpr std::uint64_t kKeywordMultiplier = 0x80e9bc28a685cecdull;
constexpr unsigned keyword_slot(std::uint64_t code) { return static_cast<unsigned>((code * kKeywordMultiplier) >> 58); }

constexpr auto kKeywordSlots = [] {
  std::array<std::uint64_t, 64> slots{};
  for (std::string_view k : kKeywords) slots[keyword_slot(pack(k))] = pack(k);
  return slots;
}();

constexpr bool keyword_slots_distinct() {
  for (std::string_view k : kKeywords)
    if (kKeywordSlots[keyword_slot(pack(k))] != pack(k)) return false;
  return true;
}
static_assert(keyword_slots_distinct());

}  // namespace

bool is_keyword_code(std::uint64_t code) { return code != 0 && kKeywordSlots[keyword_slot(code)] == code; }

Lexed tokenize(std::string_view source, const LexStart& start) { return Lexer(source, start).run(); }

}  // namespace tritium::pyast
