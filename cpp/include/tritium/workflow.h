// tritium/workflow.h: the workflows a user runs, one library call each. Options come as a struct
// or as JSON (`*_options_from_json`: what Python and configs pass; an unknown key is an error),
// what happens on the way is told to a Listener, and the outcome comes back as a JSON document.
// The CLI (flags -> call -> print) and the bindings (JSON -> call -> JSON) are faces of these calls.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tritium/core.h"
#include "tritium/exec.h"
#include "tritium/search.h"
#include "tritium/synth.h"

namespace tritium::workflow {

/// What a workflow tells as it goes, both optional: `progress(done, total, label)` for a bar, and
/// `note(line)` for a line a person reads (a failed task, a skipped line, a resumed run).
struct Listener {
  std::function<void(std::size_t, std::size_t, const std::string&)> progress;
  std::function<void(const std::string&)> note;
  void step(std::size_t done, std::size_t total, const std::string& label) const {
    if (progress) progress(done, total, label);
  }
  void tell(const std::string& line) const {
    if (note) note(line);
  }
};

// ---- Synthesized suites (`tritium synth`, tritium.make_suite) -----------------------------------

struct SuiteOptions {
  synth::SynthOptions synth;
  std::string out;                  // a .jsonl suite, or a directory of .py tasks plus meta.jsonl; "": not written
  bool validate = false;            // run every reference; then judge every solution with the engine
  std::string device = "cpu";       // where validation runs: cpu or cuda
  std::string python;               // the runners' interpreter; "": find_python()
  double solution_timeout_s = 120;  // per solution under the engine (GPU-size tasks move gigabytes)
};
/// SynthOptions' keys (synth_options_from_json) plus out, validate, device, python, solution_timeout_s.
Result<SuiteOptions> suite_options_from_json(const Json& json);

struct SuiteRun {
  std::vector<Task> tasks;  // as written: validation drops the ill-conditioned
  // {tasks, synth_seconds, out?; validated: validated, failed, ill_conditioned, slowest_forward_ms,
  //  device, seconds; with solutions: solutions {count, correct, of_tasks, failures, device}}
  Json report;
  bool ok = true;  // every reference ran and every solution was judged correct
};
/// Synthesizes, validates when asked, writes `out` when given. Errors: bad options, a runner that
/// cannot start (`environment`), a file that cannot be written.
Result<SuiteRun> make_suite(const SuiteOptions& options, const Listener& listener = {});

// ---- SFT data from verified traces (`tritium data sft`, tritium.sft_data) -----------------------

struct SftDataOptions {
  std::string tasks;      // the suite; its tasks carry meta.solution and meta.plan unless `responses`
  std::string responses;  // JSONL of {"task_id" | "task", "response"} to verify instead
  std::string out;        // the SFT JSONL to write
  bool evaluate = true;   // judge with the engine; false: the static verifier alone
  EngineOptions engine;
};
/// {tasks, out, responses?, evaluate?, engine?: EngineOptions' JSON}.
Result<SftDataOptions> sft_data_options_from_json(const Json& json);
/// Writes `out`; returns {out, candidates, kept, dropped: {reason: n}, evaluated}.
Result<Json> build_sft_data(const SftDataOptions& options, const Listener& listener = {});

// ---- Sampling runs (`tritium bench`, `tritium distill`; tritium.bench, tritium.distill) ----------

struct SamplingOptions {
  std::string tasks;                // the suite
  std::string out;                  // bench: a directory; distill: the SFT JSONL to append to
  std::size_t limit = 0;            // at most this many tasks (0: all)
  search::GeneratorSpec generator;  // its `tasks` is set by the run (the emitter looks tasks up)
  search::SampleOptions sample;     // samples per task, sampling, concurrency
  EngineOptions engine;
  bool only_faster = false;  // distill: keep only samples faster than eager (needs timings)
  int max_per_task = 0;      // distill: keep at most this many traces per task (0: all)
};
/// {tasks, out, model (URL, model directory or "emitter"), samples?, limit?, model_name?, temperature?,
/// top_p?, max_tokens?, sampling_seed?, concurrency?, request_timeout_s?, retries?, system_prompt?,
/// extra_body?, completions?, model_device?, engine?, only_faster?, max_per_task?}.
Result<SamplingOptions> sampling_options_from_json(const Json& json);

/// Samples every task not yet in OUT/verdicts.jsonl, evaluates, appends verdicts and samples, then
/// writes the reports and OUT/run.json, whose document it returns ({model, tasks, samples_per_task,
/// sampled_now, tasks_failed, seconds, engine, metrics, client?}). A task whose generation failed stays
/// undone (tasks_failed), so running the same call again retries it.
Result<Json> run_bench(const SamplingOptions& options, const Listener& listener = {});

/// Samples every task not yet in OUT.progress.jsonl and appends to OUT the samples that verify and
/// evaluate correct (no duplicates; with only_faster, faster than eager); returns {out, teacher,
/// tasks, samples, kept, dropped, tasks_failed, sampled_now} over the whole file, resumed runs included.
Result<Json> run_distill(const SamplingOptions& options, const Listener& listener = {});

}  // namespace tritium::workflow
