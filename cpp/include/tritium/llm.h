// tritium/llm.h: talking to models: the prompt a task becomes, the response format a model is
// trained to give (docs/data.md), and generators: anything that answers a prompt with samples,
// among them the OpenAI-compatible HTTP client (docs/llm.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tritium/core.h"

namespace tritium {

/// The user message asking for a Triton ModelNew for `task_source` (KernelBench's Triton style:
/// the task, the rules a candidate must follow, think first, then one code block). Trainers wrap
/// it in the tokenizer's chat template when it has one.
std::string kernel_prompt(std::string_view task_source);

/// A refinement round's prompt: the task prompt, then the model's previous code and what the
/// evaluation said of it, asking for a corrected or faster version in the same format.
std::string refinement_prompt(std::string_view task_source, std::string_view previous_code, std::string_view feedback);

/// The response format: the plan inside <think>...</think>, then the code in one ```python fence.
/// extract_response() recovers exactly `plan` and `code` from it.
std::string format_response(std::string_view plan, std::string_view code);

/// The task a prompt carries: the body of its first fenced code block that defines `class Model`
/// (what kernel_prompt writes; also how RL frameworks that send only prompts name the task).
std::optional<std::string> task_in_prompt(std::string_view prompt);

/// One SFT example: {"prompt", "response", "task_id", "meta"}.
Json sft_example(const Task& task, std::string_view response);

/// How to sample: the OpenAI request fields Tritium uses.
struct Sampling {
  int n = 1;
  double temperature = 0.7;
  double top_p = 0.95;
  int max_tokens = 2048;
  std::vector<std::string> stop;
  std::optional<std::int64_t> seed;
};

/// One sample: its text and why it ended ("stop", "length", ...), with token counts when known.
struct Generation {
  std::string text;
  std::string finish_reason;
  std::int64_t prompt_tokens = 0, completion_tokens = 0;
};
Json to_json(const Generation& g);

/// Anything that answers a prompt with `sampling.n` samples: a model behind an HTTP API, or the
/// synthesizer's emitter. `generate` may be called from several threads at once.
class Generator {
 public:
  virtual ~Generator() = default;
  virtual Result<std::vector<Generation>> generate(const std::string& prompt, const Sampling& sampling) = 0;
  virtual std::string name() const = 0;
  /// It writes kernels from a task's operator DAG (the synthesizer's emitter), not by sampling a
  /// model: a search then also emits the task's traced DAG in fragments (docs/search.md).
  virtual bool emits_from_dag() const { return false; }
};

/// Answers every prompt, at most `concurrency` at a time; results come in the prompts' order and
/// one prompt's error does not stop the others. `on_done(index, result)` runs as each finishes
/// (serialised: never two at once).
using GenerationResult = Result<std::vector<Generation>>;
std::vector<GenerationResult> generate_many(
    Generator& generator, const std::vector<std::string>& prompts, const Sampling& sampling, int concurrency,
    const std::function<void(std::size_t, const GenerationResult&)>& on_done = {});

/// An OpenAI-compatible endpoint (docs/llm.md).
struct ClientOptions {
  std::string base_url;       // http(s)://host[:port][/prefix]; "/v1" is appended unless it ends with it
  std::string model;          // the request's "model"; servers of one model accept any
  std::string api_key;        // empty: $TRITIUM_API_KEY, then $OPENAI_API_KEY; none is fine for local servers
  bool chat = true;           // /v1/chat/completions, or /v1/completions with the raw prompt
  std::string system_prompt;  // chat only; empty: none
  double timeout_s = 600;     // per request, reading the answer
  double connect_timeout_s = 10;
  int max_retries = 4;     // on 408, 409, 429, 5xx, refused connections and timeouts
  double backoff_s = 1.0;  // first retry's wait; doubles each time, with jitter, up to backoff_max_s
  double backoff_max_s = 30;
  Json extra_body = Json::object();  // fields added to every request (top_k, chat_template_kwargs, ...);
                                     // the client's own (n, messages, sampling) are not overridden
};

/// What a client has done so far (thread-safe counters).
struct ClientStats {
  std::int64_t requests = 0, retries = 0, failures = 0, prompt_tokens = 0, completion_tokens = 0;
};
Json to_json(const ClientStats& s);

/// The OpenAI-compatible HTTP client. Errors name the endpoint and what the server said; 4xx
/// answers (bad request, bad key, unknown model) are not retried. When a server returns fewer
/// than n choices, the client asks again for the rest.
class LlmClient : public Generator {
 public:
  /// Fails on a malformed base URL, or where Tritium was built without cpp-httplib.
  static Result<std::unique_ptr<LlmClient>> create(ClientOptions options);
  ~LlmClient() override;
  Result<std::vector<Generation>> generate(const std::string& prompt, const Sampling& sampling) override;
  std::string name() const override;
  ClientStats stats() const;

 private:
  struct Impl;
  explicit LlmClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tritium
