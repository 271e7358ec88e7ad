#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "../fixtures.h"
#include "tritium/verify.h"

namespace tritium {
namespace {

using testing::fixture;

// A whole answer, as a block's content: lines with their line endings.
const std::string kModelNew =
    "import torch\n"
    "import triton\n"
    "\n"
    "class ModelNew(torch.nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x\n";

const std::string kHelper =
    "def helper(x):\n"
    "    return x + 1\n";

std::string python_block(const std::string& code, const std::string& info = "python") {
  return "```" + info + "\n" + code + "```\n";
}

// Checks what must hold for every response: each span lies in the response and is exactly its text.
void expect_exact(std::string_view response, const TextSpan& span, const std::string& text, const char* what) {
  ASSERT_LE(span.begin, span.end) << what;
  ASSERT_LE(span.end, response.size()) << what;
  EXPECT_EQ(response.substr(span.begin, span.end - span.begin), text) << what << " span is not its text";
}

Extraction extract(std::string_view response) {
  Extraction x = extract_response(response);
  expect_exact(response, x.plan_span, x.plan, "plan");
  expect_exact(response, x.code_span, x.code, "code");
  if (!x.has_code) {
    EXPECT_TRUE(x.code.empty());
  }
  return x;
}

bool has_note(const Extraction& x, std::string_view part) {
  return std::any_of(x.notes.begin(), x.notes.end(), [&](const std::string& n) { return n.find(part) != n.npos; });
}

std::string notes_of(const Extraction& x) {
  std::string out;
  for (const auto& n : x.notes) out += "\n  " + n;
  return out;
}

// ---- Plan and code, the common shapes ----

TEST(Extract, ThinkBlockGivesThePlanAndTheFenceGivesTheCode) {
  const std::string r = "<think>\n  Fuse the add into the matmul.\n</think>\n\nHere it is:\n" + python_block(kModelNew);
  const Extraction x = extract(r);
  EXPECT_TRUE(x.has_code);
  EXPECT_EQ(x.plan, "Fuse the add into the matmul.");
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_EQ(x.code_span.begin, r.find("import torch"));
  EXPECT_TRUE(x.notes.empty()) << notes_of(x);
}

TEST(Extract, WithoutThinkBlockThePlanIsTheTrimmedTextBeforeTheFence) {
  const std::string r = "\n  I will tile the reduction.\nThen fuse.\n\n" + python_block(kModelNew);
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, "I will tile the reduction.\nThen fuse.");
  EXPECT_EQ(x.plan_span.begin, 3u);
  EXPECT_EQ(x.code, kModelNew);
}

TEST(Extract, TextAfterTheCodeIsNotPlan) {
  const std::string r = "Plan first.\n" + python_block(kModelNew) + "\nThis kernel is fast because...\n";
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, "Plan first.");
  EXPECT_EQ(x.code, kModelNew);
}

TEST(Extract, TextAfterTheThinkBlockIsNotPlan) {
  const std::string r = "<think>Reasoning.</think>\nSome words before the code.\n" + python_block(kModelNew);
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, "Reasoning.");
  EXPECT_EQ(x.code, kModelNew);
}

// ---- Choosing among several blocks ----

TEST(Extract, SeveralBlocksChooseTheOneDefiningModelNew) {
  const std::string r = "Helpers:\n" + python_block(kHelper) + "Answer:\n" + python_block(kModelNew) + "Usage:\n" +
                        python_block("m = ModelNew()\n");
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_TRUE(has_note(x, "3 python blocks; chose block 2, the one defining ModelNew")) << notes_of(x);
}

TEST(Extract, TheModelNewBlockWinsEvenWhenItIsNotLast) {
  const std::string r = python_block(kModelNew) + "And a test:\n" + python_block("print(ModelNew()(1))\n");
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_EQ(x.plan, "");
}

TEST(Extract, WhenSeveralBlocksDefineModelNewTheLastOneWins) {
  const std::string draft = "import torch\nclass ModelNew:\n    pass\n";
  const std::string r =
      "Draft:\n" + python_block(draft) + "Final:\n" + python_block(kModelNew) + "Check:\n" + python_block(kHelper);
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_TRUE(has_note(x, "2 defining ModelNew; chose the last of those (block 2)")) << notes_of(x);
}

TEST(Extract, WhenNoBlockDefinesModelNewTheLastPythonBlockWins) {
  const std::string r = python_block("x = 1\n") + python_block(kHelper) + python_block("y = 2\n", "bash");
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kHelper);
  EXPECT_TRUE(has_note(x, "none defining ModelNew; chose the last")) << notes_of(x);
}

