// run_bench and run_distill: sample a model on a suite, evaluate every sample, then report (bench)
// or keep the verified traces as SFT data (distill). Both resume: tasks already written are
// skipped, so a crash halfway keeps what was done (docs/llm.md).
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include "tritium/metrics.h"
#include "tritium/workflow.h"

namespace tritium::workflow {
namespace {

namespace fs = std::filesystem;

// What a sampling run holds while it runs: the suite, the tasks left, the generator, the engine.
// It stays where it is made: the generator and `todo` point into its suite.
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

// The task ids a resumable file lists; first, the rows of unfinished tasks are dropped from
// `companion` (a crash between the two files' writes leaves strays there).
Result<std::set<std::string>> finished_tasks(const fs::path& ledger, const fs::path& companion) {
  auto previous = search::read_resumable_jsonl(ledger);
  if (!previous) return previous.error();
  const auto done = task_ids(*previous);
  auto rows = search::read_resumable_jsonl(companion);
  if (!rows) return rows.error();
  std::string kept;
  std::size_t strays = 0;
  for (const auto& r : *rows)
    if (r.contains("task_id") && r["task_id"].is_string() && done.count(r["task_id"].get<std::string>()))
      kept += r.dump() + "\n";
    else
      ++strays;
  if (strays == 0) return done;
  std::ofstream out(companion, std::ios::trunc);
  out << kept;
  if (!out) return Error{fmt::format("could not rewrite {}", companion.string())};
  return done;
}

// Loads the suite, skips `done` tasks, opens the generator and the engine.
Result<std::unique_ptr<SamplingRun>> start(const SamplingOptions& o, const std::set<std::string>& done,
                                           const Listener& listener) {
  if (auto e = engine_options_error(o.engine)) return Error{*e};  // before a model server starts for nothing
  auto run = std::make_unique<SamplingRun>();
  auto suite = load_suite(o.tasks);
  if (!suite) return suite.error();
  for (const auto& p : suite->problems) listener.tell(fmt::format("warning: {}: {}", p.origin, p.message));
  run->suite = std::move(*suite);
  if (run->suite.tasks.empty()) return Error{fmt::format("{}: no tasks", o.tasks)};
  for (const auto& t : run->suite.tasks)
    if (!done.count(t.id) && (o.limit == 0 || done.size() + run->todo.size() < o.limit)) run->todo.push_back(&t);
  search::GeneratorSpec spec = o.generator;
  spec.tasks = &run->suite;
  auto generator = search::open_generator(spec);
  if (!generator) return Error{generator.error().message, true};
  run->generator = std::move(*generator);
  auto engine = Engine::create(o.engine);
  if (!engine) return engine.error();
  run->engine = std::move(*engine);
  if (!done.empty()) listener.tell(fmt::format("resuming: {} tasks done, {} to go", done.size(), run->todo.size()));
  return run;
}

// Samples the tasks left, handing each task's samples to `sink`.
void sample(SamplingRun& run, const SamplingOptions& o, const Listener& listener,
            const std::function<void(const search::SampledTask&)>& sink) {
  search::sample_tasks(
      run.todo, *run.generator, *run.engine, o.sample,
      [&](const std::vector<search::SampledTask>& chunk) {
        for (const auto& s : chunk) {
          if (!s.error) {
            sink(s);
            continue;
          }
          ++run.generation_failures;
          listener.tell(fmt::format("warning: {}: no samples: {}", s.task->id, *s.error));
        }
      },
      [&](std::size_t done, std::size_t total) { listener.step(done, total, "tasks"); });
  if (run.generation_failures)
    listener.tell(
        fmt::format("{} tasks got no samples; run the same command again to retry them", run.generation_failures));
}

void append_line(std::ofstream& out, const Json& j) { out << j.dump() << '\n'; }

Json run_counts(const SamplingRun& run) {
  return {{"sampled_now", run.todo.size() - run.generation_failures}, {"tasks_failed", run.generation_failures}};
}

// Distillation's verdict on one sample: kept, or the reason it was dropped.
std::string judge(const Verdict& v, bool only_faster, std::set<std::string>& codes, const std::string& response) {
  if (!v.correct) return v.status;
  if (only_faster && !(v.speedup_eager && *v.speedup_eager > 1.0)) return "not_faster";
  if (!codes.insert(sha256_hex(response)).second) return "duplicate";
  return "kept";
}

// Totals over a distillation's whole progress file, resumed runs included.
Result<Json> distill_totals(const fs::path& progress_file) {
  auto rows = search::read_resumable_jsonl(progress_file);
  if (!rows) return rows.error();
  std::map<std::string, long> dropped;
  long kept = 0, samples = 0;
  for (const auto& r : *rows) {
    kept += r.value("kept", 0L);
    samples += r.value("samples", 0L);
    const Json why_dropped = r.value("dropped", Json::object());  // named: items() must not outlive it
    for (const auto& [why, n] : why_dropped.items()) dropped[why] += n.get<long>();
  }
  return Json{{"tasks", rows->size()}, {"samples", samples}, {"kept", kept}, {"dropped", dropped}};
}

}  // namespace

Result<SamplingOptions> sampling_options_from_json(const Json& json) {
  SamplingOptions o;
  search::GeneratorSpec& g = o.generator;
  Sampling& s = o.sample.sampling;
  Json engine;
  bool completions = false;
  std::string model_device = "auto";
  OptionReader r(json, "sampling options");
  r.read("tasks", o.tasks).read("out", o.out).read("model", g.spec).read("samples", o.sample.samples);
  r.read("limit", o.limit).read("model_name", g.client.model).read("temperature", s.temperature);
  r.read("top_p", s.top_p).read("max_tokens", s.max_tokens).read("sampling_seed", s.seed);
  r.read("concurrency", o.sample.concurrency).read("request_timeout_s", g.client.timeout_s);
  r.read("retries", g.client.max_retries).read("system_prompt", g.client.system_prompt);
  r.read("extra_body", g.client.extra_body).read("completions", completions).read("model_device", model_device);
  r.read("python", g.python).read("engine", engine).read("only_faster", o.only_faster);
  r.read("max_per_task", o.max_per_task);
  if (auto e = r.done()) return *e;
  if (o.tasks.empty() || o.out.empty() || g.spec.empty())
    return Error{"sampling options: \"tasks\", \"out\" and \"model\" are required"};
  if (o.sample.samples < 1 || o.sample.concurrency < 1)
    return Error{"sampling options: \"samples\" and \"concurrency\" must be at least 1"};
  if (!g.client.extra_body.is_object()) return Error{"sampling options: \"extra_body\" must be a JSON object"};
  g.client.chat = !completions;
  g.server_args = {"--device", model_device};
  auto engine_options = engine_options_from_json(engine);
  if (!engine_options) return engine_options.error();
  o.engine = *engine_options;
  return o;
}

Result<Json> run_bench(const SamplingOptions& o, const Listener& listener) {
  const fs::path dir(o.out), verdict_file = dir / "verdicts.jsonl", sample_file = dir / "samples.jsonl";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{fmt::format("{}: {}", o.out, ec.message())};
  auto done = finished_tasks(verdict_file, sample_file);
  if (!done) return done.error();
  auto started = start(o, *done, listener);
  if (!started) return started.error();
  SamplingRun& run = **started;
  const auto t0 = std::chrono::steady_clock::now();
  std::ofstream verdicts(verdict_file, std::ios::app), samples(sample_file, std::ios::app);
  sample(run, o, listener, [&](const search::SampledTask& s) {
    for (std::size_t k = 0; k < s.generations.size(); ++k) {
      append_line(verdicts, to_json(s.verdicts[k]));
      append_line(samples, {{"task_id", s.task->id},
                            {"sample", k},
                            {"response", s.generations[k].text},
                            {"finish_reason", s.generations[k].finish_reason}});
    }
    verdicts.flush();
    samples.flush();
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto all = load_verdicts(verdict_file);
  if (!all) return all.error();
  if (all->empty()) return Error{"no sample was generated; nothing to report", true};
  std::vector<int> ks{1};
  for (int k : {5, 10, o.sample.samples})
    if (k > 1 && k <= o.sample.samples && std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  const std::vector<RunReport> runs{{dir.filename().string(), verdict_file.string(), compute_metrics(*all, {ks})}};
  if (auto e = write_reports(dir, runs)) return *e;
  Json info = {{"model", run.generator->name()},       {"tasks", run.suite.tasks.size()},
               {"samples_per_task", o.sample.samples}, {"seconds", seconds},
               {"engine", run.engine->info()},         {"metrics", to_json(runs.front().metrics)}};
  info.update(run_counts(run));
  if (auto* client = dynamic_cast<LlmClient*>(run.generator.get())) info["client"] = to_json(client->stats());
  std::ofstream(dir / "run.json") << info.dump(2) << '\n';
  return info;
}

Result<Json> run_distill(const SamplingOptions& o, const Listener& listener) {
  const fs::path out_file(o.out), progress_file(o.out + ".progress.jsonl");
  auto done = finished_tasks(progress_file, out_file);
  if (!done) return done.error();
  auto started = start(o, *done, listener);
  if (!started) return started.error();
  SamplingRun& run = **started;
  if (o.only_faster && run.engine->info().value("device", "cpu") == "cpu")
    return Error{"only_faster needs timings, and the engine runs on the CPU: use a cuda device"};
  std::ofstream sft(out_file, std::ios::app), progress(progress_file, std::ios::app);
  sample(run, o, listener, [&](const search::SampledTask& s) {
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
    append_line(progress,
                {{"task_id", s.task->id}, {"samples", s.generations.size()}, {"kept", kept}, {"dropped", dropped}});
    progress.flush();
  });
  auto totals = distill_totals(progress_file);
  if (!totals) return totals.error();
  Json stats = {{"out", o.out}, {"teacher", run.generator->name()}};
  stats.update(*totals);
  stats.update(run_counts(run));
  return stats;
}

}  // namespace tritium::workflow
