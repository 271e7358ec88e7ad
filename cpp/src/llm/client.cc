// The OpenAI-compatible HTTP client (docs/llm.md): chat or plain completions, n samples topped up
// when a server returns fewer, retries with jittered exponential backoff on what may pass (429,
// 5xx, refused connections, timeouts), and errors that say what the server said.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "tritium/llm.h"

#ifdef TRITIUM_HAS_HTTPLIB
#include <httplib.h>
#endif

namespace tritium {

Json to_json(const ClientStats& s) {
  return {{"requests", s.requests},
          {"retries", s.retries},
          {"failures", s.failures},
          {"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.completion_tokens}};
}

namespace {

struct Endpoint {
  std::string origin;  // scheme://host[:port]
  std::string prefix;  // the path up to and including /v1
};

Result<Endpoint> parse_base_url(const std::string& url) {
  const auto scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    return Error{fmt::format("model URL '{}': expected http://host[:port][/path] or https://...", url)};
  const auto path_start = url.find('/', scheme_end + 3);
  Endpoint e{url.substr(0, path_start), path_start == std::string::npos ? "" : url.substr(path_start)};
  if (e.origin.size() <= scheme_end + 3) return Error{fmt::format("model URL '{}' names no host", url)};
  while (!e.prefix.empty() && e.prefix.back() == '/') e.prefix.pop_back();
  if (!e.prefix.ends_with("/v1")) e.prefix += "/v1";
  return e;
}

std::string key_from_environment() {
  for (const char* name : {"TRITIUM_API_KEY", "OPENAI_API_KEY"})
    if (const char* v = std::getenv(name); v && *v) return v;
  return "";
}

// What one attempt came to: choices, or an error that may pass on a retry.
struct Attempt {
  std::vector<Generation> choices;
  std::optional<std::string> error;
  bool retryable = false;
  double retry_after_s = 0;
};

// The server's own words from an error body: OpenAI's {"error": {"message"}} or {"error": "..."}.
std::string server_message(const std::string& body) {
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const Json& e = j["error"];
    if (e.is_string()) return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
  }
  return body.substr(0, 300);
}

std::string text_or_empty(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// The choices of a 200 answer, in index order. A reasoning model's separate reasoning text
// becomes the response's <think> plan, the format the verifier and HRD expect.
Result<std::vector<Generation>> parse_choices(const std::string& body, bool chat) {
  const Json j = Json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array())
    return Error{fmt::format("the answer is not a completion: {}", body.substr(0, 200))};
  std::vector<std::pair<std::int64_t, Generation>> indexed;
  for (const Json& c : j["choices"]) {
    if (!c.is_object()) return Error{"the answer's choices are not objects"};
    Generation g;
    if (chat) {
      const Json message = c.contains("message") && c["message"].is_object() ? c["message"] : Json::object();
      g.text = text_or_empty(message, "content");
      // vLLM and SGLang's reasoning parsers: "reasoning" in current vLLM, "reasoning_content" before.
      std::string reasoning = text_or_empty(message, "reasoning_content");
      if (reasoning.empty()) reasoning = text_or_empty(message, "reasoning");
      if (!reasoning.empty() && g.text.find("<think>") == std::string::npos)
        g.text = fmt::format("<think>\n{}\n</think>\n\n{}", reasoning, g.text);
    } else {
      g.text = text_or_empty(c, "text");
    }
    g.finish_reason = text_or_empty(c, "finish_reason");
    indexed.emplace_back(c.contains("index") && c["index"].is_number_integer() ? c["index"].get<std::int64_t>() : 0,
                         std::move(g));
  }
  std::stable_sort(indexed.begin(), indexed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Generation> out;
  for (auto& [_, g] : indexed) out.push_back(std::move(g));
  if (j.contains("usage") && j["usage"].is_object() &&
      !out.empty()) {  // usage is per request: the first choice holds it
    out.front().prompt_tokens = j["usage"].value("prompt_tokens", std::int64_t{0});
    std::int64_t completion = j["usage"].value("completion_tokens", std::int64_t{0});
    out.front().completion_tokens = completion;
  }
  return out;
}

bool retryable_status(int status) { return status == 408 || status == 409 || status == 429 || status >= 500; }

}  // namespace

struct LlmClient::Impl {
  ClientOptions options;
  Endpoint endpoint;
  std::atomic<std::int64_t> requests{0}, retries{0}, failures{0}, prompt_tokens{0}, completion_tokens{0};

  std::string path() const { return endpoint.prefix + (options.chat ? "/chat/completions" : "/completions"); }

  Json request_body(const std::string& prompt, const Sampling& s, int n) const {
    Json body = {{"n", n}, {"temperature", s.temperature}, {"top_p", s.top_p}, {"max_tokens", s.max_tokens}};
    if (!options.model.empty()) body["model"] = options.model;
    if (!s.stop.empty()) body["stop"] = s.stop;
    if (s.seed) body["seed"] = *s.seed;
    if (options.chat) {
      Json messages = Json::array();
      if (!options.system_prompt.empty()) messages.push_back({{"role", "system"}, {"content", options.system_prompt}});
      messages.push_back({{"role", "user"}, {"content", prompt}});
      body["messages"] = std::move(messages);
    } else {
      body["prompt"] = prompt;
    }
    for (const auto& [key, value] : options.extra_body.items())
      if (!body.contains(key)) body[key] = value;
    return body;
  }

  Attempt attempt(const std::string& body) {
#ifdef TRITIUM_HAS_HTTPLIB
    httplib::Client http(endpoint.origin);
    auto seconds = [](double s) {
      return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(s));
    };
    http.set_connection_timeout(seconds(options.connect_timeout_s));
    http.set_read_timeout(seconds(options.timeout_s));
    http.set_write_timeout(seconds(options.timeout_s));
    httplib::Headers headers;
    if (!options.api_key.empty()) headers.emplace("Authorization", "Bearer " + options.api_key);
    ++requests;
    const auto res = http.Post(path(), headers, body, "application/json");
    if (!res) {
      const bool timed_out = res.error() == httplib::Error::Read || res.error() == httplib::Error::ConnectionTimeout;
      return {{},
              timed_out ? fmt::format("no answer within {} s", options.timeout_s)
                        : fmt::format("cannot reach the server ({})", httplib::to_string(res.error())),
              true};
    }
    if (res->status != 200) {
      Attempt a{{}, fmt::format("HTTP {}: {}", res->status, server_message(res->body)), retryable_status(res->status)};
      if (res->has_header("Retry-After")) a.retry_after_s = std::atof(res->get_header_value("Retry-After").c_str());
      return a;
    }
    auto choices = parse_choices(res->body, options.chat);
    if (!choices) return {{}, choices.error().message, false};
    return {std::move(*choices), std::nullopt};
#else
    (void)body;
    return {{}, "built without cpp-httplib", false};
#endif
  }

  // One request with its retries.
  Result<std::vector<Generation>> request(const std::string& body) {
    thread_local std::mt19937_64 jitter{std::random_device{}()};
    for (int retry = 0;; ++retry) {
      Attempt a = attempt(body);
      if (!a.error) return std::move(a.choices);
      if (!a.retryable || retry >= options.max_retries) {
        ++failures;
        return Error{fmt::format("{}{}: {}{}", endpoint.origin, path(), *a.error,
                                 a.retryable ? fmt::format(" (after {} retries)", retry) : "")};
      }
      ++retries;
      // Jitter keeps clients that were refused together from coming back together.
      double wait = std::min(options.backoff_max_s, options.backoff_s * double(1 << std::min(retry, 20)));
      wait *= std::uniform_real_distribution<double>(0.5, 1.0)(jitter);
      if (a.retry_after_s > 0)
        wait =
            std::min(a.retry_after_s * std::uniform_real_distribution<double>(1.0, 1.5)(jitter), options.backoff_max_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
  }
};

LlmClient::LlmClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LlmClient::~LlmClient() = default;

Result<std::unique_ptr<LlmClient>> LlmClient::create(ClientOptions options) {
#ifndef TRITIUM_HAS_HTTPLIB
  return Error{"this Tritium was built without cpp-httplib (Debian's libcpp-httplib-dev): no HTTP model client"};
#endif
  auto endpoint = parse_base_url(options.base_url);
  if (!endpoint) return endpoint.error();
  if (options.api_key.empty()) options.api_key = key_from_environment();
  if (options.max_retries < 0 || options.timeout_s <= 0 || options.backoff_s < 0)
    return Error{"client options: max_retries >= 0, timeout_s > 0 and backoff_s >= 0 are required"};
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->endpoint = std::move(*endpoint);
  return std::unique_ptr<LlmClient>(new LlmClient(std::move(impl)));
}

Result<std::vector<Generation>> LlmClient::generate(const std::string& prompt, const Sampling& sampling) {
  if (sampling.n < 1) return Error{"sampling.n must be at least 1"};
  std::vector<Generation> out;
  // Some servers cap or ignore n: ask again for the rest, and give up when an answer adds nothing.
  while (static_cast<int>(out.size()) < sampling.n) {
    auto got = impl_->request(impl_->request_body(prompt, sampling, sampling.n - static_cast<int>(out.size())).dump());
    if (!got) return got.error();
    if (got->empty()) return Error{fmt::format("{}: the server answered with no choices", name())};
    for (auto& g : *got) {
      impl_->prompt_tokens += g.prompt_tokens;
      impl_->completion_tokens += g.completion_tokens;
      if (static_cast<int>(out.size()) < sampling.n) out.push_back(std::move(g));
    }
  }
  return out;
}

std::string LlmClient::name() const {
  return impl_->endpoint.origin + impl_->endpoint.prefix +
         (impl_->options.model.empty() ? "" : " " + impl_->options.model);
}

ClientStats LlmClient::stats() const {
  return {impl_->requests.load(), impl_->retries.load(), impl_->failures.load(), impl_->prompt_tokens.load(),
          impl_->completion_tokens.load()};
}

}  // namespace tritium
