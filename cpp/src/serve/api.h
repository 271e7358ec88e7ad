// What each route does with a parsed body, apart from HTTP: items in, documents out.
#pragma once

#include <functional>
#include <string>

#include "tritium/exec.h"
#include "tritium/reward.h"

namespace tritium::serve {

/// A request the server refuses as a whole: the HTTP status and a one-line reason.
struct ApiError {
  int status;
  std::string message;
};

/// The body of a POST as JSON; throws ApiError 400 saying what is wrong and where (bad UTF-8, bad
/// syntax, a number out of range), in words, not a JSON library's error code.
Json parse_body(const std::string& text);

class Api {
 public:
  /// `record` sees every verdict returned (for /metrics).
  Api(Suite tasks, Engine& engine, Json reward_defaults, std::size_t max_items,
      std::function<void(const Verdict&)> record);

  /// Checks a body's shape and every field's type before any work, and returns the items it asks to
  /// evaluate (0 for /v1/verify). Throws ApiError: 400 naming the field, what it must be and what
  /// came, or 413. A well-typed item that cannot be judged (no code, an unknown task) is not refused
  /// here: it gets an "error" verdict in its place.
  std::size_t check(const std::string& route, const Json& body) const;

  Json verify(const Json& body) const;  // {"verdicts": [{status, findings}]}
  Json evaluate(const Json& body);      // {"verdicts": [...]}
  Json reward(const Json& body);        // {"verdicts": [...], "rewards": [...]}
  Json get_reward(const Json& body);    // OpenRLHF: {"rewards", "scores", "extra_logs"}

 private:
  const Json& items_of(const Json& body) const;
  std::vector<Verdict> run(const Json& items);
  RewardConfig config_for(const Json& body) const;

  Suite tasks_;
  Engine& engine_;
  Json reward_defaults_;
  std::size_t max_items_;
  std::function<void(const Verdict&)> record_;
};

}  // namespace tritium::serve
