// tritium report: metrics of verdict files, side by side, as report.md, report.json, report.html.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"
#include "tritium/metrics.h"

namespace tritium::cli {
namespace {

struct ReportCliOptions {
  std::string verdicts;
  std::vector<std::string> compare;
  ReportOptions report;
  bool json = false;
};

int run_report(ReportCliOptions& o) {
  o.report.verdicts = {o.verdicts};
  o.report.verdicts.insert(o.report.verdicts.end(), o.compare.begin(), o.compare.end());
  auto runs = make_report(o.report, [](const std::string& w) { std::cerr << "tritium: warning: " << w << "\n"; });
  if (!runs) return fail(kUsage, runs.error().message);
  if (o.json) {
    print_json(report_json(*runs));
    return kOk;
  }
  for (const auto& r : *runs) {
    const Summary& s = r.metrics.overall;
    const auto& pass1 = s.pass.empty() ? std::optional<double>() : s.pass.front().value;
    std::cout << fmt::format("{}: {} verdicts, {} tasks, pass@1 {}, correct {}\n", r.name, s.samples, s.tasks.size(),
                             pass1 ? fmt::format("{:.1f}%", 100 * *pass1) : "-", s.stages.at("correct"));
  }
  std::cout << fmt::format("wrote {0}/report.md, {0}/report.json, {0}/report.html\n", o.report.out);
  return kOk;
}

}  // namespace

void add_report_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<ReportCliOptions>();
  auto* app = root.add_subcommand("report", "Metrics and charts of verdict files: report.md, report.json, report.html");
  app->add_option("verdicts", o->verdicts, "Verdicts JSONL (from 'tritium eval --out')")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--compare", o->compare, "More verdict files, shown side by side")->check(CLI::ExistingFile);
  app->add_option("--out", o->report.out, "Directory for the three files")->required();
  app->add_option("--k", o->report.metrics.ks, "k values of pass@k and fast_p@k")->capture_default_str();
  app->add_option("--p", o->report.metrics.ps, "Speedup thresholds p of fast_p")->capture_default_str();
  app->add_flag("--json", o->json, "Print report.json's document on stdout");
  commands.push_back({app, [o] { return run_report(*o); }});
}

}  // namespace tritium::cli
