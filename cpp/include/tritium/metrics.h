// tritium/metrics.h: published numbers from verdicts, and the reports that show them
// (docs/metrics.md).
//
// Pure functions of verdicts: unbiased pass@k, fast_p (against eager and torch.compile), mean
// speedups, the status breakdown of TritonRL's Figure 5, per KernelBench level and per rule; then
// Markdown, JSON and self-contained HTML (inline SVG charts) reports of one or more runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tritium/core.h"
#include "tritium/verdict.h"

namespace tritium {

/// Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k), computed as a
/// product (no overflow). Requires 1 <= k <= n and 0 <= c <= n.
double pass_at_k(int n, int c, int k);

/// Which k and p values to report.
struct MetricsOptions {
  std::vector<int> ks = {1, 5, 10};
  std::vector<double> ps = {0.0, 1.0, 1.5, 2.0};
};

/// One task's samples: how many, how many correct, how many correct and faster than each p.
struct TaskTally {
  std::string task_id;
  int samples = 0, correct = 0;
  std::vector<int> faster_eager, faster_compile;         // per MetricsOptions::ps; empty when untimed
  std::vector<double> eager_speedups, compile_speedups;  // credited to its correct, timed samples (fast_p's)
};

/// A speedup distribution's summary; unset when there is nothing to summarise.
struct SpeedupSummary {
  std::size_t n = 0;
  std::optional<double> geomean, mean, median, min, max;
};

/// A 95% percentile bootstrap interval over tasks (docs/metrics.md, "Intervals").
struct Interval {
  double low = 0, high = 0;
};

/// The interval of the mean of per-task values: the mean of `resamples` draws of as many tasks
/// with replacement, its 2.5% and 97.5% quantiles. The draws are seeded (0 by default), so a
/// report is the same every time it is made. Unset when there are no values.
std::optional<Interval> bootstrap_mean(std::span<const double> values, int resamples = 2000, std::uint64_t seed = 0);

/// pass@k or fast_p@k over a set of tasks: the mean over the tasks with at least k samples.
struct AtK {
  int k = 1;
  double p = 0;                      // fast_p only
  std::optional<double> value;       // unset when no task has k samples (or, for fast_p, no timing)
  std::size_t tasks = 0;             // tasks that counted
  std::optional<Interval> interval;  // of value, over the tasks that counted (bootstrap_mean)
};

/// Metrics of one set of verdicts (a run, or one level of it).
struct Summary {
  std::size_t samples = 0;
  std::vector<TaskTally> tasks;                 // by task id
  std::map<std::string, std::size_t> statuses;  // every status of verdict_statuses(), zeros included
  std::map<std::string, std::size_t> stages;    // Figure 5: syntax, functionality, compile, runtime,
                                                // incorrect, correct, error (see docs/metrics.md)
  std::map<std::string, std::size_t> rules;     // samples with an error finding of each rule id
  std::vector<AtK> pass;                        // per k
  std::vector<AtK> fast_eager, fast_compile;    // per (p, k)
  bool timed = false;                           // some correct sample has a measured speedup
  // Of those, the ones timed below the timing floor: fast_p credits them with at most 1x.
  std::size_t below_floor_eager = 0, below_floor_compile = 0;
  // Speedups of the correct, timed samples; and of all samples with the convention that a sample
  // that is not correct counts as 1.0 (the PyTorch reference stays in place).
  SpeedupSummary correct_eager, correct_compile, all_eager, all_compile;
  std::vector<double> eager_speedups, compile_speedups;  // of the correct, timed samples, ascending (charts)
};

/// Metrics of a run, overall and per KernelBench level (a verdict's `level`, else a `levelN`
/// component of its task id; verdicts with neither are counted only overall).
struct Metrics {
  MetricsOptions options;
  Summary overall;
  std::map<int, Summary> levels;
};

Metrics compute_metrics(std::span<const Verdict> verdicts, const MetricsOptions& options = {});

/// pass@k for k = 1 .. the fewest samples of a task, so every point averages the same tasks.
std::vector<AtK> pass_curve(const Summary& summary);
/// fast_p@1 at each threshold of `ps` (KernelBench's curve): the mean over tasks of the share of
/// their samples that are correct and more than p times faster than the reference (eager, or
/// torch.compile); unset when the summary has no timing.
std::vector<AtK> fast_curve(const Summary& summary, const std::vector<double>& ps, bool compile);

/// One metric of a later run against a first, on the tasks both have (with at least k samples in
/// each): the two means and their difference, with the difference's 95% paired bootstrap interval
/// over those tasks. Whether RL moved pass@1 beyond the noise of which tasks were drawn.
struct Change {
  std::string metric;  // "pass@1", "fast_1@1 (eager)"
  std::size_t tasks = 0;
  double before = 0, after = 0, delta = 0;
  std::optional<Interval> interval;  // of delta; unset without common tasks
  bool beyond() const { return interval && (interval->low > 0 || interval->high < 0); }
};

/// pass@k for every k of `options`, and fast_p@1 against eager for every p when both runs were timed.
std::vector<Change> compare_runs(const Summary& before, const Summary& after, const MetricsOptions& options);

/// The Figure 5 stage of a status ("syntax" ... "correct", or "error").
std::string stage_of(const std::string& status);
/// The stages in display order.
const std::vector<std::string>& stages();

Json to_json(const Summary& summary);
Json to_json(const Metrics& metrics);  // {options, overall, levels: {"1": ..., "2": ...}}
Json to_json(const Change& change);    // {metric, tasks, before, after, delta, interval: [low, high], beyond}

// ---- Reports ------------------------------------------------------------------------------------

/// One run in a report: a name (the verdict file's stem), where it came from, its metrics.
struct RunReport {
  std::string name, source;
  Metrics metrics;
  std::size_t problems = 0;  // verdict lines that could not be read
};

/// Loads verdicts from a JSONL file (one verdict per line, as `tritium eval --out` writes them);
/// unreadable lines are counted in `problems` and skipped. Errors when the file cannot be read.
Result<std::vector<Verdict>> load_verdicts(const std::filesystem::path& path, std::size_t* problems = nullptr);

std::string report_markdown(std::span<const RunReport> runs);
Json report_json(std::span<const RunReport> runs);
/// A self-contained HTML page (no scripts, no external files) with SVG charts: status breakdown
/// per run and level, speedup distribution, pass@k curve.
std::string report_html(std::span<const RunReport> runs);
/// Writes DIR/report.md, report.json and report.html (creating DIR); the error names the file.
std::optional<Error> write_reports(const std::filesystem::path& dir, std::span<const RunReport> runs);

/// A report over verdict files (`tritium report`, tritium.report, the trainer's eval stage).
struct ReportOptions {
  std::vector<std::string> verdicts;  // JSONL files: the first, then those shown beside it
  std::string out;                    // directory for report.md, report.json, report.html
  MetricsOptions metrics;
};
/// ReportOptions from JSON: {"verdicts": [...], "out", "ks"?, "ps"?}; an unknown key or a bad value is an Error.
Result<ReportOptions> report_options_from_json(const Json& json);

/// Loads every file (unreadable lines are counted, and `warn` told), names the runs by their file
/// stems (with their folders where two share a stem), computes their metrics and writes the three
/// files. An Error names the file that is missing, empty or cannot be written.
Result<std::vector<RunReport>> make_report(const ReportOptions& options,
                                           const std::function<void(const std::string&)>& warn = {});

}  // namespace tritium
