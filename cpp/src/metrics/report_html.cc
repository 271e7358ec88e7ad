// The HTML report: one self-contained page (inline CSS and SVG, no scripts, nothing fetched).
#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "tables.h"

namespace tritium {
namespace {

// Stage colours follow the pipeline: reds for invalid answers, ambers for failures, green for correct.
const char* stage_colour(const std::string& stage) {
  if (stage == "syntax") return "#b2182b";
  if (stage == "functionality") return "#ef8a62";
  if (stage == "compile") return "#fddbc7";
  if (stage == "runtime") return "#f4a582";
  if (stage == "incorrect") return "#d1e5f0";
  if (stage == "correct") return "#1a9850";
  return "#999999";
}

const char* kRunColours[] = {"#2166ac", "#d6604d", "#4d9221", "#762a83", "#e08214", "#35978f"};
const char* run_colour(std::size_t i) { return kRunColours[i % std::size(kRunColours)]; }

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A colour key of the runs, one per line from (x, y).
std::string run_legend(std::span<const RunReport> runs, int x, int y) {
  std::string out;
  for (std::size_t r = 0; r < runs.size(); ++r)
    out += fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}" class="s">{}</text>)", x,
                       y + 6 + 18 * r, run_colour(r), x + 16, y + 16 + 18 * r, escape(runs[r].name));
  return out;
}

std::string html_table(const report::Table& t) {
  std::string out = "<table><thead><tr>";
  for (const auto& h : t.header) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "<td class=n>" : "<td>") + escape(row[i]) + "</td>";
    out += "</tr>";
  }
  return out + "</tbody></table>\n";
}

// Horizontal stacked bars: one per (run, level) summary, segments per stage, widths in percent.
std::string stage_chart(std::span<const RunReport> runs) {
  std::vector<std::pair<std::string, const Summary*>> bars;
  for (const auto& r : runs) {
    bars.push_back({r.name + " · all", &r.metrics.overall});
    for (const auto& [level, s] : r.metrics.levels) bars.push_back({fmt::format("{} · L{}", r.name, level), &s});
  }
  const int label_w = 220, bar_w = 520, row_h = 26, top = 30;
  const int height = top + static_cast<int>(bars.size()) * row_h + 10;
  std::string legend;
  int x = label_w;
  for (const auto& stage : stages()) {
    legend += fmt::format(R"(<rect x="{}" y="6" width="12" height="12" fill="{}"/><text x="{}" y="16" class="s">{}</text>)", x,
                          stage_colour(stage), x + 16, stage);
    x += 16 + 7 * static_cast<int>(stage.size()) + 18;
  }
  std::string svg = fmt::format(R"(<svg role="img" aria-label="status breakdown" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">)",
                                std::max(label_w + bar_w, x) + 20, height) + legend;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& [label, s] = bars[i];
    const int y = top + static_cast<int>(i) * row_h;
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" class="s">{} (n={})</text>)", label_w - 8, y + 15,
                       escape(label), s->samples);
    double offset = 0;
    for (const auto& stage : stages()) {
      const double share = s->samples ? static_cast<double>(s->stages.at(stage)) / s->samples : 0;
      if (share <= 0) continue;
      svg += fmt::format(R"(<rect x="{:.1f}" y="{}" width="{:.1f}" height="{}" fill="{}"><title>{}: {} of {}</title></rect>)",
                         label_w + offset * bar_w, y, share * bar_w, row_h - 6, stage_colour(stage), stage,
                         s->stages.at(stage), s->samples);
      offset += share;
    }
  }
  return svg + "</svg>\n";
}

