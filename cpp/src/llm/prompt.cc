// The task prompt and the response format (docs/data.md).
#include <fmt/format.h>

#include "tritium/llm.h"

namespace tritium {
namespace {

constexpr const char* kInstructions = R"(Rewrite the PyTorch program below as fast Triton code.

```python
{}```

Write a module that defines `class ModelNew(nn.Module)` with the same `__init__` and `forward` signatures as `Model` and the same parameters, initialised the same way. It must import torch, triton and triton.language itself, define `@triton.jit` kernels, and launch them from `forward` so that the kernels do the computation: PyTorch may allocate outputs and reshape views, but must not compute (no torch.matmul, `@`, torch.nn.functional, nn layers, or a fallback to `Model`). Keep every part of the computation, for every input the signatures allow.

First think step by step inside <think> and </think>: which operators to fuse into which kernels, how to tile the work over program ids, and where the memory traffic goes. Then give the complete module in one ```python code block, with no tests or example usage.)";

}  // namespace

std::string kernel_prompt(std::string_view task_source) {
  std::string source(task_source);
  if (!source.empty() && source.back() != '\n') source += '\n';
  return fmt::format(kInstructions, source);
}

std::string refinement_prompt(std::string_view task_source, std::string_view previous_code, std::string_view feedback) {
  std::string code(previous_code);
  if (!code.empty() && code.back() != '\n') code += '\n';
  return fmt::format(
      "{}\n\nYour previous answer was:\n\n```python\n{}```\n\n{}\n\nWrite a better version under the same "
      "rules: think first inside <think> and </think>, then give the complete module in one ```python "
      "code block.",
      kernel_prompt(task_source), code, feedback);
}

std::string format_response(std::string_view plan, std::string_view code) {
  std::string body(code);
  if (!body.empty() && body.back() != '\n') body += '\n';
  return fmt::format("<think>\n{}\n</think>\n\n```python\n{}```\n", plan, body);
}

std::optional<std::string> task_in_prompt(std::string_view prompt) {
  for (std::size_t at = prompt.find("```"); at != std::string_view::npos; at = prompt.find("```", at + 3)) {
    const std::size_t start = prompt.find('\n', at);
    const std::size_t end = start == std::string_view::npos ? start : prompt.find("```", start);
    if (end == std::string_view::npos) break;
    const std::string_view block = prompt.substr(start + 1, end - start - 1);
    if (block.find("class Model") != std::string_view::npos) return std::string(block);
    at = end;
  }
  return std::nullopt;
}

Json sft_example(const Task& task, std::string_view response) {
  Json meta = Json::object();
  for (const char* key : {"difficulty", "ops", "seed"})
    if (task.meta.contains(key)) meta[key] = task.meta[key];
  if (task.level) meta["level"] = *task.level;
  return {{"prompt", kernel_prompt(task.source)},
          {"response", std::string(response)},
          {"task_id", task.id},
          {"meta", meta}};
}

}  // namespace tritium
