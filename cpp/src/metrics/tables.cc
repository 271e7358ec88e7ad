// The tables a report shows, shared by its Markdown and HTML forms.
#include "tables.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace tritium::report {
namespace {

std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", 100 * *v) : "-"; }
std::string times(const std::optional<double>& v) { return v ? fmt::format("{:.3f}x", *v) : "-"; }
std::string interval(const AtK* a) {
  return a && a->interval ? fmt::format("[{:.1f}%, {:.1f}%]", 100 * a->interval->low, 100 * a->interval->high) : "-";
}
std::string points(double share) { return fmt::format("{:+.1f} pts", 100 * share); }

const AtK* find_at(const std::vector<AtK>& list, int k, double p = 0) {
  for (const auto& a : list)
    if (a.k == k && a.p == p) return &a;
  return nullptr;
}

}  // namespace

std::string Table::markdown() const {
  std::string out = "| " + fmt::format("{}", fmt::join(header, " | ")) + " |\n|";
  for (std::size_t i = 0; i < header.size(); ++i) out += i ? " ---: |" : " --- |";
  out += "\n";
  for (const auto& r : rows) out += "| " + fmt::format("{}", fmt::join(r, " | ")) + " |\n";
  return out;
}

Table headline(std::span<const RunReport> runs, const std::function<const Summary*(const RunReport&)>& pick) {
  Table t;
  t.header = {"metric"};
  for (const auto& r : runs) t.header.push_back(r.name);
  auto row = [&](const std::string& label, const std::function<std::string(const Summary&)>& cell) {
    std::vector<std::string> cells{label};
    for (const auto& r : runs) {
      const Summary* s = pick(r);
      cells.push_back(s ? cell(*s) : "-");
    }
    t.rows.push_back(cells);
  };
  row("samples", [](const Summary& s) { return std::to_string(s.samples); });
  row("tasks", [](const Summary& s) { return std::to_string(s.tasks.size()); });
  const auto& o = runs.front().metrics.options;
  for (int k : o.ks) {
    row(fmt::format("pass@{}", k), [k](const Summary& s) {
      const AtK* a = find_at(s.pass, k);
      if (!a || !a->value || a->tasks == s.tasks.size()) return a ? pct(a->value) : "-";
      return fmt::format("{} ({} of {} tasks)", pct(a->value), a->tasks, s.tasks.size());
    });
    if (k == 1) row("pass@1, 95% interval over tasks", [](const Summary& s) { return interval(find_at(s.pass, 1)); });
  }
  bool timed = false;
  for (const auto& r : runs)
    if (const Summary* s = pick(r)) timed = timed || s->timed;
  for (double p : timed ? o.ps : std::vector<double>{}) {
    row(fmt::format("fast_{}@1 (eager)", p), [p](const Summary& s) {
      const AtK* a = find_at(s.fast_eager, 1, p);
      return a ? pct(a->value) : "-";
    });
    row(fmt::format("fast_{}@1 (eager), 95% interval over tasks", p),
        [p](const Summary& s) { return interval(find_at(s.fast_eager, 1, p)); });
    row(fmt::format("fast_{}@1 (compile)", p), [p](const Summary& s) {
      const AtK* a = find_at(s.fast_compile, 1, p);
      return a ? pct(a->value) : "-";
    });
  }
  if (timed) {
    row("correct, timed below the floor (eager; fast_p counts them as 1x at most)",
        [](const Summary& s) { return fmt::format("{} of {}", s.below_floor_eager, s.correct_eager.n); });
    row("geomean speedup, correct (eager)", [](const Summary& s) { return times(s.correct_eager.geomean); });
    row("mean speedup, correct (eager)", [](const Summary& s) { return times(s.correct_eager.mean); });
    row("geomean speedup, correct (compile)", [](const Summary& s) { return times(s.correct_compile.geomean); });
    row("geomean speedup, all (eager; failures = 1x)", [](const Summary& s) { return times(s.all_eager.geomean); });
    row("mean speedup, all (eager; failures = 1x)", [](const Summary& s) { return times(s.all_eager.mean); });
  }
  for (const auto& stage : stages())
    row("stage: " + stage, [&stage](const Summary& s) {
      const auto n = s.stages.at(stage);
      return fmt::format("{} ({:.1f}%)", n, s.samples ? 100.0 * n / s.samples : 0.0);
    });
  return t;
}

std::vector<int> all_levels(std::span<const RunReport> runs) {
  std::vector<int> levels;
  for (const auto& r : runs)
    for (const auto& [level, s] : r.metrics.levels)
      if (std::find(levels.begin(), levels.end(), level) == levels.end()) levels.push_back(level);
  std::sort(levels.begin(), levels.end());
  return levels;
}

Table rules_table(std::span<const RunReport> runs) {
  std::map<std::string, std::vector<std::string>> by_rule;
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const auto& [rule, n] : runs[i].metrics.overall.rules) {
      auto& cells = by_rule[rule];
      cells.resize(runs.size(), "0");
      cells[i] = std::to_string(n);
    }
  Table t;
  t.header = {"rule"};
  for (const auto& r : runs) t.header.push_back(r.name);
  for (auto& [rule, cells] : by_rule) {
    cells.resize(runs.size(), "0");
    cells.insert(cells.begin(), rule);
    t.rows.push_back(cells);
  }
  return t;
}

Table task_table(std::span<const RunReport> runs) {
  auto best = [](const std::vector<double>& v) {
    return v.empty() ? std::optional<double>() : std::optional<double>(*std::max_element(v.begin(), v.end()));
  };
  Table t;
  t.header = {"run", "task", "samples", "correct", "best vs eager", "best vs compile"};
  for (const auto& r : runs)
    for (const auto& task : r.metrics.overall.tasks)
      t.rows.push_back({r.name, task.task_id, std::to_string(task.samples), std::to_string(task.correct),
                        times(best(task.eager_speedups)), times(best(task.compile_speedups))});
  return t;
}

Table change_table(std::span<const RunReport> runs) {
  Table t;
  t.header = {"run", "against", "metric", "tasks", "before", "this run", "change", "95% interval", "beyond it"};
  for (std::size_t i = 1; i < runs.size(); ++i)
    for (const auto& c : compare_runs(runs[i - 1].metrics.overall, runs[i].metrics.overall, runs[i].metrics.options))
      t.rows.push_back({runs[i].name, runs[i - 1].name, c.metric, std::to_string(c.tasks),
                        c.tasks ? pct(c.before) : "-", c.tasks ? pct(c.after) : "-", c.tasks ? points(c.delta) : "-",
                        c.interval ? fmt::format("[{}, {}]", points(c.interval->low), points(c.interval->high)) : "-",
                        c.interval ? (c.beyond() ? "yes" : "no") : "-"});
  return t;
}

const Summary* level_summary(const RunReport& run, int level) {
  auto it = run.metrics.levels.find(level);
  return it == run.metrics.levels.end() ? nullptr : &it->second;
}

}  // namespace tritium::report
