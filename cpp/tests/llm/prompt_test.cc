// The prompt and the response format: what extraction recovers from a formatted response.
#include <gtest/gtest.h>

#include "tritium/llm.h"
#include "tritium/verify.h"

namespace tritium {
namespace {

TEST(Prompt, HoldsTheTaskAndTheRules) {
  const std::string task = "import torch\nclass Model(torch.nn.Module):\n    pass";
  const std::string p = kernel_prompt(task);
  EXPECT_NE(p.find("```python\n" + task + "\n```"), std::string::npos);  // a missing final newline is added
  EXPECT_NE(p.find("ModelNew"), std::string::npos);
  EXPECT_NE(p.find("@triton.jit"), std::string::npos);
  EXPECT_NE(p.find("<think>"), std::string::npos);
}

TEST(Prompt, ExtractionRecoversThePlanAndTheCode) {
  const std::string plan = "Fuse the add and the relu.\nOne program per 1024 elements.";
  const std::string code = "import torch\nx = 1";
  const std::string response = format_response(plan, code);
  const Extraction e = extract_response(response);
  ASSERT_TRUE(e.has_code);
  EXPECT_EQ(e.plan, plan);
  EXPECT_EQ(e.code, code + "\n");
  EXPECT_EQ(response.substr(e.plan_span.begin, e.plan_span.end - e.plan_span.begin), plan);
}

TEST(Prompt, TheTaskComesBackOutOfThePrompt) {
  const std::string task = "import torch\nclass Model(torch.nn.Module):\n    pass\n";
  EXPECT_EQ(task_in_prompt(kernel_prompt(task)), task);
  EXPECT_EQ(task_in_prompt("intro\n```\nprint(1)\n```\nthen\n~~~\n```py\n" + task + "```\n"), task);  // any fence info
  EXPECT_FALSE(task_in_prompt("```python\nprint(1)\n```"));
  EXPECT_FALSE(task_in_prompt("```python\nclass Model: pass"));  // unterminated
}

TEST(Prompt, SftExampleCarriesTheTaskMeta) {
  Task t{"synth/k2_000001",
         "class Model: pass\n",
         "x",
         2,
         {{"difficulty", 2}, {"ops", {"relu", "add"}}, {"solution", "..."}}};
  const Json j = sft_example(t, "R");
  EXPECT_EQ(j["task_id"], "synth/k2_000001");
  EXPECT_EQ(j["response"], "R");
  EXPECT_EQ(j["meta"]["difficulty"], 2);
  EXPECT_EQ(j["meta"]["level"], 2);
  EXPECT_FALSE(j["meta"].contains("solution"));  // the answer stays out of the metadata
}

}  // namespace
}  // namespace tritium
