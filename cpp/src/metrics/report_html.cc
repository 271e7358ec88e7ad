// The HTML report: one self-contained page (inline CSS and SVG, no scripts, nothing fetched).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "tables.h"

namespace tritium {
namespace {

// Stage colours follow the pipeline: warm for answers that never ran (dark red to orange), purple
// for a crash, blue for a wrong answer, green for correct, grey for the engine's own errors; each
// pair far enough apart to tell in print and for the common colour-blindnesses.
const char* stage_colour(const std::string& stage) {
  if (stage == "syntax") return "#8c1c13";
  if (stage == "functionality") return "#e66101";
  if (stage == "compile") return "#fdb863";
  if (stage == "runtime") return "#5e3c99";
  if (stage == "incorrect") return "#4393c3";
  if (stage == "correct") return "#1a9850";
  return "#999999";
}

// Text on a segment: white on the dark colours, black on the light ones.
const char* text_colour(const std::string& stage) { return stage == "compile" || stage == "error" ? "#222" : "#fff"; }

const char* kRunColours[] = {"#2166ac", "#d6604d", "#4d9221", "#762a83", "#e08214", "#35978f"};
const char* run_colour(std::size_t i) { return kRunColours[i % std::size(kRunColours)]; }

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A colour key of the runs, one per line from (x, y).
std::string run_legend(std::span<const RunReport> runs, int x, int y) {
  std::string out;
  for (std::size_t r = 0; r < runs.size(); ++r)
    out +=
        fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}" class="s">{}</text>)",
                    x, y + 6 + 18 * r, run_colour(r), x + 16, y + 16 + 18 * r, escape(runs[r].name));
  return out;
}

std::string html_table(const report::Table& t) {
  std::string out = "<table><thead><tr>";
  for (const auto& h : t.header) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {  // figures right-aligned, names (the first column) left
      const bool figure =
          i > 0 && !row[i].empty() && (std::isdigit(static_cast<unsigned char>(row[i][0])) || row[i] == "-");
      out += (figure ? "<td class=n>" : "<td>") + escape(row[i]) + "</td>";
    }
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
    legend +=
        fmt::format(R"(<rect x="{}" y="6" width="12" height="12" fill="{}"/><text x="{}" y="16" class="s">{}</text>)",
                    x, stage_colour(stage), x + 16, stage);
    x += 16 + 7 * static_cast<int>(stage.size()) + 18;
  }
  std::string svg =
      fmt::format(
          R"(<svg role="img" aria-label="status breakdown" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">)",
          std::max(label_w + bar_w, x) + 20, height) +
      legend;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& [label, s] = bars[i];
    const int y = top + static_cast<int>(i) * row_h;
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" class="s">{} (n={})</text>)", label_w - 8, y + 15,
                       escape(label), s->samples);
    double offset = 0;
    for (const auto& stage : stages()) {
      const double share = s->samples ? static_cast<double>(s->stages.at(stage)) / s->samples : 0;
      if (share <= 0) continue;
      svg += fmt::format(
          R"(<rect x="{:.1f}" y="{}" width="{:.1f}" height="{}" fill="{}"><title>{}: {} of {}</title></rect>)",
          label_w + offset * bar_w, y, share * bar_w, row_h - 6, stage_colour(stage), stage, s->stages.at(stage),
          s->samples);
      const std::string count = std::to_string(s->stages.at(stage));
      if (share * bar_w >= 8.0 * static_cast<double>(count.size()) + 4)  // the count, where it fits
        svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle" class="s" style="fill:{}">{}</text>)",
                           label_w + (offset + share / 2) * bar_w, y + 14, text_colour(stage), count);
      offset += share;
    }
  }
  return svg + "</svg>\n";
}

