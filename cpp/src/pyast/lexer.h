// Private to pyast: the tokenizer. Produces CPython's token stream (NAME, NUMBER, STRING, OP,
// NEWLINE, INDENT, DEDENT, ENDMARKER) with byte-column spans. An f-string is one STRING token;
// fstring.h splits it into literal parts and replacement fields for the parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tritium/pyast.h"

namespace tritium::pyast {

enum class Tok : std::uint8_t { Name, Number, String, Op, Newline, Indent, Dedent, End };

/// CPython's tokenizer limits (Parser/lexer/state.h), refused with its messages: MAXLEVEL
/// brackets open at once ("too many nested parentheses"; the braces of f-string fields count,
/// as in 3.12), MAXINDENT indentation levels ("too many levels of indentation", level 0
/// included).
inline constexpr std::uint32_t kMaxBrackets = 200;
inline constexpr std::uint32_t kMaxIndent = 100;

/// Up to 8 bytes packed into an integer, so that the parser compares operators and keywords
/// as integers; longer text packs to kLongText.
inline constexpr std::uint64_t kLongText = ~std::uint64_t{0};
constexpr std::uint64_t pack(std::string_view text) {
  if (text.size() > 8) return kLongText;
  std::uint64_t code = 0;
  for (std::size_t i = 0; i < text.size(); ++i) code |= std::uint64_t{static_cast<unsigned char>(text[i])} << (8 * i);
  return code;
}

struct Token {
  Tok kind;
  bool keyword = false;        // a Name that is a hard keyword
  std::uint16_t brackets = 0;  // a String's open brackets around it (its f-string fields count on)
  std::uint32_t begin, end;    // byte offsets into the source
  Span span;
  std::uint64_t code = 0;  // pack(text) for operators and names
};
static_assert(sizeof(Token) == 40, "a token is read for every parser test: keep it five words");

/// Where lexing starts: a whole module, or one f-string replacement field (inside brackets: no
/// indentation, newlines are whitespace).
struct LexStart {
  std::uint32_t begin = 0, end = UINT32_MAX;
  std::uint32_t line = 1, line_start = 0;  // line of `begin`, offset where that line starts
  bool in_brackets = false;
  std::uint32_t brackets = 0;  // brackets already open around `begin` (counted against the limit)
};

struct Lexed {
  std::vector<Token> tokens;
  std::optional<SyntaxError> error;
};

Lexed tokenize(std::string_view source, const LexStart& start = {});

/// Whether a word is a hard keyword, by its pack() code.
bool is_keyword_code(std::uint64_t code);

/// CPython NFKC-normalises identifiers. This covers the compatibility forms that map to ASCII
/// (fullwidth forms, mathematical alphanumerics, letterlike symbols, ligatures, long s); other
/// non-ASCII identifiers are kept as written.
std::string normalize_identifier(std::string_view word);

/// Scans a string literal starting at `pos` (at its prefix or quote); returns the offset just past
/// it, or an error message. Used by the tokenizer and for nested strings in f-string fields.
struct StringScan {
  std::uint32_t end = 0;
  const char* error = nullptr;
  std::uint32_t error_pos = 0;
};

}  // namespace tritium::pyast
