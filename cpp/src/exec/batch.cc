// Candidate batches: files or JSONL lines matched to the tasks they answer.
#include <fmt/format.h>

#include "tritium/exec.h"

namespace fs = std::filesystem;

namespace tritium {
namespace {

// A candidate file's id is its task's id, or <task id>/<sample> for one of several samples.
const Task* task_for_file(const Suite& tasks, const std::string& id) {
  if (const Task* t = find_task(tasks, id)) return t;
  const auto slash = id.rfind('/');
  return slash == std::string::npos ? nullptr : find_task(tasks, id.substr(0, slash));
}

CandidateBatch from_directory(const Suite& tasks, const Suite& files) {
  CandidateBatch batch{{}, files.problems};
  for (const auto& f : files.tasks) {
    const Task* task =
        tasks.tasks.size() == 1 && files.tasks.size() == 1 ? &tasks.tasks[0] : task_for_file(tasks, f.id);
    if (!task) {
      batch.problems.push_back(
          {f.origin, fmt::format("no task with id {} (nor its parent directory) in {}", f.id, tasks.origin)});
      continue;
    }
    batch.items.push_back({f.id, *task, f.source, false, {{"origin", f.origin}}});
  }
  return batch;
}

}  // namespace

Result<EvalItem> eval_item_from_json(const Json& j, const Suite& tasks, const std::string& where) {
  if (!j.is_object()) return Error{where + ": expected a JSON object"};
  const bool has_code = j.contains("code") && j["code"].is_string();
  const bool has_response = j.contains("response") && j["response"].is_string();
  if (has_code == has_response) return Error{where + ": expected exactly one of \"code\" or \"response\" (a string)"};
  const std::string task_id = j.contains("task_id") && j["task_id"].is_string() ? j["task_id"].get<std::string>() : "";
  Task task;
  if (j.contains("task") && j["task"].is_string()) {
    task = {task_id.empty() ? where : task_id, j["task"].get<std::string>(), where, std::nullopt, Json::object()};
  } else if (const Task* known = find_task(tasks, task_id)) {
    task = *known;
  } else if (task_id.empty() && tasks.tasks.size() == 1) {
    task = tasks.tasks[0];
  } else {
    return Error{fmt::format("{}: unknown task_id \"{}\"{}", where, task_id,
                             tasks.origin.empty() ? "; pass the task's source as \"task\"" : " in " + tasks.origin)};
  }
  if (j.contains("level")) {  // an inline task's level (a synthesized task's difficulty) for per-level metrics
    if (!j["level"].is_number_integer()) return Error{where + ": \"level\" must be an integer"};
    task.level = j["level"].get<int>();
  }
  Json meta = {{"origin", where}};
  for (const char* key : {"group", "sample"})
    if (j.contains(key)) meta[key] = j[key];
  std::string id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>() : where;
  const bool rerun = j.contains("rerun") && j["rerun"].is_boolean() && j["rerun"].get<bool>();
  return EvalItem{std::move(id), std::move(task), (has_code ? j["code"] : j["response"]).get<std::string>(),
                  has_response,  std::move(meta), rerun};
}

Result<CandidateBatch> load_candidates(const Suite& tasks, const fs::path& path) {
  if (path.extension() == ".jsonl") {
    auto text = read_file(path);
    if (!text) return text.error();
    CandidateBatch batch;
    for (const auto& [line_no, line] : jsonl_lines(*text)) {
      const std::string where = fmt::format("{}:{}", path.string(), line_no);
      const Json j = Json::parse(line, nullptr, false);
      if (j.is_discarded()) {
        batch.problems.push_back({where, "not valid JSON"});
        continue;
      }
      auto item = eval_item_from_json(j, tasks, where);
      if (item)
        batch.items.push_back(std::move(*item));
      else
        batch.problems.push_back({where, item.error().message.substr(where.size() + 2)});
    }
    return batch;
  }
  auto files = load_suite(path);
  if (!files) return files.error();
  return from_directory(tasks, *files);
}

}  // namespace tritium