TEST(Extract, ClassModelNewMustStartTheLineAndOpenABody) {
  // Mentions of ModelNew that are not its definition do not make a block the answer.
  const std::string r = python_block("import torch\nclass ModelNew(nn.Module):\n    pass\n") +
                        python_block("# class ModelNew(x)\n  class ModelNew:\nclass ModelNewer(x):\n");
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, "import torch\nclass ModelNew(nn.Module):\n    pass\n");
}

// ---- Info strings and fence shapes ----

TEST(Extract, BlocksWithNonPythonInfoStringsAreSkipped) {
  const std::string r = "Install:\n" + python_block("pip install triton\n", "bash") + python_block(kModelNew) +
                        "Output:\n" + python_block("ok\n", "text");
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_TRUE(has_note(x, "skipped 2 non-python blocks (bash, text)")) << notes_of(x);
}

TEST(Extract, PythonInfoStringsAreRecognisedInAnyCaseAndWithExtraWords) {
  for (const std::string info : {"python", "py", "python3", "Python", "PY", "python title=model.py", " python"}) {
    const std::string r = python_block(kHelper, "text") + python_block(kModelNew, info);
    const Extraction x = extract(r);
    EXPECT_EQ(x.code, kModelNew) << "info string '" << info << "'";
  }
}

TEST(Extract, FenceWithoutInfoStringIsPython) {
  const std::string r = "Plan.\n```\n" + kModelNew + "```\n";
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_EQ(x.plan, "Plan.");
}

TEST(Extract, TildeFencesWork) {
  const std::string r = "Plan.\n~~~python\n" + kModelNew + "~~~\nAfter.\n";
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_EQ(x.plan, "Plan.");
}

TEST(Extract, BackticksDoNotCloseATildeFence) {
  const std::string code = "import torch\ns = '''\n```\n'''\nclass ModelNew(torch.nn.Module):\n    pass\n";
  const std::string r = "~~~python\n" + code + "~~~\n";
  EXPECT_EQ(extract(r).code, code);
}

TEST(Extract, FencesIndentedUpToThreeSpacesWork) {
  const std::string code = "   import torch\n   class ModelNew(torch.nn.Module):\n       pass\n";
  const std::string r = "1. The answer:\n   ```python\n" + code + "   ```\n";
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, code);
  EXPECT_FALSE(has_note(x, "unterminated")) << notes_of(x);
}

TEST(Extract, FourSpacesOfIndentIsNotAFence) {
  const Extraction x = extract("Look:\n    ```python\n    x = 1\n    ```\n");
  EXPECT_FALSE(x.has_code);
}

TEST(Extract, ALongerClosingFenceCloses) {
  const std::string r = "```python\n" + kModelNew + "``````\nDone.\n";
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_FALSE(has_note(x, "unterminated")) << notes_of(x);
}

TEST(Extract, AShorterFenceDoesNotCloseALongerOne) {
  const std::string code = "import torch\ndoc = '''\n```\n'''\nclass ModelNew(torch.nn.Module):\n    pass\n";
  const std::string r = "````python\n" + code + "````\n";
  EXPECT_EQ(extract(r).code, code);
}

TEST(Extract, AFenceLineWithAnInfoStringDoesNotClose) {
  const std::string code = "import torch\n```python\nclass ModelNew(torch.nn.Module):\n    pass\n";
  const std::string r = "```python\n" + code + "```\n";
  EXPECT_EQ(extract(r).code, code);
}

TEST(Extract, ClosingFenceMayHaveTrailingBlanks) {
  const std::string r = "```python\n" + kModelNew + "```  \t\nAfter.\n";
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_FALSE(has_note(x, "unterminated")) << notes_of(x);
}

TEST(Extract, BackticksInsideCodeThatDoNotStartALineAreCode) {
  const std::string code =
      "import torch\n"
      "FENCE = \"```\"  # a string holding a fence\n"
      "doc = 'use ```python``` blocks'\n"
      "class ModelNew(torch.nn.Module):\n"
      "    pass\n";
  const std::string r = "Plan.\n```python\n" + code + "```\n";
  EXPECT_EQ(extract(r).code, code);
}

TEST(Extract, TripleBackticksWithMoreBackticksOnTheLineAreInlineCodeNotAFence) {
  const std::string r = "Use ```python``` fences, like:\n```python x```\n" + python_block(kModelNew);
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_EQ(x.plan, "Use ```python``` fences, like:\n```python x```");
}

TEST(Extract, EmptyBlocksAreIgnored) {
  const std::string r = python_block(kModelNew) + "```python\n\n```\n";
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_TRUE(has_note(x, "ignored 1 empty code block")) << notes_of(x);
}

TEST(Extract, ANonPythonBlockDefiningModelNewIsTakenWhenNoPythonBlockExists) {
  const std::string r = python_block(kModelNew, "triton");
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_TRUE(has_note(x, "no python block; took the ```triton block defining ModelNew")) << notes_of(x);
}

