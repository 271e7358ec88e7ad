// tritium/verify.h: the static verifier: response extraction, and (soon) the rules.
//
// A candidate arrives as a raw LLM response: reasoning, perhaps a <think> block, one or more
// Markdown code fences, perhaps prose after them. Extraction finds the plan and the one Python
// block that is the answer, and says exactly where each lies in the response (byte offsets), so
// that later stages can point at the response itself and a reviewer can see why a block was
// chosen. The rules are in docs/extraction.md. Extraction never fails: a response without code
// gives `has_code == false`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tritium/core.h"

namespace tritium {

// ---- Response extraction ------------------------------------------------------------------------

/// Byte offsets [begin, end) into the response.
struct TextSpan {
  std::size_t begin = 0, end = 0;
};

/// What a response holds. Always `response.substr(span.begin, span.end - span.begin)` equals the
/// text, for both the plan and the code.
struct Extraction {
  std::string plan;    // reasoning text, trimmed (may be empty)
  std::string code;    // the Python code, whole lines with their line endings (empty when none found)
  TextSpan plan_span;  // where `plan` lies in the response
  TextSpan code_span;  // where `code` lies in the response (the code only, not the fence lines)
  bool has_code = false;
  std::vector<std::string> notes;  // why a choice was made, for people reading a result
};

/// Extracts the plan and the code of a raw LLM response (rules: docs/extraction.md).
Extraction extract_response(std::string_view response);

Json to_json(const TextSpan& span);          // [begin, end]
Json to_json(const Extraction& extraction);  // {plan, code, plan_span, code_span, has_code, notes}

}  // namespace tritium

namespace tritium {

// ---- Rules ------------------------------------------------------------------------------------

/// One rule's verdict on one place of the code (rule ids: docs/rules.md).
struct Finding {
  std::string rule;                 // stable id, e.g. "func.torch_compute:matmul"
  std::string severity;             // "error" decides the status; "warning" is reported only
  std::uint32_t line = 0, col = 0;  // 1-based line, 0-based byte column (0:0 when not located)
  std::string message;
};

/// The static verdict: status is "valid", or the first failing stage among the error findings
/// ("invalid_syntax", "invalid_functionality", "hack"), as in DESIGN.md.
struct Verification {
  std::string status;
  std::vector<Finding> findings;
  bool valid() const { return status == "valid"; }
};

/// Verifies candidate code (a module defining ModelNew and Triton kernels). With the task's
/// source, ModelNew's __init__ and forward parameters are also checked against Model's.
Verification verify_code(std::string_view code, std::string_view task_source = {});

/// Extracts the code from a raw LLM response, then verifies it (`syntax.no_code` when none).
Verification verify_response(std::string_view response, std::string_view task_source = {});

/// The static verdict of one item {"code" | "response"}: exactly one of the two, a string. The one
/// rule of `tritium verify --responses`, the server's /v1/verify and Python's tritium.verify.
/// `task_source` is the task ModelNew's signatures are checked against ("" for none).
Result<Verification> verify_item(const Json& item, std::string_view task_source = {});

Json to_json(const Finding& finding);
Json to_json(const Verification& verification);  // {status, findings: [{rule, severity, line, col, message}]}

}  // namespace tritium
