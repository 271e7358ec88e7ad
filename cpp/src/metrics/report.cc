// Reports as Markdown and JSON; runs side by side, one column per run.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "tables.h"

namespace tritium {

Result<std::vector<Verdict>> load_verdicts(const std::filesystem::path& path, std::size_t* problems) {
  auto text = read_file(path);
  if (!text) return text.error();
  std::vector<Verdict> verdicts;
  std::size_t bad = 0;
  for (const auto& [number, line] : jsonl_lines(*text)) {
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("status") || !j.contains("task_id")) {
      ++bad;
      continue;
    }
    verdicts.push_back(verdict_from_json(j));
  }
  if (problems) *problems = bad;
  return verdicts;
}

std::string report_markdown(std::span<const RunReport> runs) {
  std::string out = "# Tritium report\n\n";
  for (const auto& r : runs)
    out += fmt::format("- **{}**: {} ({} verdicts{})\n", r.name, r.source, r.metrics.overall.samples,
                       r.problems ? fmt::format(", {} unreadable lines skipped", r.problems) : "");
  out +=
      "\nSpeed metrics appear when a run was timed on a GPU; `-` means not measured; pass@k counts the tasks with at "
      "least k samples. Conventions: docs/metrics.md.\n\n";
  out += "## Overall\n\n" + report::headline(runs, [](const RunReport& r) { return &r.metrics.overall; }).markdown();
  if (runs.size() > 1)
    out +=
        "\n## Change from the run before\n\nEach run against the one listed before it, on the tasks both have; the "
        "interval is a paired bootstrap over them (docs/metrics.md): a change whose interval excludes 0 is beyond the "
        "noise of which tasks were drawn.\n\n" +
        report::change_table(runs).markdown();
  for (int level : report::all_levels(runs)) {
    out += fmt::format("\n## Level {}\n\n", level);
    out += report::headline(runs, [level](const RunReport& r) { return report::level_summary(r, level); }).markdown();
  }
  const auto rules = report::rules_table(runs);
  if (!rules.rows.empty()) out += "\n## Error findings per rule (samples)\n\n" + rules.markdown();
  out += "\n## Per task\n\n" + report::task_table(runs).markdown();
  return out;
}

Json report_json(std::span<const RunReport> runs) {
  Json out = Json::array();
  for (const auto& r : runs)
    out.push_back({{"name", r.name}, {"source", r.source}, {"problems", r.problems}, {"metrics", to_json(r.metrics)}});
  Json changes = Json::array();
  for (std::size_t i = 1; i < runs.size(); ++i)
    for (const auto& c : compare_runs(runs[i - 1].metrics.overall, runs[i].metrics.overall, runs[i].metrics.options))
      changes.push_back({{"run", runs[i].name}, {"against", runs[i - 1].name}, {"change", to_json(c)}});
  return {{"tritium", version()}, {"runs", out}, {"changes", changes}};
}

std::optional<Error> write_reports(const std::filesystem::path& dir, std::span<const RunReport> runs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{fmt::format("{}: {}", dir.string(), ec.message())};
  for (const auto& [name, text] :
       {std::pair{"report.md", report_markdown(runs)}, std::pair{"report.json", report_json(runs).dump(2) + "\n"},
        std::pair{"report.html", report_html(runs)}}) {
    std::ofstream f(dir / name, std::ios::binary);
    f << text;
    f.close();
    if (!f) return Error{fmt::format("could not write {}", (dir / name).string())};
  }
  return std::nullopt;
}

Result<ReportOptions> report_options_from_json(const Json& json) {
  ReportOptions o;
  OptionReader r(json, "report options");
  r.read("verdicts", o.verdicts).read("out", o.out).read("ks", o.metrics.ks).read("ps", o.metrics.ps);
  if (auto e = r.done()) return *e;
  if (o.verdicts.empty()) return Error{"report options: \"verdicts\" names no file"};
  if (o.out.empty()) return Error{"report options: \"out\" is missing: the directory for the report's files"};
  return o;  // make_report checks the ks, for either face
}

Result<std::vector<RunReport>> make_report(const ReportOptions& o,
                                           const std::function<void(const std::string&)>& warn) {
  for (int k : o.metrics.ks)
    if (k < 1) return Error{fmt::format("k {} is below 1: each k of pass@k must be at least 1", k)};
  std::vector<RunReport> runs;
  for (const auto& file : o.verdicts) {
    std::size_t problems = 0;
    auto verdicts = load_verdicts(file, &problems);
    if (!verdicts) return verdicts.error();
    if (verdicts->empty()) return Error{fmt::format("{}: no verdicts (expected JSONL lines of verdicts)", file)};
    if (problems && warn) warn(fmt::format("{}: {} unreadable lines skipped", file, problems));
    runs.push_back(
        {std::filesystem::path(file).stem().string(), file, compute_metrics(*verdicts, o.metrics), problems});
  }
  // Where two files share a stem (eval/sft/verdicts.jsonl, eval/rl/verdicts.jsonl), their folders tell them apart.
  std::vector<std::string> stems;
  for (const auto& r : runs) stems.push_back(r.name);
  for (auto& r : runs)
    if (std::count(stems.begin(), stems.end(), r.name) > 1)
      r.name =
          (std::filesystem::path(r.source).parent_path().filename() / std::filesystem::path(r.source).stem()).string();
  if (auto e = write_reports(o.out, runs)) return *e;
  return runs;
}

}  // namespace tritium