TEST(Extract, OnlyNonPythonBlocksGiveNoCode) {
  const std::string r = "Run this:\n" + python_block("python bench.py\n", "bash");
  const Extraction x = extract(r);
  EXPECT_FALSE(x.has_code);
  EXPECT_TRUE(has_note(x, "skipped 1 non-python block (bash)")) << notes_of(x);
  EXPECT_EQ(x.plan, r.substr(0, r.size() - 1));
}

// ---- Unterminated constructs ----

TEST(Extract, AnUnterminatedFenceRunsToTheEndOfTheResponse) {
  const std::string r = "Plan.\n```python\n" + kModelNew + "    # cut off here";
  const Extraction x = extract(r);
  EXPECT_TRUE(x.has_code);
  EXPECT_EQ(x.code, kModelNew + "    # cut off here");
  EXPECT_EQ(x.code_span.end, r.size());
  EXPECT_TRUE(has_note(x, "unterminated fence: code runs to the end of the response")) << notes_of(x);
}

TEST(Extract, AnOpeningFenceOnTheLastLineGivesNoCode) {
  const Extraction x = extract("Plan.\n```python");
  EXPECT_FALSE(x.has_code);
  EXPECT_TRUE(has_note(x, "ignored 1 empty code block")) << notes_of(x);
  EXPECT_EQ(x.plan, "Plan.\n```python");  // without code, the whole response is plan
}

TEST(Extract, AnUnterminatedThinkRunsToTheChosenFence) {
  const std::string r = "<think>\nStill thinking.\n" + python_block(kModelNew) + "trailing\n";
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, "Still thinking.");
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_TRUE(has_note(x, "unterminated <think>: the plan runs to the code fence")) << notes_of(x);
}

TEST(Extract, AnUnterminatedThinkWithoutCodeRunsToTheEnd) {
  const std::string r = "<think>\nI ran out of tokens while";
  const Extraction x = extract(r);
  EXPECT_FALSE(x.has_code);
  EXPECT_EQ(x.plan, "I ran out of tokens while");
  EXPECT_EQ(x.plan_span.end, r.size());
  EXPECT_TRUE(has_note(x, "unterminated <think>: the plan runs to the end of the response")) << notes_of(x);
}

// ---- Think-block variants ----

TEST(Extract, AFenceOnlyInsideTheThinkBlockIsUsed) {
  const std::string r = "<think>\nSketch:\n" + python_block(kModelNew) + "Looks right.\n</think>\nDone, see above.\n";
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_EQ(x.plan, "Sketch:");  // the reasoning before the code, so that plan and code do not overlap
  EXPECT_TRUE(has_note(x, "took a block inside it")) << notes_of(x);
}

TEST(Extract, ABlockOutsideTheThinkBlockBeatsDraftsInsideIt) {
  const std::string draft = "import torch\nclass ModelNew(torch.nn.Module):\n    draft = True\n";
  const std::string r = "<think>\n" + python_block(draft) + "</think>\n" + python_block(kModelNew);
  const Extraction x = extract(r);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_EQ(x.plan, python_block(draft).substr(0, python_block(draft).size() - 1));
}

TEST(Extract, AClosingThinkTagWithoutOpeningTagStartsTheThinkBlockAtTheStart) {
  const std::string r = "The template opened the block.\n</think>\n\nAnswer:\n" + python_block(kModelNew);
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, "The template opened the block.");
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_TRUE(has_note(x, "</think> without <think>")) << notes_of(x);
}

TEST(Extract, AnEmptyThinkBlockGivesWayToTheTextBeforeTheCode) {
  const std::string r = "<think>\n\n</think>\n\nTile by 128.\n" + python_block(kModelNew);
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, "Tile by 128.");
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_TRUE(has_note(x, "empty <think> block")) << notes_of(x);
}

// ---- No fence ----

TEST(Extract, BareCodeDefiningModelNewIsTaken) {
  const std::string r = "Here is the kernel.\n\n" + kModelNew;
  const Extraction x = extract(r);
  EXPECT_TRUE(x.has_code);
  EXPECT_EQ(x.code, kModelNew);
  EXPECT_EQ(x.plan, "Here is the kernel.");
  EXPECT_TRUE(has_note(x, "no fence; took bare code")) << notes_of(x);
}

TEST(Extract, BareCodeStartsAtTheFirstDecoratorOrDefinitionToo) {
  const std::string code = "@triton.jit\ndef k(x):\n    pass\n\nimport torch\nclass ModelNew:\n    pass\n";
  const Extraction x = extract("from the above, we get:\n" + code);
  EXPECT_EQ(x.code, code);
  EXPECT_EQ(x.plan, "from the above, we get:");
}

