// tritium search: test-time search for the fastest correct kernel of one task (docs/search.md).
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli.h"

namespace tritium::cli {
namespace {

namespace fs = std::filesystem;

struct SearchCliOptions {
  std::string task, tasks, out, candidate;
  search::SearchOptions search;
  ModelFlags model;
  EngineFlags engine;
  bool json = false;
};

// The task: a .py file, or an id of --tasks.
Result<Suite> load_task(const SearchCliOptions& o) {
  std::error_code ec;
  if (o.tasks.empty()) {
    if (!fs::is_regular_file(o.task, ec))
      return Error{fmt::format("--task {}: no such file; give a task .py, or an id with --tasks SUITE", o.task)};
    return load_suite(o.task);
  }
  auto suite = load_suite(o.tasks);
  if (!suite) return suite.error();
  const Task* task = find_task(*suite, o.task);
  if (!task) return Error{fmt::format("--task {}: no task with that id in {}", o.task, o.tasks)};
  Task chosen = *task;
  suite->tasks = {std::move(chosen)};
  return suite;
}

int run_search(const SearchCliOptions& o) {
  auto suite = load_task(o);
  if (!suite) return fail(kUsage, suite.error().message);
  if (suite->tasks.size() != 1) return fail(kUsage, fmt::format("--task {}: expected one task", o.task));
  const Task& task = suite->tasks.front();
  const fs::path dir(o.out);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(kUsage, fmt::format("--out {}: {}", o.out, ec.message()));
  std::unique_ptr<Generator> generator;
  if (!o.model.model.empty()) {
    auto opened = search::open_generator(o.model.resolved(&*suite));
    if (!opened) return fail(kEnvironment, opened.error().message);
    generator = std::move(*opened);
  } else if (o.candidate.empty()) {
    return fail(kUsage, "give --generator, --candidate, or both");
  }
  const EngineOptions engine_options = o.engine.options();
  auto engine = Engine::create(engine_options);
  if (!engine) return engine_failure(engine_options, engine.error());
  search::SearchOptions options = o.search;
  if (!o.candidate.empty()) {
    auto code = read_file(o.candidate);
    if (!code) return fail(kUsage, code.error().message);
    options.start_code = std::move(*code);
  }
  options.python = o.engine.options().python;
  options.sampling = o.model.sampling;
  options.concurrency = o.model.concurrency;
  std::ofstream log(dir / "search.jsonl", std::ios::trunc);
  const auto result = search::search_task(task, generator.get(), **engine, options, [&](const Json& line) {
    log << line.dump() << '\n';
    log.flush();
    if (line.contains("verdict"))
      std::cerr << fmt::format("tritium: search #{} {} {}: {}{}\n", line["index"].get<std::size_t>(),
                               line["stage"].get<std::string>(), line["note"].get<std::string>(),
                               line["verdict"]["status"].get<std::string>(),
                               line["verdict"]["runtime_ms"].is_number()
                                   ? fmt::format(" {:.4f} ms", line["verdict"]["runtime_ms"].get<double>())
                                   : "");
  });
  Json summary = search::to_json(result);
  summary["task_id"] = task.id;
  summary["generator"] = generator ? generator->name() : "none";
  summary["engine"] = (*engine)->info();
  std::ofstream(dir / "result.json") << summary.dump(2) << '\n';
  if (result.best) std::ofstream(dir / "best.py") << result.tried[*result.best].code;
  if (o.json) {
    print_json(summary);
  } else if (!result.best) {
    std::cout << fmt::format("no correct kernel among {} candidates for {}; see {}/search.jsonl\n", result.tried.size(),
                             task.id, dir.string());
  } else {
    const Verdict& best = result.tried[*result.best].verdict;
    std::cout << fmt::format(
        "best of {} candidates for {}: #{} ({}){}; wrote {}/best.py\n", result.tried.size(), task.id, *result.best,
        result.tried[*result.best].stage,
        best.runtime_ms ? fmt::format(", {:.4f} ms, {:.2f}x eager", *best.runtime_ms, best.speedup_eager.value_or(0))
                        : " (untimed on this device: the first correct one)",
        dir.string());
    if (summary.contains("speedup_over_first"))
      std::cout << fmt::format("speedup over the best-of-1 kernel: {:.3f}x\n",
                               summary["speedup_over_first"].get<double>());
  }
  return result.best ? kOk : kFailures;
}

}  // namespace

void add_search_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<SearchCliOptions>();
  auto* app = root.add_subcommand("search",
                                  "Test-time search for the fastest correct kernel of a task: best-of-N, "
                                  "refinement rounds, launch-configuration tuning");
  app->add_option("--task", o->task, "A task .py, or a task id of --tasks")->required();
  app->add_option("--tasks", o->tasks, "The suite --task names a task of (synthesized suites for --generator emitter)");
  add_model_flags(app, o->model, "--generator");
  app->add_option("--candidate", o->candidate, "A kernel of your own (.py with ModelNew), evaluated first and tuned");
  app->add_option("--budget", o->search.budget, "Best-of-N samples")->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--rounds", o->search.rounds, "Refinement rounds after best-of-N")->capture_default_str();
  app->add_option("--refine-samples", o->search.refine_samples, "Samples per refinement round")->capture_default_str();
  app->add_option("--tune-budget", o->search.tune_budget, "Launch-configuration variants of the best kernel (GPU)")
      ->capture_default_str();
  app->add_option("--fragment-budget", o->search.fragment_budget,
                  "With --generator emitter: fragment partitions of the traced task to evaluate (0: none)")
      ->capture_default_str();
  app->add_option("--confirm-rounds", o->search.confirm_rounds,
                  "Timed reruns, side by side, of the best-of-1 and the best; their medians decide (GPU; 0: none)")
      ->capture_default_str();
  app->add_option("--out", o->out, "Directory for best.py, search.jsonl and result.json")->required();
  app->add_flag("--json", o->json, "Print the result as JSON");
  add_engine_flags(app, o->engine);
  commands.push_back({app, [o] { return run_search(*o); }});
}

}  // namespace tritium::cli
