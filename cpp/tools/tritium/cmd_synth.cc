// tritium synth: synthesize KernelBench-format tasks (CSP-DAG), and `synth stats SUITE`.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli.h"
#include "tritium/exec.h"
#include "tritium/synth.h"

namespace tritium::cli {
namespace {

struct SynthCliOptions {
  synth::SynthOptions synth;
  std::string difficulty = "1-3";
  std::string ops;
  std::string size = "cpu";
  std::string out;
  bool validate = false;
  bool json = false;
  double solution_timeout_s = 120;  // per solution under the engine (GPU-size tasks move gigabytes)
  RunnerOptions runner;
  std::string stats_suite;
};

Result<std::vector<synth::Category>> parse_categories(const std::string& list) {
  auto categories = synth::parse_categories(list);
  if (!categories) return Error{"--ops: " + categories.error().message};
  return categories;
}

std::optional<Error> parse_difficulty(const std::string& text, synth::SynthOptions& o) {
  const std::size_t dash = text.find('-');
  try {
    o.min_difficulty = std::stoi(text.substr(0, dash));
    o.max_difficulty = dash == std::string::npos ? o.min_difficulty : std::stoi(text.substr(dash + 1));
  } catch (const std::exception&) {
    return Error{fmt::format("--difficulty '{}': expected K or K1-K2, e.g. 3 or 1-8", text)};
  }
  return std::nullopt;
}

Json task_line(const Task& t) {
  return {{"id", t.id}, {"source", t.source}, {"level", t.level ? Json(*t.level) : Json()}, {"meta", t.meta}};
}

std::optional<Error> write_tasks(const std::vector<synth::SynthTask>& tasks, const std::filesystem::path& out) {
  std::error_code ec;
  if (out.extension() == ".jsonl") {
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path(), ec);
    std::ofstream f(out);
    for (const auto& t : tasks) f << task_line(t.task).dump() << '\n';
    if (!f) return Error{fmt::format("could not write {}", out.string())};
    return std::nullopt;
  }
  std::filesystem::create_directories(out, ec);
  if (ec) return Error{fmt::format("could not create {}: {}", out.string(), ec.message())};
  std::ofstream meta(out / "meta.jsonl");
  for (const auto& t : tasks) {
    std::ofstream f(out / (t.task.id + ".py"));
    f << t.task.source;
    meta << Json{{"id", t.task.id}, {"meta", t.task.meta}}.dump() << '\n';
    if (!f) return Error{fmt::format("could not write {}", (out / (t.task.id + ".py")).string())};
  }
  return std::nullopt;
}

// Where validation reports go: stdout, unless the tasks themselves go there (no --out), which
// must stay a JSONL of tasks and nothing else.
std::ostream& report_stream(const SynthCliOptions& o) { return o.out.empty() ? std::cerr : std::cout; }

// Runs every task's reference; removes the ill-conditioned tasks from `tasks` (they are not
// written) and says how many (with --json, into `report`). Fails when a reference does not run.
int validate(std::vector<synth::SynthTask>& tasks, const SynthCliOptions& o, Json& report) {
  Suite suite;
  for (const auto& t : tasks) suite.tasks.push_back(t.task);
  Progress progress(suite.tasks.size());
  auto check = check_suite(suite, o.runner, [&](std::size_t i, std::size_t, const TaskCheck& c) {
    progress.clear();
    if (!c.ok && !o.json) report_stream(o) << fmt::format("FAIL  {}  {}\n", c.task_id, c.error);
    progress.update(i + 1, c.task_id);
  });
  progress.clear();
  if (!check) return fail(kEnvironment, check.error().message);
  double slowest = 0;
  std::set<std::string> dropped;
  for (const auto& c : check->tasks) {
    slowest = std::max(slowest, c.forward_ms);
    if (c.ok && c.ill_conditioned) dropped.insert(c.task_id);  // it cannot be judged fairly
  }
  std::erase_if(tasks, [&](const synth::SynthTask& t) { return dropped.contains(t.task.id); });
  if (o.json)
    report.update({{"validated", check->total()}, {"failed", check->failed()}, {"ill_conditioned", dropped.size()},
                   {"slowest_forward_ms", slowest}, {"device", check->device}, {"seconds", check->seconds}});
  else
    report_stream(o) << fmt::format("validated {} tasks on {}: {} ran, {} failed, {} ill-conditioned (dropped); slowest "
                             "forward {:.1f} ms ({:.1f} s)\n",
                             check->total(), check->device, check->total() - check->failed(), check->failed(),
                             dropped.size(), slowest, check->seconds);
  return check->failed() == 0 ? kOk : kFailures;
}

// Every reference solution judged by the evaluation engine against its task: all must be correct.
// With --json the counts go into `report` ("solutions").
int validate_solutions(const std::vector<synth::SynthTask>& tasks, const SynthCliOptions& o, Json& report) {
  std::vector<EvalItem> items;
  for (const auto& t : tasks)
    if (t.task.meta.contains("solution"))
      items.push_back({t.task.id, t.task, t.task.meta["solution"].get<std::string>(), false, Json::object()});
  EngineOptions options;
  options.python = o.runner.python;
  options.device = o.runner.device;
  options.timing = false;  // a validity check: timing would add a torch.compile of every task
  options.timeout_s = o.solution_timeout_s;
  // The same options and seed give the same verdicts too: a fresh engine seed drew, about one run
  // in six, inputs on which an honest fused matmul missed the fp32 tolerance at one element.
  options.seed = o.synth.seed;
  auto engine = Engine::create(options);
  if (!engine) return engine_failure(options, engine.error());
  Progress progress(items.size());
  std::size_t done = 0;
  Json failures = Json::array();  // each failed solution, with the engine's reason
  const auto verdicts = (*engine)->evaluate(items, [&](std::size_t, std::size_t, const Verdict& v) {
    progress.clear();
    if (v.status != "correct") {
      failures.push_back({{"task_id", v.task_id}, {"status", v.status}, {"message", v.message}});
      if (!o.json) report_stream(o) << fmt::format("FAIL  {}  solution {}: {}\n", v.task_id, v.status, v.message);
    }
    progress.update(++done, v.task_id);
  });
  progress.clear();
  const auto correct = std::count_if(verdicts.begin(), verdicts.end(), [](const Verdict& v) { return v.status == "correct"; });
  if (o.json)
    report["solutions"] = {{"count", items.size()}, {"correct", correct}, {"of_tasks", tasks.size()}, {"failures", failures}};
  else
    report_stream(o) << fmt::format("solutions: {} of {} tasks have one; {} correct under the engine ({})\n", items.size(),
                             tasks.size(), correct, (*engine)->info().value("device", std::string()));
  return static_cast<std::size_t>(correct) == items.size() ? kOk : kFailures;
}

int run_synth(SynthCliOptions& o) {
  if (auto e = parse_difficulty(o.difficulty, o.synth)) return fail(kUsage, e->message);
  auto categories = parse_categories(o.ops);
  if (!categories) return fail(kUsage, categories.error().message);
  o.synth.categories = *categories;
  o.synth.size = o.size == "gpu" ? synth::SizeProfile::gpu : synth::SizeProfile::cpu;
  Progress progress(o.synth.count);
  const auto start = std::chrono::steady_clock::now();
  auto tasks = synth::synthesize(o.synth, [&](std::size_t done, std::size_t) { progress.update(done, "tasks"); });
  progress.clear();
  if (!tasks) return fail(kUsage, tasks.error().message);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.out.empty())
    std::cerr << fmt::format("{} tasks in {:.2f} s ({:.0f} tasks/s)\n", tasks->size(), seconds,
                             static_cast<double>(tasks->size()) / seconds);
  Json report = Json::object();  // --json --validate: one document, printed at the end
  const int references = o.validate ? validate(*tasks, o, report) : kOk;
  if (o.out.empty()) {
    for (const auto& t : *tasks) print_json(task_line(t.task));
  } else {
    if (auto e = write_tasks(*tasks, o.out)) return fail(kUsage, e->message);
    std::cerr << fmt::format("{} tasks -> {}\n", tasks->size(), o.out);
  }
  const int solutions = o.validate && o.synth.with_solutions ? validate_solutions(*tasks, o, report) : kOk;
  if (o.validate && o.json) report_stream(o) << report.dump() << std::endl;
  return references == kOk ? solutions : references;
}

