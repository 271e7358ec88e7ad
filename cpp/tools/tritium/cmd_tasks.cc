// tritium tasks SUITE [--check]: list a suite, or run every task's reference in the runner.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"
#include "tritium/exec.h"

namespace tritium::cli {
namespace {

struct TasksOptions {
  std::string suite;
  bool check = false;
  bool json = false;
  RunnerOptions runner;
};

std::string join_tensors(const std::vector<TensorInfo>& tensors) {
  std::vector<std::string> parts;
  for (const auto& t : tensors) parts.push_back(to_string(t));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
}

void print_problem(const SuiteProblem& p) { std::cout << fmt::format("FAIL  {}: {}\n", p.origin, p.message); }

void print_check(const TaskCheck& c) {
  if (c.ok)
    std::cout << fmt::format("  ok  {}  in {} -> out {}  {:.2f} ms\n", c.task_id, join_tensors(c.inputs),
                             join_tensors(c.outputs), c.forward_ms);
  else
    std::cout << fmt::format("FAIL  {}  {}\n", c.task_id, c.error);
  for (const auto& w : c.warnings) std::cout << fmt::format("warn  {}  degenerate: {}\n", c.task_id, w);
  std::cout.flush();
}

int list_tasks(const Suite& suite, const TasksOptions& o) {
  if (o.json) {
    print_json(to_json(suite));
  } else {
    for (const auto& t : suite.tasks)
      std::cout << fmt::format("{:<40} level {:<2} {}\n", t.id, t.level ? std::to_string(*t.level) : "-", t.origin);
    for (const auto& p : suite.problems) print_problem(p);
    std::cout << fmt::format("{} tasks, {} problems\n", suite.tasks.size(), suite.problems.size());
  }
  return suite.problems.empty() ? kOk : kFailures;
}

int check_tasks(const Suite& suite, const TasksOptions& o) {
  if (!o.json)
    for (const auto& p : suite.problems) print_problem(p);
  Progress progress(suite.tasks.size());
  auto check = check_suite(suite, o.runner, [&](std::size_t i, std::size_t, const TaskCheck& c) {
    progress.clear();
    if (!o.json) print_check(c);
    progress.update(i + 1, c.task_id);
  });
  progress.clear();
  if (!check) return fail(kEnvironment, check.error().message);
  const std::size_t failed = check->failed();
  if (o.json)
    print_json(to_json(*check));
  else
    std::cout << fmt::format("{} tasks: {} ok, {} failed in {:.1f} s ({})\n", check->total(), check->total() - failed,
                             failed, check->seconds, check->device);
  return failed == 0 ? kOk : kFailures;
}

}  // namespace

void add_tasks_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<TasksOptions>();
  auto* app = root.add_subcommand("tasks", "List a task suite, or check that every task's reference runs");
  app->add_option("suite", o->suite, "A task .py file, a directory of them, or a .jsonl suite")->required();
  app->add_flag("--check", o->check, "Run each task's Model on its inputs in a runner process");
  app->add_option("--device", o->runner.device, "Where references run")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app->add_option("--timeout", o->runner.timeout_s, "Seconds each task may take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--seed", o->runner.seed, "torch.manual_seed for model and inputs")->capture_default_str();
  app->add_option("--python", o->runner.python,
                  "Python for the runner (default: $TRITIUM_PYTHON, the python3 beside tritium, or python3)");
  app->add_flag("--json", o->json, "Print one JSON document instead of text");
  commands.push_back({app, [o]() -> int {
                        auto suite = load_suite(o->suite);
                        if (!suite) return fail(kUsage, suite.error().message);
                        return o->check ? check_tasks(*suite, *o) : list_tasks(*suite, *o);
                      }});
}

}  // namespace tritium::cli
