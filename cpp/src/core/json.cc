#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tritium/core.h"

namespace tritium {

OptionReader::OptionReader(const Json& object, std::string what) : object_(object), what_(std::move(what)) {
  if (!object_.is_object() && !object_.is_null())
    error_ = Error{fmt::format("{}: expected a JSON object, not {}", what_, object_.dump())};
}

void OptionReader::fail(const std::string& key, const char* expected) {
  error_ = Error{fmt::format("{}: \"{}\" must be {}, not {}", what_, key, expected, object_.at(key).dump())};
}

std::optional<Error> OptionReader::done() const {
  if (error_) return error_;
  const Json unread = rest();
  if (unread.empty()) return std::nullopt;
  return Error{
      fmt::format("{}: unknown option \"{}\" (known: {})", what_, unread.begin().key(), fmt::join(known_, ", "))};
}

Json OptionReader::rest() const {
  Json out = Json::object();
  if (object_.is_object())
    for (const auto& [key, value] : object_.items())
      if (std::find(known_.begin(), known_.end(), key) == known_.end()) out[key] = value;
  return out;
}

const char* OptionReader::assign(const Json& j, std::string& out) {
  if (!j.is_string()) return "a string";
  out = j.get<std::string>();
  return nullptr;
}

const char* OptionReader::assign(const Json& j, bool& out) {
  if (!j.is_boolean()) return "true or false";
  out = j.get<bool>();
  return nullptr;
}

const char* OptionReader::assign(const Json& j, double& out) {
  if (!j.is_number()) return "a number";
  out = j.get<double>();
  return nullptr;
}

const char* OptionReader::assign(const Json& j, Json& out) {
  out = j;
  return nullptr;
}

Json to_json(const Task& task, bool with_source) {
  Json j = {{"id", task.id}, {"origin", task.origin}};
  j["level"] = task.level ? Json(*task.level) : Json(nullptr);
  j["meta"] = task.meta;
  if (with_source) j["source"] = task.source;
  return j;
}

Json suite_line(const Task& task) {
  return {{"id", task.id},
          {"source", task.source},
          {"level", task.level ? Json(*task.level) : Json()},
          {"meta", task.meta}};
}

Json to_json(const SuiteProblem& problem) { return {{"origin", problem.origin}, {"message", problem.message}}; }

Json to_json(const Suite& suite, bool with_source) {
  Json tasks = Json::array(), problems = Json::array();
  for (const auto& t : suite.tasks) tasks.push_back(to_json(t, with_source));
  for (const auto& p : suite.problems) problems.push_back(to_json(p));
  return {{"suite", suite.origin}, {"tasks", tasks}, {"problems", problems}};
}

}  // namespace tritium
