// The routes' logic (docs/serve.md): batch items -> verifier or engine -> verdicts, rewards.
#include "api.h"

#include <fmt/format.h>

#include "tritium/llm.h"

namespace tritium::serve {
namespace {

const Json& string_field(const Json& item, const char* key) {
  static const Json kNone;
  return item.is_object() && item.contains(key) && item[key].is_string() ? item[key] : kNone;
}

// The offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code points past
// U+10FFFF included), if any.
std::optional<std::size_t> bad_utf8_at(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (std::size_t i = 0, n = s.size(); i < n;) {
    const unsigned c = p[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > n) return i;
    unsigned cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return std::nullopt;
}

// nlohmann's what() without its "[json.exception.parse_error.101] " prefix.
std::string plain(const Json::exception& e) {
  std::string what = e.what();
  if (const auto end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && end != std::string::npos)
    what.erase(0, end + 2);
  return what;
}

const char* type_of(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_float:
      return "a fractional number";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    default:
      return "something else";
  }
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected, const Json& got) {
  throw ApiError{400, fmt::format("{}: expected {}, got {}", field, expected, type_of(got))};
}

// An optional field of `object` (absent or null is fine) that must pass `ok` when present.
template <class Ok>
void optional_field(const Json& object, const char* key, const std::string& where, const char* expected, Ok ok) {
  if (const auto it = object.find(key); it != object.end() && !it->is_null() && !ok(*it))
    wrong_type(fmt::format("{}.{}", where, key), expected, *it);
}

bool is_int(const Json& j) {
  return j.is_number_integer() &&
         (j.is_number_unsigned() ? j.get<std::uint64_t>() <= INT32_MAX
                                 : j.get<std::int64_t>() >= INT32_MIN && j.get<std::int64_t>() <= INT32_MAX);
}

std::vector<TextSpan> token_spans(const Json& offsets) {
  std::vector<TextSpan> spans;
  for (const auto& pair : offsets) spans.push_back({pair[0].get<std::size_t>(), pair[1].get<std::size_t>()});
  return spans;
}

void check_token_offsets(const Json& offsets, const std::string& where) {
  const std::string field = where + ".token_offsets";
  if (!offsets.is_array()) wrong_type(field, "[[begin, end], ...] of character offsets", offsets);
  for (std::size_t k = 0; k < offsets.size(); ++k) {
    const Json& pair = offsets[k];
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_unsigned() || !pair[1].is_number_unsigned() ||
        pair[0].get<std::uint64_t>() > pair[1].get<std::uint64_t>())
      throw ApiError{
          400, fmt::format("{}[{}]: expected [begin, end], non-negative integers with begin <= end, got {}", field, k,
                           pair.dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 80))};
  }
}

// One batch item's field types (docs/serve.md): the client's bug if wrong, so the request is refused.
void check_item(const Json& item, std::size_t i, bool with_offsets) {
  const std::string where = fmt::format("items[{}]", i);
  if (!item.is_object()) wrong_type(where, "an object {\"code\" | \"response\", \"task\" | \"task_id\", ...}", item);
  for (const char* key : {"code", "response", "task", "task_id", "id"})
    optional_field(item, key, where, "a string", [](const Json& j) { return j.is_string(); });
  optional_field(item, "group", where, "a string or a number",
                 [](const Json& j) { return j.is_string() || j.is_number(); });
  optional_field(item, "sample", where, "an integer", [](const Json& j) { return j.is_number_integer(); });
  optional_field(item, "level", where, "an integer", is_int);
  optional_field(item, "rerun", where, "true or false", [](const Json& j) { return j.is_boolean(); });
  if (with_offsets && item.contains("token_offsets") && !item["token_offsets"].is_null())
    check_token_offsets(item["token_offsets"], where);
}

// An array field of OpenRLHF's body: every entry a string (or, where `nulls`, null).
void check_strings(const Json& body, const char* key, std::size_t size, bool required, bool nulls) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    if (required)
      throw ApiError{
          400,
          fmt::format("{}: missing; expected {{\"query\": [...], \"prompts\": [...], \"labels\"?: [...]}} (OpenRLHF)",
                      key)};
    return;
  }
  if (!it->is_array()) wrong_type(key, "an array of strings", *it);
  if (!required && it->size() != size)
    throw ApiError{400, fmt::format("{}: {} entries for {} queries; send one per query", key, it->size(), size)};
  for (std::size_t i = 0; i < it->size(); ++i)
    if (const Json& e = (*it)[i]; !e.is_string() && !(nulls && e.is_null()))
      wrong_type(fmt::format("{}[{}]", key, i), nulls ? "a string or null" : "a string", e);
}