int run_stats(const SynthCliOptions& o) {
  auto suite = load_suite(o.stats_suite);
  if (!suite) return fail(kUsage, suite.error().message);
  auto categories = parse_categories(o.ops);
  if (!categories) return fail(kUsage, categories.error().message);
  const Json stats = synth::coverage_stats(suite->tasks, *categories);
  if (o.json) {
    print_json(stats);
    return kOk;
  }
  const auto& chi = stats["chi_square"];
  std::cout << fmt::format("{} tasks, {} operator draws over {} operators ({} never drawn)\n", stats["tasks"].get<int>(),
                           stats["op_draws"].get<int>(), stats["ops"].get<int>(), stats["ops_missing"].get<int>());
  std::cout << fmt::format("uniformity: chi-square {:.1f} on {} df, p = {:.3f} ({})\n", chi["statistic"].get<double>(),
                           chi["df"].get<double>(), chi["p_value"].get<double>(),
                           chi["uniform_at_0.01"].get<bool>() ? "consistent with uniform" : "NOT uniform at 0.01");
  std::cout << fmt::format("op pairs (producer -> consumer) covered: {} of {}\n", stats["pairs_covered"].get<int>(),
                           stats["pairs_possible"].get<int>());
  std::cout << "difficulty:";
  for (const auto& [k, n] : stats["difficulty"].items()) std::cout << fmt::format(" {}:{}", k, n.get<int>());
  std::cout << '\n';
  for (const char* key : {"flops", "est_ms"})
    if (!stats[key].is_null())
      std::cout << fmt::format("{}: min {:.3g}, median {:.3g}, max {:.3g}\n", key, stats[key]["min"].get<double>(),
                               stats[key]["median"].get<double>(), stats[key]["max"].get<double>());
  std::cout << "histogram:";
  for (const auto& [name, n] : stats["histogram"].items()) std::cout << fmt::format(" {}={}", name, n.get<int>());
  std::cout << '\n';
  return kOk;
}

}  // namespace

