#include "tritium/core.h"

namespace tritium {

Json to_json(const Task& task, bool with_source) {
  Json j = {{"id", task.id}, {"origin", task.origin}};
  j["level"] = task.level ? Json(*task.level) : Json(nullptr);
  j["meta"] = task.meta;
  if (with_source) j["source"] = task.source;
  return j;
}

Json to_json(const SuiteProblem& problem) {
  return {{"origin", problem.origin}, {"message", problem.message}};
}

Json to_json(const Suite& suite, bool with_source) {
  Json tasks = Json::array(), problems = Json::array();
  for (const auto& t : suite.tasks) tasks.push_back(to_json(t, with_source));
  for (const auto& p : suite.problems) problems.push_back(to_json(p));
  return {{"suite", suite.origin}, {"tasks", tasks}, {"problems", problems}};
}

}  // namespace tritium
