// tritium bench and tritium distill: sample a model on a suite, evaluate every sample, then report
// (bench) or keep the verified traces as SFT data (distill). Both resume: tasks already written
// are skipped, so a crash halfway keeps what was done (docs/llm.md).
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli.h"
#include "tritium/metrics.h"

namespace tritium::cli {
namespace {

namespace fs = std::filesystem;

struct SampleCliOptions {
  std::string tasks, out;
  int samples = 1;
  std::size_t limit = 0;
  bool only_faster = false, json = false;
  int max_per_task = 0;
  ModelFlags model;
  EngineFlags engine;
};

// What a sampling command holds while it runs: the suite, the tasks left, the generator, the engine.
struct SamplingRun {
  Suite suite;
  std::vector<const Task*> todo;
  std::unique_ptr<Generator> generator;
  std::unique_ptr<Engine> engine;
  std::size_t generation_failures = 0;
};

std::set<std::string> task_ids(const std::vector<Json>& rows) {
  std::set<std::string> ids;
  for (const auto& r : rows)
    if (r.contains("task_id") && r["task_id"].is_string()) ids.insert(r["task_id"].get<std::string>());
  return ids;
}

// Keeps only the rows of finished tasks (a crash between two files' writes leaves strays).
std::optional<Error> keep_rows_of(const fs::path& path, const std::set<std::string>& done) {
  auto rows = search::read_resumable_jsonl(path);
  if (!rows) return rows.error();
  std::string kept;
  std::size_t strays = 0;
  for (const auto& r : *rows)
    if (r.contains("task_id") && r["task_id"].is_string() && done.count(r["task_id"].get<std::string>()))
      kept += r.dump() + "\n";
    else
      ++strays;
  if (strays == 0) return std::nullopt;
  std::ofstream out(path, std::ios::trunc);
  out << kept;
  return out ? std::nullopt : std::optional<Error>(Error{fmt::format("could not rewrite {}", path.string())});
}

// Loads the suite, skips `done` tasks, opens the generator and the engine. Errors are CLI exits.
// The run stays where it is made: the generator and `todo` point into its suite.
std::variant<std::unique_ptr<SamplingRun>, int> start(const SampleCliOptions& o, const std::set<std::string>& done) {
  auto owned = std::make_unique<SamplingRun>();
  SamplingRun& run = *owned;
  auto suite = load_suite(o.tasks);
  if (!suite) return fail(kUsage, suite.error().message);
  for (const auto& p : suite->problems) std::cerr << fmt::format("tritium: warning: {}: {}\n", p.origin, p.message);
  run.suite = std::move(*suite);
  for (const auto& t : run.suite.tasks)
    if (!done.count(t.id) && (o.limit == 0 || done.size() + run.todo.size() < o.limit)) run.todo.push_back(&t);
  if (run.suite.tasks.empty()) return fail(kUsage, fmt::format("{}: no tasks", o.tasks));
  auto generator = search::open_generator(o.model.resolved(&run.suite));
  if (!generator) return fail(kEnvironment, generator.error().message);
  run.generator = std::move(*generator);
  const EngineOptions engine_options = o.engine.options();
  auto engine = Engine::create(engine_options);
  if (!engine) return engine_failure(engine_options, engine.error());
  run.engine = std::move(*engine);
  if (!done.empty()) std::cerr << fmt::format("tritium: resuming: {} tasks done, {} to go\n", done.size(), run.todo.size());
  return owned;
}

// Samples the tasks left, handing each chunk to `sink`, with progress on stderr.
void sample(SamplingRun& run, const SampleCliOptions& o, const std::function<void(const search::SampledTask&)>& sink) {
  search::SampleOptions options{o.samples, o.model.sampling, o.model.concurrency};
  Progress progress(run.todo.size());
  search::sample_tasks(run.todo, *run.generator, *run.engine, options, [&](const std::vector<search::SampledTask>& chunk) {
    for (const auto& s : chunk) {
      if (s.error) {
        ++run.generation_failures;
        std::cerr << fmt::format("tritium: warning: {}: no samples: {}\n", s.task->id, *s.error);
        continue;
      }
      sink(s);
    }
  }, [&](std::size_t done, std::size_t) { progress.update(done, "tasks"); });
  progress.clear();
}

void append_line(std::ofstream& out, const Json& j) { out << j.dump() << '\n'; }

int finish_code(const SamplingRun& run) {
  if (run.generation_failures == 0) return kOk;
  std::cerr << fmt::format("tritium: {} tasks got no samples; run the same command again to retry them\n",
                           run.generation_failures);
  return run.generation_failures == run.todo.size() ? kEnvironment : kFailures;
}

int run_bench(const SampleCliOptions& o) {
  const fs::path dir(o.out), verdict_file = dir / "verdicts.jsonl", sample_file = dir / "samples.jsonl";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(kUsage, fmt::format("--out {}: {}", o.out, ec.message()));
  auto previous = search::read_resumable_jsonl(verdict_file);
  if (!previous) return fail(kUsage, previous.error().message);
  const auto done = task_ids(*previous);
  if (auto e = keep_rows_of(sample_file, done)) return fail(kUsage, e->message);
  auto started = start(o, done);
  if (auto* code = std::get_if<int>(&started)) return *code;
  auto& run = *std::get<std::unique_ptr<SamplingRun>>(started);
  const auto t0 = std::chrono::steady_clock::now();
  std::ofstream verdicts(verdict_file, std::ios::app), samples(sample_file, std::ios::app);
  sample(run, o, [&](const search::SampledTask& s) {
    for (std::size_t k = 0; k < s.generations.size(); ++k) {
      append_line(verdicts, to_json(s.verdicts[k]));
      append_line(samples, {{"task_id", s.task->id}, {"sample", k}, {"response", s.generations[k].text},
                            {"finish_reason", s.generations[k].finish_reason}});
    }
    verdicts.flush();
    samples.flush();
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto all = load_verdicts(verdict_file);
  if (!all) return fail(kUsage, all.error().message);
  if (all->empty()) return fail(kEnvironment, "no sample was generated; nothing to report");
  std::vector<int> ks{1};
  for (int k : {5, 10, o.samples})
    if (k > 1 && k <= o.samples && std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  const std::vector<RunReport> runs{{dir.filename().string(), verdict_file.string(), compute_metrics(*all, {ks})}};
  if (auto e = write_reports(dir, runs)) return fail(kUsage, e->message);
  Json info = {{"model", run.generator->name()}, {"tasks", run.suite.tasks.size()}, {"samples_per_task", o.samples},
               {"sampled_now", run.todo.size() - run.generation_failures}, {"seconds", seconds},
               {"engine", run.engine->info()}, {"metrics", to_json(runs.front().metrics)}};
  if (auto* client = dynamic_cast<LlmClient*>(run.generator.get())) info["client"] = to_json(client->stats());
  std::ofstream(dir / "run.json") << info.dump(2) << '\n';
  if (o.json) {
    print_json(info);
  } else {
    const Summary& s = runs.front().metrics.overall;
    std::cout << fmt::format("{} samples over {} tasks from {}\n", s.samples, s.tasks.size(), run.generator->name());
    for (const auto& p : s.pass)
      std::cout << fmt::format("  pass@{:<3} {}\n", p.k, p.value ? fmt::format("{:.1f}%", 100 * *p.value) : "-");
    for (const auto& [stage, n] : s.stages) std::cout << fmt::format("  {:<16} {}\n", stage, n);
    std::cout << fmt::format("wrote {0}/verdicts.jsonl, samples.jsonl, run.json, report.md, report.json, report.html\n",
                             dir.string());
  }
  return finish_code(run);
}

// Distillation's verdict on one sample: kept, or the reason it was dropped.
std::string judge(const Verdict& v, bool only_faster, std::set<std::string>& codes, const std::string& response) {
  if (!v.correct) return v.status;
  if (only_faster && !(v.speedup_eager && *v.speedup_eager > 1.0)) return "not_faster";
  if (!codes.insert(sha256_hex(response)).second) return "duplicate";
  return "kept";
}

int run_distill(const SampleCliOptions& o) {
  const fs::path out_file(o.out), progress_file(o.out + ".progress.jsonl");
  auto previous = search::read_resumable_jsonl(progress_file);
  if (!previous) return fail(kUsage, previous.error().message);
  const auto done = task_ids(*previous);
  if (auto e = keep_rows_of(out_file, done)) return fail(kUsage, e->message);
  auto started = start(o, done);
  if (auto* code = std::get_if<int>(&started)) return *code;
  auto& run = *std::get<std::unique_ptr<SamplingRun>>(started);
  if (o.only_faster && run.engine->info().value("device", "cpu") == "cpu")
    return fail(kUsage, "--only-faster needs timings, and the engine runs on the CPU: use --device cuda");
  std::ofstream sft(out_file, std::ios::app), progress(progress_file, std::ios::app);
  sample(run, o, [&](const search::SampledTask& s) {
    std::map<std::string, int> dropped;
    std::set<std::string> codes;
    int kept = 0;
    for (std::size_t k = 0; k < s.generations.size(); ++k) {
      std::string why = judge(s.verdicts[k], o.only_faster, codes, s.generations[k].text);
      if (why == "kept" && o.max_per_task > 0 && kept >= o.max_per_task) why = "over_max_per_task";
      if (why != "kept") {
        ++dropped[why];
        continue;
      }
      ++kept;
      append_line(sft, sft_example(*s.task, s.generations[k].text));
    }
    sft.flush();  // the traces first: a task in the progress file has all its traces on disk
    append_line(progress, {{"task_id", s.task->id}, {"samples", s.generations.size()}, {"kept", kept}, {"dropped", dropped}});
    progress.flush();
  });
  // Totals over the whole file, resumed runs included.
  auto rows = search::read_resumable_jsonl(progress_file);
  if (!rows) return fail(kUsage, rows.error().message);
  std::map<std::string, long> dropped;
  long kept = 0, samples = 0;
  for (const auto& r : *rows) {
    kept += r.value("kept", 0L);
    samples += r.value("samples", 0L);
    const Json why_dropped = r.value("dropped", Json::object());
    for (const auto& [why, n] : why_dropped.items()) dropped[why] += n.get<long>();
  }
  const Json stats = {{"out", o.out}, {"teacher", run.generator->name()}, {"tasks", rows->size()}, {"samples", samples},
                      {"kept", kept}, {"dropped", dropped}};
  if (o.json) {
    print_json(stats);
  } else {
    std::cout << fmt::format("{} of {} samples kept in {} ({} tasks)\n", kept, samples, o.out, rows->size());
    for (const auto& [why, n] : dropped) std::cout << fmt::format("  dropped {:>5}  {}\n", n, why);
  }
  return finish_code(run);
}

void add_sampling_flags(CLI::App* app, SampleCliOptions& o) {
  app->add_option("--tasks", o.tasks, "Task suite: a .py, a directory (a KernelBench checkout's level1/ works as "
                                      "it is) or a .jsonl")->required();
  app->add_option("--samples", o.samples, "Samples per task")->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--limit", o.limit, "At most this many tasks (0: all)");
  app->add_flag("--json", o.json, "Print the summary as JSON");
  add_engine_flags(app, o.engine);
}

}  // namespace

void add_bench_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<SampleCliOptions>();
  auto* app = root.add_subcommand("bench", "Sample a model on a suite, evaluate, report pass@k, fast_p and the status "
                                           "breakdown (resumes an interrupted run in the same --out)");
  add_sampling_flags(app, *o);
  add_model_flags(app, o->model, "--model");
  app->add_option("--out", o->out, "Directory for verdicts.jsonl, samples.jsonl, run.json and the reports")->required();
  commands.push_back({app, [o] { return run_bench(*o); }});
}

void add_distill_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<SampleCliOptions>();
  o->samples = 5;
  auto* app = root.add_subcommand("distill", "SFT data from a teacher: keep the samples that verify and evaluate "
                                             "correct (resumes from OUT.progress.jsonl)");
  add_sampling_flags(app, *o);
  add_model_flags(app, o->model, "--teacher");
  app->add_option("--out", o->out, "SFT JSONL to append to")->required();
  app->add_flag("--only-faster", o->only_faster, "Keep only samples faster than PyTorch eager (needs a GPU)");
  app->add_option("--max-per-task", o->max_per_task, "Keep at most this many traces per task (0: all)");
  commands.push_back({app, [o] { return run_distill(*o); }});
}

}  // namespace tritium::cli