// The task an item of /v1/verify names: its source, "" when it names none (verification without a
// task), or the item's error when its task_id is not in the served suite.
Result<std::string> task_to_verify(const Json& item, const Suite& tasks, const std::string& where) {
  if (const Json& task = string_field(item, "task"); task.is_string()) return task.get<std::string>();
  const Json& id = string_field(item, "task_id");
  if (!id.is_string()) return std::string();
  if (const Task* known = find_task(tasks, id.get<std::string>())) return known->source;
  return Error{fmt::format("{}: unknown task_id \"{}\"{}", where, id.get<std::string>(),
                           tasks.origin.empty() ? "; the server has no --tasks, so pass the task's source as \"task\""
                                                : " in " + tasks.origin)};
}

}  // namespace

Json parse_body(const std::string& text) {
  if (auto at = bad_utf8_at(text))
    throw ApiError{400, fmt::format("the body is not valid UTF-8 (byte {}): send JSON as UTF-8 text, or escape the "
                                    "characters as \\uXXXX",
                                    *at)};
  try {
    return Json::parse(text);
  } catch (const Json::out_of_range& e) {  // nlohmann: a number past a double's range
    throw ApiError{400, fmt::format("bad JSON: {}; numbers must fit a 64-bit float (at most about 1.8e308)", plain(e))};
  } catch (const Json::exception& e) {
    throw ApiError{400, fmt::format("bad JSON: {}", plain(e))};
  }
}

Api::Api(Suite tasks, Engine& engine, Json reward_defaults, std::size_t max_items,
         std::function<void(const Verdict&)> record)
    : tasks_(std::move(tasks)),
      engine_(engine),
      reward_defaults_(std::move(reward_defaults)),
      max_items_(max_items),
      record_(std::move(record)) {}

const Json& Api::items_of(const Json& body) const {
  if (!body.is_object()) wrong_type("the body", "a JSON object {\"items\": [...]} (docs/serve.md)", body);
  if (!body.contains("items") || body["items"].is_null())
    throw ApiError{400, "items: missing; expected a JSON object {\"items\": [...]} (docs/serve.md)"};
  if (!body["items"].is_array()) wrong_type("items", "an array of items", body["items"]);
  const Json& items = body["items"];
  if (items.size() > max_items_)
    throw ApiError{413, fmt::format("{} items in one request; the limit is {}", items.size(), max_items_)};
  return items;
}

std::size_t Api::check(const std::string& route, const Json& body) const {
  if (route == "/get_reward") {
    if (!body.is_object())
      wrong_type("the body", "a JSON object {\"query\": [...], \"prompts\": [...]} (OpenRLHF)", body);
    check_strings(body, "query", 0, true, false);
    const std::size_t n = body["query"].size();
    if (n > max_items_) throw ApiError{413, fmt::format("{} queries in one request; the limit is {}", n, max_items_)};
    check_strings(body, "prompts", n, false, false);
    check_strings(body, "labels", n, false, true);
    config_for(body);  // a bad config costs no evaluation
    return n;
  }
  const Json& items = items_of(body);
  for (std::size_t i = 0; i < items.size(); ++i) check_item(items[i], i, route == "/v1/reward");
  if (route == "/v1/reward") config_for(body);
  return route == "/v1/verify" ? 0 : items.size();
}

Json Api::verify(const Json& body) const {
  Json out = Json::array();
  const Json& items = items_of(body);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto task = task_to_verify(items[i], tasks_, fmt::format("item {}", i));
    const auto v = task ? verify_item(items[i], *task) : Result<Verification>(task.error());
    out.push_back(v ? to_json(*v)
                    : Json{{"status", "error"}, {"message", v.error().message}, {"findings", Json::array()}});
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
  if (body.contains("config") && !body["config"].is_null()) {
    if (!body["config"].is_object())
      wrong_type("config", "an object of reward settings (docs/rewards.md)", body["config"]);
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
    if (items[i].contains("token_offsets") && !items[i]["token_offsets"].is_null()) {  // checked before the work
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
  const Json prompts = body.value("prompts", Json());
  const Json labels = body.value("labels", Json());
  Json items = Json::array();
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const std::string query = queries[i].get<std::string>();
    const std::string prompt = prompts.is_array() ? prompts[i].get<std::string>() : "";
    const Json label = labels.is_array() ? labels[i] : Json();
    // The response is the query after its prompt; equal prompts form a group.
    Json item = {{"response", query.rfind(prompt, 0) == 0 ? query.substr(prompt.size()) : query}, {"group", prompt}};
    // A label is a task's source or a task id: an unknown id is the sample's error verdict, never
    // silently replaced by the prompt's task. Without a label, the prompt carries the task.
    const std::string text = label.is_string() ? label.get<std::string>() : "";
    if (text.find("class Model") != std::string::npos)
      item["task"] = text;
    else if (!text.empty())
      item["task_id"] = text;
    else if (auto source = task_in_prompt(prompt))
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
