// The tables of a report (one row per metric, one column per run), for report.cc and
// report_html.cc.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tritium/metrics.h"

namespace tritium::report {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string markdown() const;
};

/// The headline metrics of each run's summary that `pick` selects (null: the run lacks it).
Table headline(std::span<const RunReport> runs, const std::function<const Summary*(const RunReport&)>& pick);
/// Samples with an error finding, per rule id and run.
Table rules_table(std::span<const RunReport> runs);
/// Each run after the first against the run before it (a training run's stages in order), on the
/// tasks both have (compare_runs).
Table change_table(std::span<const RunReport> runs);
/// One row per (run, task): samples, correct ones, and the best correct speedups.
Table task_table(std::span<const RunReport> runs);
/// Every level that some run has, ascending.
std::vector<int> all_levels(std::span<const RunReport> runs);
/// The summary of `level` in a run, or null.
const Summary* level_summary(const RunReport& run, int level);

}  // namespace tritium::report