// Histogram of correct samples' eager speedups in log2 bins, bars grouped by run.
std::string speedup_chart(std::span<const RunReport> runs) {
  constexpr int kBins = 8;  // <1/8, [1/8,1/4), ..., [4,8), >=8 collapsed into 8 edges
  const char* labels[kBins] = {"<1/8", "1/8-1/4", "1/4-1/2", "1/2-1", "1-2", "2-4", "4-8", ">=8"};
  std::vector<std::array<int, kBins>> counts(runs.size());
  int most = 1;
  bool any = false;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    counts[r].fill(0);
    for (double s : runs[r].metrics.overall.eager_speedups) {
      const int bin = std::clamp(static_cast<int>(std::floor(std::log2(s))) + 4, 0, kBins - 1);
      most = std::max(most, ++counts[r][bin]);
      any = true;
    }
  }
  if (!any) return "<p class=note>No timed correct samples: speedups are measured on a GPU only.</p>\n";
  const int left = 40, plot_w = 640, plot_h = 180, top = 10;
  const double group_w = static_cast<double>(plot_w) / kBins;
  const double bar_w = (group_w - 8) / static_cast<double>(runs.size());
  std::string svg = fmt::format(R"(<svg role="img" aria-label="speedup distribution" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">)",
                                left + plot_w + 150, top + plot_h + 40);
  svg += run_legend(runs, left + plot_w + 12, top);
  svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#333"/>)", left, top + plot_h, left + plot_w, top + plot_h);
  svg += fmt::format(R"(<text x="4" y="{}" class="s">{}</text><text x="4" y="{}" class="s">0</text>)", top + 10, most, top + plot_h);
  for (int b = 0; b < kBins; ++b) {
    const double gx = left + b * group_w + 4;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const double h = static_cast<double>(counts[r][b]) / most * plot_h;
      svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{} {}: {}</title></rect>)",
                         gx + r * bar_w, top + plot_h - h, bar_w, h, run_colour(r), escape(runs[r].name), labels[b], counts[r][b]);
    }
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle" class="s">{}</text>)", gx + group_w / 2 - 4,
                       top + plot_h + 16, labels[b]);
  }
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" class="s">speedup vs eager (correct samples)</text>)",
                     left + plot_w / 2, top + plot_h + 34);
  return svg + "</svg>\n";
}

// pass@k against k, one line per run, k from 1 to the fewest samples of a task (every point
// averages the same tasks).
std::string pass_chart(std::span<const RunReport> runs) {
  std::vector<std::vector<AtK>> curves;
  std::size_t longest = 0;
  for (const auto& r : runs) {
    curves.push_back(pass_curve(r.metrics.overall));
    longest = std::max(longest, curves.back().size());
  }
  if (longest == 0) return "<p class=note>No samples.</p>\n";
  if (longest == 1) return "<p class=note>One sample per task: only pass@1, in the tables below.</p>\n";
  const int left = 40, plot_w = 480, plot_h = 180, top = 10;
  auto px = [&](int k) { return left + (longest > 1 ? (k - 1) * plot_w / static_cast<double>(longest - 1) : plot_w / 2.0); };
  auto py = [&](double v) { return top + (1 - v) * plot_h; };
  std::string svg = fmt::format(R"(<svg role="img" aria-label="pass@k" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">)",
                                left + plot_w + 150, top + plot_h + 40);
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)", left, top, plot_w, plot_h);
  for (int tick = 0; tick <= 4; ++tick)
    svg += fmt::format(R"(<text x="4" y="{:.1f}" class="s">{}%</text>)", py(tick / 4.0) + 4, tick * 25);
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" class="s">k (1 to {})</text>)", left + plot_w / 2,
                     top + plot_h + 30, longest);
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::string points;
    for (const auto& a : curves[r])
      if (a.value) points += fmt::format("{:.1f},{:.1f} ", px(a.k), py(*a.value));
    svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>)", points, run_colour(r));
    for (const auto& a : curves[r])
      if (a.value)
        svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"><title>{} pass@{} = {:.1f}%</title></circle>)",
                           px(a.k), py(*a.value), run_colour(r), escape(runs[r].name), a.k, 100 * *a.value);
  }
  return svg + run_legend(runs, left + plot_w + 12, top) + "</svg>\n";
}

constexpr const char* kStyle = R"(<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1000px;color:#222}
table{border-collapse:collapse;margin:8px 0 20px}th,td{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}.s{font-size:12px;fill:#222}.note{color:#666}
h2{margin-top:28px;border-bottom:2px solid #eee}
</style>)";

}  // namespace

std::string report_html(std::span<const RunReport> runs) {
  std::string out = "<!doctype html>\n<html lang=en><head><meta charset=utf-8><title>Tritium report</title>";
  out += kStyle;
  out += "</head><body>\n<h1>Tritium report</h1>\n<ul>";
  for (const auto& r : runs)
    out += fmt::format("<li><b>{}</b>: {} ({} verdicts)</li>", escape(r.name), escape(r.source), r.metrics.overall.samples);
  out += "</ul>\n<h2>Status breakdown</h2>\n" + stage_chart(runs);
  out += "<h2>pass@k</h2>\n" + pass_chart(runs);
  out += "<h2>Speedup distribution</h2>\n" + speedup_chart(runs);
  out += "<h2>Overall</h2>\n" + html_table(report::headline(runs, [](const RunReport& r) { return &r.metrics.overall; }));
  for (int level : report::all_levels(runs))
    out += fmt::format("<h2>Level {}</h2>\n", level) +
           html_table(report::headline(runs, [level](const RunReport& r) { return report::level_summary(r, level); }));
  const auto rules = report::rules_table(runs);
  if (!rules.rows.empty()) out += "<h2>Error findings per rule (samples)</h2>\n" + html_table(rules);
  return out + "</body></html>\n";
}

}  // namespace tritium
