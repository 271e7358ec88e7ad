// The verdict's shape and the order of stages; the rules themselves are exercised on the
// adversarial fixture suite (python/tests/test_verify_fixtures.py).
#include <gtest/gtest.h>

#include "../fixtures.h"
#include "tritium/verify.h"

namespace tritium {
namespace {

constexpr const char* kHonest = R"(import torch
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)
        add_one[grid](x, y, x.numel(), BLOCK=1024)
        return y
)";

bool has_rule(const Verification& v, const std::string& rule) {
  for (const auto& f : v.findings)
    if (f.rule == rule) return true;
  return false;
}

TEST(Verify, AnHonestKernelIsValidWithNoFindings) {
  const auto v = verify_code(kHonest);
  EXPECT_EQ(v.status, "valid");
  EXPECT_TRUE(v.findings.empty()) << to_json(v).dump();
}

TEST(Verify, AParseErrorIsInvalidSyntaxWithItsPosition) {
  const auto v = verify_code("class ModelNew(:\n");
  EXPECT_EQ(v.status, "invalid_syntax");
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].rule, "syntax.parse");
  EXPECT_EQ(v.findings[0].line, 1u);
}

TEST(Verify, SyntaxOutranksFunctionalityWhichOutranksHacks) {
  std::string code = kHonest;
  code.replace(code.find("add_one[grid]"), 13, "torch.add");  // no launch; delegation
  code += "import os\n";
  const auto v = verify_code(code);
  EXPECT_EQ(v.status, "invalid_functionality");
  EXPECT_TRUE(has_rule(v, "func.kernel_not_launched"));
  EXPECT_TRUE(has_rule(v, "func.torch_compute:add"));
  EXPECT_TRUE(has_rule(v, "hack.forbidden_module:os"));
  const auto no_model = verify_code("import triton\nimport os\n");
  EXPECT_EQ(no_model.status, "invalid_syntax");
}

TEST(Verify, FindingsComeInLineOrderAndSerialise) {
  std::string code = kHonest;
  code += "import subprocess\nimport socket\n";
  const auto v = verify_code(code);
  ASSERT_GE(v.findings.size(), 2u);
  EXPECT_LE(v.findings[0].line, v.findings[1].line);
  const Json j = to_json(v);
  EXPECT_EQ(j["status"], "hack");
  EXPECT_EQ(j["findings"][0]["severity"], "error");
  EXPECT_TRUE(j["findings"][0].contains("rule"));
}

TEST(Verify, AResponseWithoutCodeIsNoCode) {
  const auto v = verify_response("Sorry, I can't write that kernel.");
  EXPECT_EQ(v.status, "invalid_syntax");
  EXPECT_TRUE(has_rule(v, "syntax.no_code"));
}

TEST(Verify, AResponseIsExtractedThenVerified) {
  const std::string response = std::string("<think>one kernel</think>\n```python\n") + kHonest + "```\n";
  EXPECT_EQ(verify_response(response).status, "valid");
}

}  // namespace
}  // namespace tritium
