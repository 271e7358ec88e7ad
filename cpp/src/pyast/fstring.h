// Private to pyast: string literal scanning, and the inside of f-strings (PEP 701 rules: nested
// quotes of any kind, nested replacement fields in format specs, `=` debug fields, conversions).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tritium::pyast {

struct FPiece;

/// One `{...}` replacement field: offsets are absolute in the source.
struct FField {
  std::uint32_t begin = 0, end = 0;            // '{' .. just past '}'
  std::uint32_t expr_begin = 0, expr_end = 0;  // the expression text (before '=', '!', ':')
  bool debug = false;                          // f"{x=}"
  char conversion = 0;                         // 's', 'r', 'a' or 0
  bool has_spec = false;
  std::vector<FPiece> spec;  // the format spec's literal parts and fields
};

struct FPiece {
  bool is_field = false;
  std::uint32_t begin = 0, end = 0;  // a literal part's raw text
  FField field;
};

struct Prefix {
  bool raw = false, bytes = false, fstring = false, valid = false;
  std::uint32_t length = 0;
};

/// The string prefix at `pos` (letters before a quote), if the letters form a valid prefix.
Prefix read_prefix(std::string_view src, std::uint32_t pos);

struct StringResult {
  std::uint32_t end = 0;        // just past the closing quote
  const char* error = nullptr;  // when the literal is malformed
  std::uint32_t error_pos = 0;
  std::vector<FPiece> pieces;  // f-strings only: the body's parts
  std::uint32_t body_begin = 0, body_end = 0;
};

/// Scans the string literal whose prefix starts at `pos`.
StringResult scan_string(std::string_view src, std::uint32_t pos);

}  // namespace tritium::pyast