// A plot's frame: the box, horizontal grid lines at the y ticks (value, label), the axis titles.
struct Frame {
  int left = 56, top = 12, w = 480, h = 200;
  std::string open(const char* label, int extra_w) const {
    return fmt::format(R"(<svg role="img" aria-label="{}" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg">)",
                       label, left + w + extra_w, top + h + 48);
  }
  std::string axes(const std::vector<std::pair<double, std::string>>& y_ticks, const std::string& x_title,
                   const std::string& y_title) const {
    std::string out =
        fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)", left, top, w, h);
    for (const auto& [v, text] : y_ticks) {
      const double y = top + (1 - v) * h;
      out += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/>)", left, y, left + w, y);
      out += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end" class="s">{}</text>)", left - 6, y + 4, text);
    }
    out += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" class="s">{}</text>)", left + w / 2, top + h + 40,
                       escape(x_title));
    out += fmt::format(
        R"svg(<text x="14" y="{}" text-anchor="middle" class="s" transform="rotate(-90 14 {})">{}</text>)svg",
        top + h / 2, top + h / 2, escape(y_title));
    return out;
  }
  std::string x_tick(double x, const std::string& text) const {
    return fmt::format(R"(<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}" stroke="#333"/><text x="{:.1f}" y="{}" )"
                       R"(text-anchor="middle" class="s">{}</text>)",
                       x, top + h, x, top + h + 4, x, top + h + 18, escape(text));
  }
};

std::vector<std::pair<double, std::string>> percent_ticks() {
  std::vector<std::pair<double, std::string>> ticks;
  for (int t = 0; t <= 4; ++t) ticks.push_back({t / 4.0, fmt::format("{}%", t * 25)});
  return ticks;
}

// Histogram of the correct samples' speedups over the eager (or torch.compile) reference in log2
// bins, bars grouped by run; the y axis counts samples.
std::string speedup_chart(std::span<const RunReport> runs, bool compile) {
  constexpr int kBins = 8;  // <1/8, [1/8,1/4), ..., [4,8), >=8
  const char* labels[kBins] = {"<1/8", "1/8-1/4", "1/4-1/2", "1/2-1", "1-2", "2-4", "4-8", ">=8"};
  std::vector<std::array<int, kBins>> counts(runs.size());
  int most = 0;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    counts[r].fill(0);
    const auto& speedups = compile ? runs[r].metrics.overall.compile_speedups : runs[r].metrics.overall.eager_speedups;
    for (double s : speedups) {
      const int bin = std::clamp(static_cast<int>(std::floor(std::log2(s))) + 4, 0, kBins - 1);
      most = std::max(most, ++counts[r][bin]);
    }
  }
  if (most == 0)
    return fmt::format("<p class=note>No timed correct samples against {}: speedups are measured on a GPU only.</p>\n",
                       compile ? "torch.compile" : "eager");
  const int step = std::max(1, (most + 3) / 4);  // about four grid lines, whole samples
  const int top_count = step * ((most + step - 1) / step);
  std::vector<std::pair<double, std::string>> ticks;
  for (int c = 0; c <= top_count; c += step) ticks.push_back({static_cast<double>(c) / top_count, std::to_string(c)});
  const Frame f{56, 12, 640, 200};
  const double group_w = static_cast<double>(f.w) / kBins;
  const double bar_w = (group_w - 8) / static_cast<double>(runs.size());
  std::string svg = f.open(compile ? "speedups vs torch.compile" : "speedups vs eager", 160);
  svg += f.axes(ticks, fmt::format("speedup vs {} (correct, timed samples)", compile ? "torch.compile" : "eager"),
                "samples");
  for (int b = 0; b < kBins; ++b) {
    const double gx = f.left + b * group_w + 4;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const double h = static_cast<double>(counts[r][b]) / top_count * f.h;
      svg += fmt::format(
          R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{} {}: {}</title></rect>)",
          gx + r * bar_w, f.top + f.h - h, bar_w, h, run_colour(r), escape(runs[r].name), labels[b], counts[r][b]);
    }
    svg += f.x_tick(gx + group_w / 2 - 4, labels[b]);
  }
  return svg + run_legend(runs, f.left + f.w + 12, f.top) + "</svg>\n";
}

