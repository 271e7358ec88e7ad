// tritium/verdict.h: the engine's judgement of one candidate (DESIGN.md, Verdict) and its JSON.
//
// A module of its own, below the engine: rewards, metrics and reports read verdicts without
// linking the engine that makes them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tritium/core.h"
#include "tritium/verify.h"

namespace tritium {

/// The engine's judgement of one candidate (DESIGN.md, Verdict). Timing fields are null on the CPU,
/// where `timing_note` says so, and whenever the candidate is not correct.
struct Verdict {
  std::string candidate_id, task_id;
  std::optional<int> level;  // the task's KernelBench level, when it has one
  std::string status;        // invalid_syntax ... correct, or "error" when the engine could not judge
  std::string message;       // one line: why this status
  std::vector<Finding> findings;
  bool correct = false;
  std::optional<double> max_abs_err, max_rel_err;
  std::optional<double> runtime_ms, ref_eager_ms, ref_compile_ms, speedup_eager, speedup_compile;
  std::optional<double> coverage;  // share of the candidate's CUDA time in its own kernels
  Json runtime_stats;              // {n, median_ms, min_ms, p25_ms, p75_ms, max_ms, std_ms, ...} or null
  std::string timing_note;
  // The candidate's timing or its eager reference's was host-bound (the GPU waited for the host's
  // launches in most calls): its runtime moves with the host's load, so its speedups are noise
  // that rewards and search do not count (docs/engine.md, "Timing floor").
  bool below_timing_floor = false;
  bool compile_below_timing_floor = false;  // the same of the torch.compile reference: speedup_compile is noise
  int triton_launches = 0;
  std::vector<std::string> kernels;
  std::string device, profile;
  int trials = 0;
  bool interpreter_limit = false;  // failed on a known limit of Triton's CPU interpreter
  bool unsafe = false;             // judged by an engine whose sandbox could not be established
  std::string stderr_tail;
  bool cache_hit = false;
  double eval_ms = 0;
  Json phases_ms;  // the runner's time per step {load, checked, lock_wait, timed, coverage}, or null
  Json sandbox, meta;
};

/// The verdict of an item the engine could not judge: status "error" and why.
Verdict error_verdict(const std::string& candidate_id, const std::string& message);

/// Statuses from the first failing stage to `correct` (DESIGN.md), then "error".
const std::vector<std::string>& verdict_statuses();

Json to_json(const Verdict& verdict);
Verdict verdict_from_json(const Json& json);  // the inverse of to_json; missing fields default

}  // namespace tritium
