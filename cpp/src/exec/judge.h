// Private to exec: turning what a candidate's worker reported, and what its trusted comparer
// found of its outputs (compare.py), into a verdict. The candidate's process only ever reports
// observations; its outputs are judged by the comparer, which it cannot reach.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "runner.h"
#include "tritium/exec.h"

namespace tritium::exec {

/// One task's reference for one engine seed: its plan of trials (reference.py wrote the
/// parameters into `dir`).
struct Reference {
  bool ok = false;
  std::string error;  // why the task's reference failed, naming the task
  // The runner failed, not the task (a full disk, no file descriptors left): computed again when
  // asked next, where a task's own failure is kept for every candidate of the task.
  bool transient = false;
  Json body;  // the reference op's answer: init_inputs, params, trials, spots (timing apart)
  std::filesystem::path dir;
  std::uintmax_t bytes = 0;  // its files' size on disk
};

/// Fills `verdict` (status, message, findings, errors, launches, timing) from the candidate
/// worker's reply and the comparer's, given the reference's plan (its answer: trials, spots).
void judge(const Reply& reply, const Reply& comparison, const Json& plan, Verdict& verdict);

/// Fills the reference's times and the speedups of a timed verdict from the reference's timing
/// (time_reference's answer, or {"error": why}); does nothing to an untimed verdict. The engine
/// calls it when the timing lands, which may be after the candidate was judged.
void apply_reference_timing(const Json& timing, Verdict& verdict);

/// The rank of a status in DESIGN.md's order (smaller fails earlier); unknown ones rank last.
int status_rank(std::string_view status);

}  // namespace tritium::exec