// Lines of (x, value) per run over a frame whose y axis is a share; `dashed` draws a second set.
std::string share_lines(const Frame& f, const std::vector<std::vector<std::pair<double, double>>>& lines,
                        std::span<const RunReport> runs, bool dashed, const std::string& what) {
  std::string svg;
  for (std::size_t r = 0; r < lines.size(); ++r) {
    std::string points;
    for (const auto& [x, v] : lines[r]) points += fmt::format("{:.1f},{:.1f} ", x, f.top + (1 - v) * f.h);
    svg += fmt::format(
        R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}><title>{} {}</title></polyline>)", points,
        run_colour(r), dashed ? R"( stroke-dasharray="6 4")" : "", escape(runs[r].name), what);
  }
  return svg;
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
  const Frame f;
  auto px = [&](int k) { return f.left + (k - 1) * f.w / static_cast<double>(longest - 1); };
  std::string svg = f.open("pass@k", 160) + f.axes(percent_ticks(), "k (samples per task)", "pass@k");
  const std::size_t every = (longest + 9) / 10;  // at most about ten labelled ticks
  for (std::size_t k = 1; k <= longest; ++k)
    if ((k - 1) % every == 0 || k == longest) svg += f.x_tick(px(static_cast<int>(k)), std::to_string(k));
  std::vector<std::vector<std::pair<double, double>>> lines(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r)
    for (const auto& a : curves[r])
      if (a.value) {
        lines[r].push_back({px(a.k), *a.value});
        svg += fmt::format(
            R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"><title>{} pass@{} = {:.1f}%</title></circle>)", px(a.k),
            f.top + (1 - *a.value) * f.h, run_colour(r), escape(runs[r].name), a.k, 100 * *a.value);
      }
  return svg + share_lines(f, lines, runs, false, "pass@k") + run_legend(runs, f.left + f.w + 12, f.top) + "</svg>\n";
}

// KernelBench's fast_p curve: fast_p@1 against the speedup threshold p, solid against eager,
// dashed against torch.compile; p = 0 is the correct share.
std::string fast_chart(std::span<const RunReport> runs) {
  double p_max = 2;
  bool timed = false;
  for (const auto& r : runs) {
    timed = timed || r.metrics.overall.timed;
    for (const auto* v : {&r.metrics.overall.eager_speedups, &r.metrics.overall.compile_speedups})
      if (!v->empty()) p_max = std::max(p_max, std::min(8.0, std::ceil(v->back())));
  }
  if (!timed) return "<p class=note>No timing: fast_p is measured on a GPU only.</p>\n";
  std::vector<double> ps;
  for (int i = 0; i <= 160; ++i) ps.push_back(p_max * i / 160.0);
  const Frame f;
  auto px = [&](double p) { return f.left + p / p_max * f.w; };
  std::string svg = f.open("fast_p", 160);
  svg += f.axes(percent_ticks(), "speedup threshold p (solid: vs eager; dashed: vs torch.compile)",
                "fast_p (tasks correct and > p faster)");
  for (int p = 0; p <= static_cast<int>(p_max); ++p) svg += f.x_tick(px(p), std::to_string(p));
  for (const bool compile : {false, true}) {
    std::vector<std::vector<std::pair<double, double>>> lines(runs.size());
    for (std::size_t r = 0; r < runs.size(); ++r)
      for (const auto& a : fast_curve(runs[r].metrics.overall, ps, compile))
        if (a.value) lines[r].push_back({px(a.p), *a.value});
    svg += share_lines(f, lines, runs, compile, compile ? "fast_p vs torch.compile" : "fast_p vs eager");
  }
  return svg + run_legend(runs, f.left + f.w + 12, f.top) + "</svg>\n";
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
    out += fmt::format("<li><b>{}</b>: {} ({} verdicts)</li>", escape(r.name), escape(r.source),
                       r.metrics.overall.samples);
  out += "</ul>\n<h2>Status breakdown</h2>\n" + stage_chart(runs);
  out += "<h2>pass@k</h2>\n" + pass_chart(runs);
  out += "<h2>fast_p</h2>\n" + fast_chart(runs);
  out += "<h2>Speedup distributions</h2>\n" + speedup_chart(runs, false) + speedup_chart(runs, true);
  out +=
      "<h2>Overall</h2>\n" + html_table(report::headline(runs, [](const RunReport& r) { return &r.metrics.overall; }));
  if (runs.size() > 1)
    out += std::string("<h2>Change from the run before</h2>\n") +
           "<p>Each run against the one listed before it, on the tasks both have; the interval is a paired "
           "bootstrap over them: a change whose interval excludes 0 is beyond the noise of which tasks were "
           "drawn.</p>\n" +
           html_table(report::change_table(runs));
  for (int level : report::all_levels(runs))
    out += fmt::format("<h2>Level {}</h2>\n", level) +
           html_table(report::headline(runs, [level](const RunReport& r) { return report::level_summary(r, level); }));
  const auto rules = report::rules_table(runs);
  if (!rules.rows.empty()) out += "<h2>Error findings per rule (samples)</h2>\n" + html_table(rules);
  out += "<h2>Per task</h2>\n" + html_table(report::task_table(runs));
  return out + "</body></html>\n";
}

}  // namespace tritium
