// Reference checks: each task's Model runs on its own inputs in a forked runner worker.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "runner.h"
#include "tritium/exec.h"

namespace tritium {
namespace {

bool is_executable(const std::filesystem::path& p) { return access(p.c_str(), X_OK) == 0; }

std::vector<TensorInfo> tensors_from(const Json& list) {
  std::vector<TensorInfo> out;
  if (!list.is_array()) return out;
  for (const auto& t : list)
    out.push_back({t.value("shape", std::vector<long long>{}), t.value("dtype", std::string("?"))});
  return out;
}

TaskCheck from_reply(const Task& task, const exec::Reply& reply) {
  TaskCheck c;
  c.task_id = task.id;
  c.origin = task.origin;
  if (reply.kind != exec::Reply::Kind::ok) {
    c.stage = reply.kind == exec::Reply::Kind::timeout ? "timeout" : "runner";
    c.error = reply.kind == exec::Reply::Kind::timeout
                  ? fmt::format("{}: timed out: {} (raise the timeout, --timeout, if the task is just slow)",
                                task.origin, reply.detail)
                  : fmt::format("{}: {}", task.origin, reply.detail);
    return c;
  }
  const Json& b = reply.body;
  c.ok = b.value("ok", false);
  c.inputs = tensors_from(b.value("inputs", Json::array()));
  c.outputs = tensors_from(b.value("outputs", Json::array()));
  c.init_ms = b.value("init_ms", 0.0);
  c.forward_ms = b.value("forward_ms", 0.0);
  c.output_tail = b.value("output_tail", std::string());
  c.warnings = b.value("warnings", std::vector<std::string>{});
  c.ill_conditioned = b.value("ill_conditioned", false);
  if (!c.ok) {
    c.stage = b.value("stage", std::string("runner"));
    // The runner names the line; the file is ours to name, as the user knows it.
    c.error = fmt::format("{}{}: {}", task.origin, b.contains("line") ? fmt::format(":{}", b["line"].get<int>()) : "",
                          b.value("error", std::string("failed without a message")));
  }
  return c;
}

}  // namespace

std::string find_python() {
  if (const char* env = std::getenv("TRITIUM_PYTHON"); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto sibling = self.parent_path() / "python3";
    if (is_executable(sibling)) return sibling.string();
  }
  return "python3";
}

std::size_t SuiteCheck::failed() const {
  std::size_t n = problems.size();
  for (const auto& t : tasks) n += t.ok ? 0 : 1;
  return n;
}

Result<SuiteCheck> check_suite(const Suite& suite, const RunnerOptions& options, const CheckProgress& progress) {
  const auto suite_start = std::chrono::steady_clock::now();
  exec::Runner runner(options);
  SuiteCheck out{suite.origin, options.device, {}, suite.problems, 0};
  auto& results = out.tasks;
  results.reserve(suite.tasks.size());
  for (const Task& task : suite.tasks) {
    if (auto error = runner.ensure_started()) return *error;
    const Json request = {{"op", "check_task"},       {"id", task.id},
                          {"source", task.source},    {"filename", task.origin},
                          {"device", options.device}, {"seed", options.seed}};
    const auto start = std::chrono::steady_clock::now();
    TaskCheck check = from_reply(task, runner.call(request, options.timeout_s));
    check.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    results.push_back(std::move(check));
    if (progress) progress(results.size() - 1, suite.tasks.size(), results.back());
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - suite_start).count();
  return out;
}

Result<Json> trace_task(const Task& task, const RunnerOptions& options) {
  exec::Runner runner(options);
  if (auto error = runner.ensure_started()) return *error;
  const Json request = {{"op", "trace_task"}, {"id", task.id}, {"source", task.source}, {"filename", task.origin}};
  const exec::Reply reply = runner.call(request, options.timeout_s);
  if (reply.kind != exec::Reply::Kind::ok)
    return Error{fmt::format("{}: tracing failed: {}", task.origin, reply.detail)};
  if (!reply.body.value("ok", false))
    return Error{fmt::format("{}: tracing failed at {}: {}", task.origin,
                             reply.body.value("stage", std::string("runner")),
                             reply.body.value("error", std::string("no message")))};
  return reply.body;
}

std::string to_string(const TensorInfo& info) { return fmt::format("{}[{}]", info.dtype, fmt::join(info.shape, ", ")); }

Json to_json(const TensorInfo& info) { return {{"shape", info.shape}, {"dtype", info.dtype}}; }

Json to_json(const TaskCheck& c) {
  Json inputs = Json::array(), outputs = Json::array();
  for (const auto& t : c.inputs) inputs.push_back(to_json(t));
  for (const auto& t : c.outputs) outputs.push_back(to_json(t));
  Json j = {{"id", c.task_id},
            {"origin", c.origin},
            {"ok", c.ok},
            {"inputs", inputs},
            {"outputs", outputs},
            {"init_ms", c.init_ms},
            {"forward_ms", c.forward_ms},
            {"wall_ms", c.wall_ms}};
  j["stage"] = c.ok ? Json(nullptr) : Json(c.stage);
  j["error"] = c.ok ? Json(nullptr) : Json(c.error);
  j["output_tail"] = c.output_tail;
  j["warnings"] = c.warnings;
  j["ill_conditioned"] = c.ill_conditioned;
  return j;
}

Json to_json(const SuiteCheck& check) {
  Json tasks = Json::array(), problems = Json::array();
  for (const auto& t : check.tasks) tasks.push_back(to_json(t));
  for (const auto& p : check.problems) problems.push_back(to_json(p));
  const std::size_t failed = check.failed();
  return {{"suite", check.suite},
          {"device", check.device},
          {"tasks", tasks},
          {"problems", problems},
          {"summary",
           {{"total", check.total()}, {"ok", check.total() - failed}, {"failed", failed}, {"seconds", check.seconds}}}};
}

}  // namespace tritium
