// The routes' logic (docs/serve.md): batch items -> verifier or engine -> verdicts, rewards.
#include "api.h"

#include "tritium/llm.h"

#include <fmt/format.h>

namespace tritium::serve {
namespace {

const Json& string_field(const Json& item, const char* key) {
  static const Json kNone;
  return item.is_object() && item.contains(key) && item[key].is_string() ? item[key] : kNone;
}

// The task of an OpenRLHF sample: its label (a task id of the served suite, or a task's source),
// else the task its prompt carries.
std::optional<std::string> task_source_for(const Json& label, const std::string& prompt) {
  if (label.is_string() && label.get<std::string>().find("class Model") != std::string::npos) return label.get<std::string>();
  return task_in_prompt(prompt);
}

std::vector<TextSpan> token_spans(const Json& offsets) {
  std::vector<TextSpan> spans;
  for (const auto& pair : offsets) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_unsigned() || !pair[1].is_number_unsigned())
      throw ApiError{400, "token_offsets: expected [[begin, end], ...] of non-negative integers"};
    spans.push_back({pair[0].get<std::size_t>(), pair[1].get<std::size_t>()});
  }
  return spans;
}

}  // namespace

Api::Api(Suite tasks, Engine& engine, Json reward_defaults, std::size_t max_items,
         std::function<void(const Verdict&)> record)
    : tasks_(std::move(tasks)), engine_(engine), reward_defaults_(std::move(reward_defaults)),
      max_items_(max_items), record_(std::move(record)) {}

const Json& Api::items_of(const Json& body) const {
  if (!body.is_object() || !body.contains("items") || !body["items"].is_array())
    throw ApiError{400, "expected a JSON object {\"items\": [...]} (docs/serve.md)"};
  const Json& items = body["items"];
  if (items.size() > max_items_)
    throw ApiError{413, fmt::format("{} items in one request; the limit is {}", items.size(), max_items_)};
  return items;
}

std::size_t Api::work_items(const std::string& route, const Json& body) const {
  if (route == "/get_reward") {
    if (!body.is_object() || !body.contains("query") || !body["query"].is_array())
      throw ApiError{400, "expected {\"query\": [...], \"prompts\": [...], \"labels\"?: [...]} (OpenRLHF)"};
    if (body["query"].size() > max_items_)
      throw ApiError{413, fmt::format("{} queries in one request; the limit is {}", body["query"].size(), max_items_)};
    return body["query"].size();
  }
  const std::size_t n = items_of(body).size();
  return route == "/v1/verify" ? 0 : n;
}

Json Api::verify(const Json& body) const {
  Json out = Json::array();
  for (const auto& item : items_of(body)) {
    const Json& code = string_field(item, "code");
    const Json& response = string_field(item, "response");
    std::string task = string_field(item, "task").is_string() ? string_field(item, "task").get<std::string>() : "";
    if (const Json& id = string_field(item, "task_id"); task.empty() && id.is_string())
      if (const Task* known = find_task(tasks_, id.get<std::string>())) task = known->source;
    if (code.is_string() == response.is_string()) {
      out.push_back({{"status", "error"}, {"message", "expected exactly one of \"code\" or \"response\" (a string)"}, {"findings", Json::array()}});
      continue;
    }
    const auto v = code.is_string() ? verify_code(code.get<std::string>(), task) : verify_response(response.get<std::string>(), task);
    out.push_back(to_json(v));
  }
  return {{"verdicts", out}};
}

std::vector<Verdict> Api::run(const Json& items) {
  auto verdicts = evaluate_items(engine_, items, tasks_);
  for (const auto& v : verdicts) record_(v);
  return verdicts;
}

Json Api::evaluate(const Json& body) {
  Json out = Json::array();
  for (const auto& v : run(items_of(body))) out.push_back(to_json(v));
  return {{"verdicts", out}};
}

RewardConfig Api::config_for(const Json& body) const {
  Json merged = reward_defaults_;
  if (body.contains("config")) {
    if (!body["config"].is_object()) throw ApiError{400, "\"config\" must be an object of reward settings"};
    merged.merge_patch(body["config"]);
  }
  auto config = reward_config_from_json(merged);
  if (!config) throw ApiError{400, config.error().message};
  return *config;
}

Json Api::reward(const Json& body) {
  const RewardConfig config = config_for(body);  // a bad config costs no evaluation
  const Json& items = items_of(body);
  const auto verdicts = run(items);
  const auto scored = score_batch(verdicts, config);
  Json verdicts_json = Json::array(), rewards = Json::array();
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    verdicts_json.push_back(to_json(verdicts[i]));
    Json r = to_json(scored[i]);
    if (items[i].is_object() && items[i].contains("token_offsets")) {
      const auto spans = token_spans(items[i]["token_offsets"]);
      const Json& response = string_field(items[i], "response");
      r["token_advantages"] = response.is_string()
                                  ? response_token_advantages(response.get<std::string>(), spans, scored[i].advantage)
                                  : token_advantages(spans, {0, 0}, scored[i].advantage);
    }
    rewards.push_back(std::move(r));
  }
  return {{"verdicts", verdicts_json}, {"rewards", rewards}};
}

Json Api::get_reward(const Json& body) {
  const RewardConfig config = config_for(body);
  const Json& queries = body["query"];
  const Json prompts = body.value("prompts", Json::array());
  const Json labels = body.value("labels", Json::array());
  Json items = Json::array();
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const std::string query = queries[i].is_string() ? queries[i].get<std::string>() : "";
    const std::string prompt = i < prompts.size() && prompts[i].is_string() ? prompts[i].get<std::string>() : "";
    const Json label = i < labels.size() ? labels[i] : Json();
    // The response is the query after its prompt; equal prompts form a group.
    Json item = {{"response", query.rfind(prompt, 0) == 0 ? query.substr(prompt.size()) : query},
                 {"group", prompt}};
    if (label.is_string() && find_task(tasks_, label.get<std::string>()))
      item["task_id"] = label;
    else if (auto source = task_source_for(label, prompt))
      item["task"] = *source;
    items.push_back(std::move(item));
  }
  const auto verdicts = run(items);
  const auto scored = score_batch(verdicts, config);
  Json rewards = Json::array(), correct = Json::array(), valid = Json::array();
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    rewards.push_back(scored[i].reward.scalar);
    correct.push_back(scored[i].reward.correct ? 1.0 : 0.0);
    valid.push_back(scored[i].reward.valid ? 1.0 : 0.0);
  }
  return {{"rewards", rewards}, {"scores", rewards}, {"extra_logs", {{"correct", correct}, {"valid", valid}}}};
}

}  // namespace tritium::serve