TEST(Extract, BareCodeAfterTheThinkBlockIsTaken) {
  const std::string r = "<think>Plan it.</think>\n" + kModelNew;
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, "Plan it.");
  EXPECT_EQ(x.code, kModelNew);
}

TEST(Extract, BareCodeNeedsAnImport) {
  const Extraction x = extract("class ModelNew(nn.Module):\n    pass\n");
  EXPECT_FALSE(x.has_code);
}

TEST(Extract, BareCodeNeedsClassModelNew) {
  const Extraction x = extract("import torch\nclass Model(nn.Module):\n    pass\n");
  EXPECT_FALSE(x.has_code);
}

TEST(Extract, ProseWithoutCodeGivesNoCodeAndIsAllPlan) {
  const std::string r = "  I cannot write this kernel: the op is not supported.\n";
  const Extraction x = extract(r);
  EXPECT_FALSE(x.has_code);
  EXPECT_EQ(x.code, "");
  EXPECT_EQ(x.plan, "I cannot write this kernel: the op is not supported.");
  EXPECT_TRUE(has_note(x, "no code found")) << notes_of(x);
}

TEST(Extract, AnEmptyResponseGivesNothing) {
  const Extraction x = extract("");
  EXPECT_FALSE(x.has_code);
  EXPECT_EQ(x.plan, "");
  EXPECT_EQ(x.code, "");
  EXPECT_EQ(x.plan_span.begin, 0u);
  EXPECT_EQ(x.code_span.end, 0u);
}

// ---- Bytes: line endings and multi-byte text ----

std::string crlf(const std::string& lf) {
  std::string out;
  for (char c : lf) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}

TEST(Extract, WindowsLineEndingsWork) {
  const std::string r =
      crlf("<think>\nPlan.\n</think>\n" + python_block(kHelper) + "```python  \n" + kModelNew + "```\nBye.\n");
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, "Plan.");
  EXPECT_EQ(x.code, crlf(kModelNew));
  EXPECT_FALSE(has_note(x, "unterminated")) << notes_of(x);
  EXPECT_TRUE(has_note(x, "chose block 2, the one defining ModelNew")) << notes_of(x);
}

TEST(Extract, WindowsLineEndingsWorkForBareCode) {
  const std::string r = crlf("Plan.\n" + kModelNew);
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, "Plan.");
  EXPECT_EQ(x.code, crlf(kModelNew));
}

TEST(Extract, SpansAreByteOffsetsPastMultiByteText) {
  const std::string plan = "Plan: fuse «matmul → relu» — ü, 日本語, 🚀.";
  const std::string r = "<think>" + plan + "</think>\n" + python_block(kModelNew);
  const Extraction x = extract(r);
  EXPECT_EQ(x.plan, plan);
  EXPECT_EQ(x.plan_span.begin, 7u);
  EXPECT_EQ(x.plan_span.end, 7u + plan.size());
  EXPECT_EQ(x.code_span.begin, r.find("import torch"));
  EXPECT_EQ(x.code, kModelNew);
}

// ---- JSON and a realistic response ----

TEST(Extract, ToJsonHasTheDocumentedShape) {
  const std::string r = "Plan.\n" + python_block(kModelNew);
  const Json j = to_json(extract(r));
  EXPECT_EQ(j.dump(), Json({{"plan", "Plan."},
                            {"code", kModelNew},
                            {"plan_span", {0, 5}},
                            {"code_span", {16, 16 + kModelNew.size()}},
                            {"has_code", true},
                            {"notes", Json::array()}})
                          .dump());
}

TEST(Extract, ARealisticReasoningModelResponse) {
  auto text = read_file(fixture("responses/think_draft_final.txt"));
  ASSERT_TRUE(text) << text.error().message;
  const Extraction x = extract(*text);
  ASSERT_TRUE(x.has_code);
  EXPECT_TRUE(x.plan.starts_with("The model computes relu(x @ w + b)")) << x.plan;
  EXPECT_TRUE(x.plan.ends_with("masks handle the ragged edges.")) << x.plan;
  EXPECT_TRUE(x.code.starts_with("import torch\n")) << x.code;
  EXPECT_NE(x.code.find("class ModelNew(nn.Module):"), std::string::npos);
  EXPECT_NE(x.code.find("BLOCK_M: tl.constexpr"), std::string::npos);
  EXPECT_TRUE(x.code.ends_with("return fused_linear_relu(x, self.weight, self.bias)\n")) << x.code;
  EXPECT_TRUE(has_note(x, "2 python blocks; chose block 1, the one defining ModelNew")) << notes_of(x);
  EXPECT_TRUE(has_note(x, "skipped 1 non-python block (bash)")) << notes_of(x);
}

}  // namespace
}  // namespace tritium
