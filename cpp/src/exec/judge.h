// Private to exec: turning what a candidate's worker reported, and the files it wrote, into a
// verdict. Everything that decides correctness happens here, in the engine, on files: the
// candidate's process only ever reports observations.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "runner.h"
#include "tritium/exec.h"

namespace tritium::exec {

/// One task's reference for one engine seed (reference.py wrote its files into `dir`).
struct Reference {
  bool ok = false;
  std::string error;  // why the task's reference failed, naming the task
  Json body;          // the reference op's answer: init_inputs, params, trials, spots (timing apart)
  std::filesystem::path dir;
  std::uintmax_t bytes = 0;  // its files' size on disk
};

/// Fills `verdict` (status, message, findings, errors, launches, timing) from the candidate
/// worker's reply and the tensor files in `job_dir`.
void judge(const Reply& reply, const Reference& reference, const std::filesystem::path& job_dir,
           std::string_view profile, Verdict& verdict);

/// Fills the reference's times and the speedups of a timed verdict from the reference's timing
/// (time_reference's answer, or {"error": why}); does nothing to an untimed verdict. The engine
/// calls it when the timing lands, which may be after the candidate was judged.
void apply_reference_timing(const Json& timing, Verdict& verdict);

/// The rank of a status in DESIGN.md's order (smaller fails earlier); unknown ones rank last.
int status_rank(std::string_view status);

}  // namespace tritium::exec
