// tritium bench and tritium distill: sample a model on a suite, evaluate every sample, then report
// (bench) or keep the verified traces as SFT data (distill). Both resume (docs/llm.md). The work is
// workflow::run_bench and run_distill; this file is their flags and their printing.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"

namespace tritium::cli {
namespace {

struct SampleCliOptions {
  workflow::SamplingOptions run;
  bool json = false;
  ModelFlags model;
  EngineFlags engine;
};

using Workflow = Result<Json> (*)(const workflow::SamplingOptions&, const workflow::Listener&);

// Runs a sampling workflow; the exit says whether every task got its samples.
int run_sampling(SampleCliOptions& o, Workflow call, const std::function<void(const Json&)>& print) {
  o.run.generator = o.model.resolved(nullptr);
  o.run.sample.sampling = o.model.sampling;
  o.run.sample.concurrency = o.model.concurrency;
  o.run.engine = o.engine.options();
  auto result = call(o.run, listener());
  if (!result) return workflow_failure(result.error());
  if (o.json)
    print_json(*result);
  else
    print(*result);
  const int failed = result->value("tasks_failed", 0);
  return failed == 0 ? kOk : result->value("sampled_now", 0) == 0 ? kEnvironment : kFailures;
}

void print_bench(const Json& info, const std::string& dir) {
  const Json& s = info["metrics"]["overall"];
  std::cout << fmt::format("{} samples over {} tasks from {}\n", s["samples"].get<int>(), s["tasks"].get<int>(),
                           info["model"].get<std::string>());
  for (const auto& p : s["pass"])
    std::cout << fmt::format("  pass@{:<3} {}\n", p["k"].get<int>(),
                             p["value"].is_number() ? fmt::format("{:.1f}%", 100 * p["value"].get<double>()) : "-");
  for (const auto& [stage, n] : s["stages"].items()) std::cout << fmt::format("  {:<16} {}\n", stage, n.get<int>());
  std::cout << fmt::format("wrote {0}/verdicts.jsonl, samples.jsonl, run.json, report.md, report.json, report.html\n",
                           dir);
}

void print_distill(const Json& stats) {
  std::cout << fmt::format("{} of {} samples kept in {} ({} tasks)\n", stats["kept"].get<int>(),
                           stats["samples"].get<int>(), stats["out"].get<std::string>(), stats["tasks"].get<int>());
  for (const auto& [why, n] : stats["dropped"].items())
    std::cout << fmt::format("  dropped {:>5}  {}\n", n.get<int>(), why);
}

void add_sampling_flags(CLI::App* app, SampleCliOptions& o, const std::string& model_flag) {
  app->add_option("--tasks", o.run.tasks,
                  "Task suite: a .py, a directory (a KernelBench checkout's level1/ works as "
                  "it is) or a .jsonl")
      ->required();
  app->add_option("--samples", o.run.sample.samples, "Samples per task")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--limit", o.run.limit, "At most this many tasks (0: all)");
  app->add_flag("--json", o.json, "Print the summary as JSON");
  add_engine_flags(app, o.engine);
  add_model_flags(app, o.model, model_flag);
}

}  // namespace

void add_bench_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<SampleCliOptions>();
  auto* app = root.add_subcommand("bench",
                                  "Sample a model on a suite, evaluate, report pass@k, fast_p and the status "
                                  "breakdown (resumes an interrupted run in the same --out)");
  add_sampling_flags(app, *o, "--model");
  app->add_option("--out", o->run.out, "Directory for verdicts.jsonl, samples.jsonl, run.json and the reports")
      ->required();
  commands.push_back(
      {app, [o] { return run_sampling(*o, workflow::run_bench, [o](const Json& j) { print_bench(j, o->run.out); }); }});
}

void add_distill_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<SampleCliOptions>();
  o->run.sample.samples = 5;
  auto* app = root.add_subcommand("distill",
                                  "SFT data from a teacher: keep the samples that verify and evaluate "
                                  "correct (resumes from OUT.progress.jsonl)");
  add_sampling_flags(app, *o, "--teacher");
  app->add_option("--out", o->run.out, "SFT JSONL to append to")->required();
  app->add_flag("--only-faster", o->run.only_faster, "Keep only samples faster than PyTorch eager (needs a GPU)");
  app->add_option("--max-per-task", o->run.max_per_task, "Keep at most this many traces per task (0: all)");
  commands.push_back({app, [o] { return run_sampling(*o, workflow::run_distill, print_distill); }});
}

}  // namespace tritium::cli
