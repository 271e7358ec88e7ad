// tritium/search.h: models in the loop (docs/llm.md, docs/search.md). Where samples come from
// (an HTTP model, a local model directory served by a child process, the synthesizer's reference
// solutions), sampling runs over a suite (bench, distill), and test-time search for a faster
// correct kernel (best-of-N, iterative refinement, launch-configuration tuning).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tritium/core.h"
#include "tritium/exec.h"
#include "tritium/llm.h"

namespace tritium::search {

/// Where samples come from: "emitter" (the reference solutions synthesized tasks carry in
/// meta.solution), an http(s) URL, or a model directory, served by a child
/// `python -m tritium.model_server` on a free loopback port for as long as the generator lives.
struct GeneratorSpec {
  std::string spec;
  ClientOptions client;                  // base_url is filled in for directories
  std::string python;                    // for a model directory; empty = find_python()
  std::vector<std::string> server_args;  // extra model_server flags (--device, --max-batch, ...)
  const Suite* tasks = nullptr;          // the emitter looks tasks up here
  double startup_timeout_s = 600;        // loading a model directory
};
Result<std::unique_ptr<Generator>> open_generator(const GeneratorSpec& spec);

// ---- Sampling runs: bench and distill --------------------------------------------------------------

/// One task's samples and their verdicts, or why it got none.
struct SampledTask {
  const Task* task = nullptr;
  std::vector<Generation> generations;
  std::vector<Verdict> verdicts;     // one per generation, same order
  std::optional<std::string> error;  // the generator failed for this task (it stays undone)
};

struct SampleOptions {
  int samples = 1;        // per task
  Sampling sampling;      // n is set to `samples`
  int concurrency = 4;    // prompts in flight
  std::size_t chunk = 0;  // tasks generated, then evaluated, per step; 0 = 2 x concurrency
};

/// Samples every task and evaluates the samples, a chunk of tasks at a time, and hands each
/// chunk to `sink` before the next starts, so a crash loses at most one chunk. `progress(done,
/// total)` counts tasks.
void sample_tasks(const std::vector<const Task*>& tasks, Generator& generator, Engine& engine,
                  const SampleOptions& options, const std::function<void(const std::vector<SampledTask>&)>& sink,
                  const std::function<void(std::size_t, std::size_t)>& progress = {});

/// The lines of a JSONL file that parse as JSON objects; a torn last line (a crash mid-write) is
/// dropped and the file rewritten without it, so appending can resume. Missing file: none.
Result<std::vector<Json>> read_resumable_jsonl(const std::filesystem::path& path);

// ---- Test-time search --------------------------------------------------------------------------

struct SearchOptions {
  std::optional<std::string> start_code;  // a kernel of one's own, evaluated first ("given")
  int budget = 8;                         // candidates generated for best-of-N (0: none)
  int rounds = 0;                         // refinement rounds after best-of-N (each asks `refine_samples`)
  int refine_samples = 2;
  int tune_budget = 16;      // launch-configuration variants of the best kernel; 0 = no tuning
  int fragment_budget = 16;  // emitter only: fragment partitions of the task's traced DAG; 0 = none
  int confirm_rounds = 3;    // timed reruns, side by side, of the best-of-1 and the best; 0 = none
  int max_fragment = 5;      // compute operators per fragment (DRTriton's bound)
  std::string python;        // the tracer's interpreter; empty = find_python()
  Sampling sampling;
  int concurrency = 4;
};

/// One evaluated candidate of a search.
struct Tried {
  std::string stage;  // given, best_of_n, refine, fragments, tune
  std::string code;
  Verdict verdict;
  std::string note;  // what was changed (tuning) or asked (refinement)
};

/// The best-of-1 and the search's best timed again side by side: the fastest of many noisy timings
/// is flattered by its noise (the winner's curse), so these medians decide, and give the speedup.
struct Confirmation {
  std::size_t first = 0, best = 0;        // indices into tried; `best` is the one before the reruns
  std::vector<double> first_ms, best_ms;  // each correct rerun's runtime
  bool best_always_correct = true;
  bool best_holds() const;  // correct in every rerun and faster by the medians
  double speedup() const;   // median(first_ms) / median(best_ms)
};

struct SearchResult {
  std::vector<Tried> tried;                  // in order
  std::optional<std::size_t> best;           // index into tried of the fastest correct candidate
  std::optional<std::size_t> first;          // the best-of-1: the given kernel or the first correct sample, if any
  bool timed = false;                        // verdicts carry runtimes (GPU); on the CPU "best" is the first correct
  std::optional<Confirmation> confirmation;  // when timed and the best is not the first
};

/// Searches for the fastest correct kernel for `task`. Never picks a candidate whose verdict is
/// not `correct`. `log` receives one JSON line per evaluated candidate as it happens. Without a
/// generator only the given kernel is evaluated and tuned. With the emitter as the generator, the
/// task's traced DAG is emitted once per fragment partition too (stage "fragments").
SearchResult search_task(const Task& task, Generator* generator, Engine& engine, const SearchOptions& options,
                         const std::function<void(const Json&)>& log = {});

/// A launch-configuration knob of a kernel's source: an integer literal passed as num_warps,
/// num_stages or a BLOCK* argument at a kernel launch, or assigned to a BLOCK* name; or a launch
/// without num_warps / num_stages, where setting one inserts the argument. A block size passed at a
/// launch whose grid repeats the same literal (`k[(cdiv(n, 1024),)](..., BLOCK=1024)`) changes
/// together with it, so the grid keeps covering the data.
struct Knob {
  std::string name;
  std::size_t offset = 0, length = 0;  // the literal's bytes in the source (length 0: an insertion)
  long value = 0;                      // the current value (Triton's default when absent)
  std::string prefix;                  // written before a new value (", num_warps=" for an insertion)
  std::vector<std::size_t> tied;       // offsets of the same literal in the launch's grid
  std::string with(long v) const { return prefix + std::to_string(v); }
  /// `code` (the source the knob was found in) with the knob, and what is tied to it, set to `v`.
  std::string apply(std::string code, long v) const;
};
std::vector<Knob> find_knobs(const std::string& code);
/// The values worth trying for a knob (powers of two near its value, in its legal range).
std::vector<long> knob_values(const Knob& knob);

/// Partitions of `ops` compute operators (in topological order) into contiguous fragments of at
/// most `most` each, at most `cap` of them: the most fused (greedy, fragments of `most`) first,
/// then the fully split, then the rest by fragment count. Each is the fragments' sizes.
std::vector<std::vector<int>> fragment_partitions(int ops, int most, std::size_t cap);

/// The fragment stage's candidates for `task`: (code, note) per partition, the emitter's default
/// (no barriers) first when `with_default`. An Error says why there are none (the task does not
/// trace, or an operator has no Triton form).
using Candidates = std::vector<std::pair<std::string, std::string>>;
Result<Candidates> fragment_candidates(const Task& task, const SearchOptions& options, bool with_default);

Json to_json(const SearchResult& result);

}  // namespace tritium::search
