// tritium/llm.h: talking to models: the prompt a task becomes and the response format a model
// is trained to give (docs/data.md). The OpenAI-compatible client lands here too (issue 8).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tritium/core.h"

namespace tritium {

/// The user message asking for a Triton ModelNew for `task_source` (KernelBench's Triton style:
/// the task, the rules a candidate must follow, think first, then one code block). Trainers wrap
/// it in the tokenizer's chat template when it has one.
std::string kernel_prompt(std::string_view task_source);

/// The response format: the plan inside <think>...</think>, then the code in one ```python fence.
/// extract_response() recovers exactly `plan` and `code` from it.
std::string format_response(std::string_view plan, std::string_view code);

/// The task a prompt carries: the body of its first fenced code block that defines `class Model`
/// (what kernel_prompt writes; also how RL frameworks that send only prompts name the task).
std::optional<std::string> task_in_prompt(std::string_view prompt);

/// One SFT example: {"prompt", "response", "task_id", "meta"}.
Json sft_example(const Task& task, std::string_view response);

}  // namespace tritium