void add_synth_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<SynthCliOptions>();
  auto* app = root.add_subcommand("synth", "Synthesize KernelBench-format tasks (CSP-DAG); see docs/synth.md");
  app->add_option("--count", o->synth.count, "How many distinct tasks")->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--difficulty", o->difficulty, "Compute operators per task: K or K1-K2 (1-20)")->capture_default_str();
  app->add_option("--ops", o->ops, "Operator categories to draw from, comma-separated (default: all)");
  app->add_option("--seed", o->synth.seed, "Seed: the same options and seed give the same tasks")->capture_default_str();
  app->add_option("--size", o->size, "Size profile: cpu (references under ~50 ms on one core) or gpu (an H200 band)")
      ->check(CLI::IsMember({"cpu", "gpu"}))
      ->capture_default_str();
  app->add_option("--out", o->out, "A .jsonl suite, or a directory of .py tasks plus meta.jsonl (default: stdout)");
  app->add_option("--threads", o->synth.threads, "Threads (the output does not depend on it)")->capture_default_str();
  app->add_flag("--with-solutions", o->synth.with_solutions,
                "Add a reference Triton ModelNew and its plan (meta.solution, meta.plan) where the emitter can");
  app->add_flag("--validate", o->validate,
                "Run every task's reference in the runner (--device), and judge every solution with the engine");
  app->add_option("--device", o->runner.device, "Where --validate runs references")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app->add_option("--python", o->runner.python, "Python for the runner");
  app->add_option("--timeout", o->solution_timeout_s, "Seconds each solution may take under the engine (--validate)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_flag("--json", o->json, "Print JSON documents instead of text");

  auto* stats = app->add_subcommand("stats", "Coverage of a synthesized suite: op histogram and uniformity, pairs, sizes");
  stats->add_option("suite", o->stats_suite, "A synthesized suite (.jsonl with meta)")->required();
  stats->add_option("--ops", o->ops, "The categories it was drawn from (default: all)");
  stats->add_flag("--json", o->json, "Print one JSON document");
  commands.push_back({stats, [o]() { return run_stats(*o); }});
  commands.push_back({app, [o]() { return run_synth(*o); }});
}

}  // namespace tritium::cli
