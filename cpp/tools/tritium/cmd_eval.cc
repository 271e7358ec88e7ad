// tritium eval TASK.py CANDIDATE.py | --tasks SUITE --candidates DIR|FILE.jsonl: sandboxed verdicts.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>

#include "cli.h"
#include "tritium/exec.h"

namespace tritium::cli {
namespace {

struct EvalOptions {
  std::vector<std::string> positional;  // TASK.py CANDIDATE.py
  std::string tasks, candidates, out;
  bool json = false;
  EngineFlags engine;
};

std::string fmt_opt(const std::optional<double>& v, const char* spec = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(spec), *v) : "-";
}

void print_verdict(const Verdict& v) {
  std::string timing;
  if (v.runtime_ms)
    timing = fmt::format("  {} ms, x{} eager, x{} compile", fmt_opt(v.runtime_ms), fmt_opt(v.speedup_eager, "{:.2f}"),
                         fmt_opt(v.speedup_compile, "{:.2f}"));
  std::cout << fmt::format("{:<22} {:<40} {}{}\n", v.status, v.candidate_id, v.message, timing);
  std::cout.flush();
}

Verdict problem_verdict(const SuiteProblem& p) { return error_verdict(p.origin, p.message); }

void print_summary(const std::vector<Verdict>& verdicts, const Json& info, double seconds) {
  std::map<std::string, int> counts;
  for (const auto& v : verdicts) ++counts[v.status];
  std::cout << fmt::format("\n{:<22} {:>6}\n", "status", "count");
  for (const auto& s : verdict_statuses())
    if (counts[s]) std::cout << fmt::format("{:<22} {:>6}\n", s, counts[s]);
  int hits = 0;
  for (const auto& v : verdicts) hits += v.cache_hit;
  std::cout << fmt::format("{} candidates in {:.1f} s on {} ({} jobs, profile {}, seed {}){}\n", verdicts.size(),
                           seconds, info["device_name"].get<std::string>(), info["jobs"].get<int>(),
                           info["profile"].get<std::string>(), info["seed"].get<std::uint64_t>(),
                           hits ? fmt::format(", {} from the cache", hits) : "");
}

Result<CandidateBatch> load_batch(EvalOptions& o, Suite& suite) {
  std::string tasks = o.tasks, candidates = o.candidates;
  if (o.positional.size() == 2 && tasks.empty() && candidates.empty()) {
    tasks = o.positional[0];
    candidates = o.positional[1];
  } else if (!o.positional.empty() || tasks.empty() || candidates.empty()) {
    return Error{"pass TASK.py CANDIDATE.py, or --tasks SUITE --candidates DIR|FILE.jsonl"};
  }
  auto loaded = load_suite(tasks);
  if (!loaded) return loaded.error();
  suite = std::move(*loaded);
  if (suite.tasks.empty() && suite.problems.empty())
    return Error{fmt::format("{}: no tasks (no .py task files, or an empty .jsonl)", tasks)};
  auto batch = load_candidates(suite, candidates);
  if (batch && batch->items.empty() && batch->problems.empty())
    return Error{
        fmt::format("{}: no candidates (expected <task id>.py files, <task id>/<sample>.py, or JSONL lines "
                    "{{\"task_id\", \"code\"}})",
                    candidates)};
  return batch;
}

int run_eval(EvalOptions& o) {
  Suite suite;
  auto batch = load_batch(o, suite);
  if (!batch) return fail(kUsage, batch.error().message);
  std::ofstream out;
  if (!o.out.empty()) {
    out.open(o.out);
    if (!out) return fail(kUsage, fmt::format("cannot write {}", o.out));
  }
  const auto start = std::chrono::steady_clock::now();
  const EngineOptions engine_options = o.engine.options();
  auto engine = Engine::create(engine_options);
  if (!engine) return engine_failure(engine_options, engine.error());

  std::vector<Verdict> verdicts;
  for (const auto& p : batch->problems) verdicts.push_back(problem_verdict(p));
  Progress progress(batch->items.size());
  auto evaluated = (*engine)->evaluate(batch->items, [&](std::size_t done, std::size_t, const Verdict& v) {
    progress.clear();
    if (!o.json) print_verdict(v);
    progress.update(done, v.candidate_id);
  });
  progress.clear();
  verdicts.insert(verdicts.end(), evaluated.begin(), evaluated.end());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  Json all = Json::array();
  for (const auto& v : verdicts) {
    all.push_back(to_json(v));
    if (out) out << all.back().dump() << "\n";
  }
  const Json info = (*engine)->info();
  if (o.json) {
    print_json({{"engine", info}, {"verdicts", all}, {"seconds", seconds}});
  } else {
    for (const auto& p : batch->problems) print_verdict(problem_verdict(p));
    print_summary(verdicts, info, seconds);
  }
  for (const auto& v : verdicts)
    if (v.status == "error") return kFailures;
  for (const auto& v : verdicts)
    if (!v.correct) return kFailures;
  return kOk;
}

}  // namespace

void add_eval_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<EvalOptions>();
  auto* app =
      root.add_subcommand("eval", "Evaluate candidates in the sandboxed engine: correctness, then timing on a GPU");
  app->add_option("files", o->positional, "TASK.py CANDIDATE.py (one candidate)")->expected(0, 2);
  app->add_option("--tasks", o->tasks, "Task suite: a .py file, a directory of them, or a .jsonl suite");
  app->add_option("--candidates", o->candidates,
                  "Candidates: a directory of <task id>.py (or <task id>/<sample>.py), or a JSONL of "
                  "{\"task_id\", \"code\" | \"response\", \"id\"?, \"group\"?, \"sample\"?}");
  add_engine_flags(app, o->engine);
  app->add_option("--out", o->out, "Write the verdicts as JSONL here");
  app->add_flag("--json", o->json, "Print one JSON document instead of text");
  commands.push_back({app, [o]() -> int { return run_eval(*o); }});
}

}  // namespace tritium::cli
