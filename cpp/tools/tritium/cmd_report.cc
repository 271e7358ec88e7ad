// tritium report: metrics of verdict files, side by side, as report.md, report.json, report.html.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "cli.h"
#include "tritium/metrics.h"

namespace tritium::cli {
namespace {

struct ReportCliOptions {
  std::string verdicts;
  std::vector<std::string> compare;
  std::string out;
  std::vector<int> ks = {1, 5, 10};
  std::vector<double> ps = {0.0, 1.0, 1.5, 2.0};
  bool json = false;
};

int run_report(const ReportCliOptions& o) {
  MetricsOptions options{o.ks, o.ps};
  for (int k : o.ks)
    if (k < 1) return fail(kUsage, fmt::format("--k {}: each k must be at least 1", k));
  std::vector<RunReport> runs;
  std::vector<std::string> files{o.verdicts};
  files.insert(files.end(), o.compare.begin(), o.compare.end());
  for (const auto& file : files) {
    std::size_t problems = 0;
    auto verdicts = load_verdicts(file, &problems);
    if (!verdicts) return fail(kUsage, verdicts.error().message);
    if (verdicts->empty())
      return fail(kUsage, fmt::format("{}: no verdicts (expected JSONL lines from 'tritium eval --out')", file));
    if (problems) std::cerr << fmt::format("tritium: warning: {}: {} unreadable lines skipped\n", file, problems);
    runs.push_back({std::filesystem::path(file).stem().string(), file, compute_metrics(*verdicts, options), problems});
  }
  // Runs are named by their file stems; where two share one (eval/sft/verdicts.jsonl and
  // eval/rl/verdicts.jsonl), the parent directory tells them apart.
  std::vector<std::string> stems;
  for (const auto& r : runs) stems.push_back(r.name);
  for (auto& r : runs)
    if (std::count(stems.begin(), stems.end(), r.name) > 1)
      r.name = (std::filesystem::path(r.source).parent_path().filename() / std::filesystem::path(r.source).stem()).string();
  const std::filesystem::path out(o.out);
  if (auto e = write_reports(out, runs)) return fail(kUsage, e->message);
  if (o.json) {
    print_json(report_json(runs));
  } else {
    for (const auto& r : runs) {
      const Summary& s = r.metrics.overall;
      std::cout << fmt::format("{}: {} verdicts, {} tasks, pass@1 {}, correct {}\n", r.name, s.samples, s.tasks.size(),
                               s.pass.empty() || !s.pass.front().value ? "-" : fmt::format("{:.1f}%", 100 * *s.pass.front().value),
                               s.stages.at("correct"));
    }
    std::cout << fmt::format("wrote {0}/report.md, {0}/report.json, {0}/report.html\n", out.string());
  }
  return kOk;
}

}  // namespace

void add_report_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<ReportCliOptions>();
  auto* app = root.add_subcommand("report", "Metrics and charts of verdict files: report.md, report.json, report.html");
  app->add_option("verdicts", o->verdicts, "Verdicts JSONL (from 'tritium eval --out')")->required()->check(CLI::ExistingFile);
  app->add_option("--compare", o->compare, "More verdict files, shown side by side")->check(CLI::ExistingFile);
  app->add_option("--out", o->out, "Directory for the three files")->required();
  app->add_option("--k", o->ks, "k values of pass@k and fast_p@k")->capture_default_str();
  app->add_option("--p", o->ps, "Speedup thresholds p of fast_p")->capture_default_str();
  app->add_flag("--json", o->json, "Print report.json's document on stdout");
  commands.push_back({app, [o] { return run_report(*o); }});
}

}  // namespace tritium::cli
