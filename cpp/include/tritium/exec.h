// tritium/exec.h: running Python work in runner processes, away from the caller.
//
// The C++ side never imports torch. It starts `python -m tritium.runner`, a warm process that has
// imported torch and forks one worker per request, and talks to it over one socketpair (fd 3) with
// length-prefixed JSON frames (never stdout: what a task prints cannot break the protocol). The
// parent enforces timeouts by killing the runner's whole process group; a crash, hang or
// `sys.exit` in a task costs that task a failed result, never the caller or the other tasks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tritium/core.h"
#include "tritium/verdict.h"
#include "tritium/verify.h"

namespace tritium {

/// How to start runner processes.
struct RunnerOptions {
  std::string python;              // interpreter; empty = discover (see find_python)
  std::string device = "cpu";      // "cpu" or "cuda"
  double timeout_s = 60;           // per task, from request to answer
  unsigned seed = 0;               // torch.manual_seed before building the model and the inputs
  std::string role = "reference";  // "reference" runs task code only, "candidate" candidates only,
                                   // "comparer" compares one slot's outputs, in process
  int threads = 0;                 // torch CPU threads per worker (0: torch's default)
  bool warm_compile = false;       // a reference runner imports Inductor before its first request
  bool light_first = false;        // a reference runner answers device_info and sandbox_probe before it
                                   // imports its role's modules (an engine's first: its creation waits)
};

/// The environment runners get: a short allowlist of the caller's (PATH, locale, CUDA and Triton
/// settings, the Python path), nothing else, so secrets in the caller's environment stay there.
std::vector<std::string> scrubbed_environment();

/// The interpreter that runs the runner: $TRITIUM_PYTHON, else the python3 next to this program
/// (a virtual environment's bin/), else python3 on PATH.
std::string find_python();

/// Shape and dtype of one tensor, e.g. float32[16, 1024].
struct TensorInfo {
  std::vector<long long> shape;
  std::string dtype;
};

/// The outcome of running one task's reference: Model(*get_init_inputs())(*get_inputs()).
struct TaskCheck {
  std::string task_id;
  std::string origin;
  bool ok = false;
  // On failure: the stage that failed (load, init, inputs, forward, output, crash, timeout,
  // runner) and
  // a one-line reason naming the file, and the line where known.
  std::string stage;
  std::string error;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  double init_ms = 0;       // building the model
  double forward_ms = 0;    // median forward time (CPU wall clock or CUDA-synchronised)
  double wall_ms = 0;       // request to answer, as the parent saw it
  std::string output_tail;  // the last lines the task printed (stdout and stderr)
  // Why a trivial answer could pass this task (constant or ~0 output, an output equal to an
  // input) under the engine's input distributions: the task linter's findings.
  std::vector<std::string> warnings;
  // Its float32 outputs stray from float64's on its own inputs (also among the warnings): a
  // kernel that sums in another order than PyTorch misses the tolerance by chance.
  bool ill_conditioned = false;
};

/// Called after each task with (index, total, result), for progress and streaming output.
using CheckProgress = std::function<void(std::size_t, std::size_t, const TaskCheck&)>;

/// A whole suite's check: a result per task, plus the items that could not even be loaded.
struct SuiteCheck {
  std::string suite;
  std::string device;
  std::vector<TaskCheck> tasks;
  std::vector<SuiteProblem> problems;
  double seconds = 0;
  std::size_t failed() const;
  std::size_t total() const { return tasks.size() + problems.size(); }
};

/// Runs every task's reference in runner processes, in suite order. Fails as a whole only when
/// the runner cannot start at all (no interpreter, torch missing): the error says how to fix it.
Result<SuiteCheck> check_suite(const Suite& suite, const RunnerOptions& options, const CheckProgress& progress = {});

/// The operator DAG of a task, traced in a reference runner (python/tritium/runner/trace.py;
/// docs/search.md): the tracer's JSON, which lists what does not map onto the synth catalog. An
/// Error when no runner starts or the task does not even run.
Result<Json> trace_task(const Task& task, const RunnerOptions& options);

std::string to_string(const TensorInfo& info);  // "float32[16, 1024]"
Json to_json(const TensorInfo& info);
Json to_json(const TaskCheck& check);
Json to_json(const SuiteCheck& check);  // {suite, device, tasks, problems, summary}

// ---- The evaluation engine ----------------------------------------------------------------------

/// How the engine evaluates (docs/engine.md).
struct EngineOptions {
  std::string python;                   // interpreter for the runners; empty = find_python()
  std::string device = "auto";          // "cpu", "cuda", "cuda:N", or "auto" (cuda when torch sees one)
  std::string profile = "kernelbench";  // tolerance profile: kernelbench, strict, legacy
  int trials = 5;                       // checked trials (at least 5), plus a batch-size variant
  int jobs = 0;                         // candidate workers; 0 = one per core (CPU), min(cores, 8) on a GPU
  double timeout_s = 120;               // per candidate, from load to the last timed call
  std::optional<std::uint64_t> seed;    // unset: drawn afresh for each engine
  bool static_check = true;             // run the static verifier first and stop at its verdict
  bool timing = true;                   // on a GPU: time the candidate and the references
  double timer_gather_s = 1.5;          // a timer ready to time waits up to this long for others to
                                        // time after the same drain of the GPU's sharers (timing.py)
  bool fork_comparers = false;          // a comparer process (and CUDA context) for each job, instead of
                                        // one per slot serving its jobs in turn (the comparison baseline)
  bool lazy_reference_timing = false;   // time a task's references only once a candidate of it is
                                        // correct (RL batches: most tasks get none); otherwise as
                                        // soon as its outputs exist, beside its candidates' checks
  std::string cache;                    // SQLite verdict cache file; empty = none
  std::string work_dir;                 // empty = a fresh temporary directory, removed afterwards
  double memory_gb = 0;                 // per candidate worker, beyond the runtime (CPU only); 0 = auto:
                                        // 60% of physical memory shared among the jobs
  double device_memory_gb = 0;          // what the jobs, references and timings in flight may reserve at
                                        // once, per GPU (the host's memory on the CPU); 0 = 90% of the
                                        // GPU's free memory when the engine starts (70% of physical memory)
  double reference_cache_gb = 0;        // disk for the reference files of tasks no candidate is using at
                                        // the moment (least recently used go first); 0 = half the free space
  bool keep_files = false;              // keep each candidate's directory (debugging)
  bool unsafe_sandbox = false;          // run candidates even where the sandbox cannot be established
                                        // (Engine::create refuses otherwise); every verdict says `unsafe`
};

/// Why `device` names no device the engine knows ("cpu", "cuda", "cuda:N", "auto"), or nothing when it does.
std::optional<std::string> device_error(std::string_view device);

/// Why these options cannot make an engine whatever the machine (a value the user gave is out of
/// range or unknown), or nothing. Engine::create checks it first.
std::optional<std::string> engine_options_error(const EngineOptions& options);

/// EngineOptions from a JSON object of its fields by name (absent keys default): the face of the
/// bindings, configs and workflows. An unknown key, a wrong type or a bad value is an Error naming it.
Result<EngineOptions> engine_options_from_json(const Json& json);
Json to_json(const EngineOptions& options);

/// One candidate to evaluate against one task.
struct EvalItem {
  std::string id;  // names the candidate in verdicts and messages
  Task task;
  std::string code;  // candidate source, or a raw LLM response when is_response
  bool is_response = false;
  Json meta = Json::object();  // carried into the verdict unchanged (group, sample, ...)
  bool rerun = false;          // judge and time it again even when the verdict cache holds it
};

/// Candidates to evaluate, matched to their tasks, plus the items that could not be used.
struct CandidateBatch {
  std::vector<EvalItem> items;
  std::vector<SuiteProblem> problems;  // each becomes an "error" verdict, the rest go on
};

/// Loads candidates for `tasks` from a directory of .py files named like the task ids
/// (`<id>.py`, or `<id>/<sample>.py` for several per task), a single .py file (with exactly one
/// task), or a JSONL file of {"task_id", "code" | "response", "id"?, "group"?, "sample"?}.
Result<CandidateBatch> load_candidates(const Suite& tasks, const std::filesystem::path& path);

/// One item of a batch from JSON: {"code" | "response", "task" (source) | "task_id" (in `tasks`),
/// "id"?, "group"?, "sample"?}; `where` names it in the error.
Result<EvalItem> eval_item_from_json(const Json& json, const Suite& tasks, const std::string& where);

/// Called as verdicts complete (in completion order): (done, total, verdict).
using EvalProgress = std::function<void(std::size_t, std::size_t, const Verdict&)>;

/// Sandboxed, parallel evaluation of candidates (docs/engine.md). Create once, evaluate many
/// batches: runners stay warm and task references are computed once per engine.
class Engine {
 public:
  /// Starts the trusted runner and resolves the device; the error says how to fix the set-up, and
  /// is marked `environment` unless the options themselves are wrong (engine_options_error).
  static Result<std::unique_ptr<Engine>> create(EngineOptions options);
  ~Engine();

  /// One verdict per item, in item order. Never fails as a whole: a bad item gets its verdict.
  std::vector<Verdict> evaluate(const std::vector<EvalItem>& items, const EvalProgress& progress = {});
  /// Device, seed, jobs, versions, profile: what a report needs to say how verdicts were made.
  Json info() const;

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Evaluates JSON batch items (see eval_item_from_json; `tasks` resolves "task_id"). An item that
/// cannot be used gets an "error" verdict in its place; the verdicts keep the items' order.
/// `progress` hears of the usable items' verdicts as Engine::evaluate's does.
std::vector<Verdict> evaluate_items(Engine& engine, const Json& items, const Suite& tasks = {},
                                    const EvalProgress& progress = {});

}  // namespace tritium
