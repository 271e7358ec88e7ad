// Metrics of verdicts (docs/metrics.md): tallies per task, then pass@k, fast_p, speedups, stages.
#include "tritium/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <random>

namespace tritium {
namespace {

std::optional<double> speedup(const Verdict& v, bool compile) {
  const auto& s = compile ? v.speedup_compile : v.speedup_eager;
  if (v.status == "correct" && s && std::isfinite(*s) && *s > 0) return s;
  return std::nullopt;
}

bool below_floor(const Verdict& v, bool compile) {
  return compile ? v.compile_below_timing_floor : v.below_timing_floor;
}

// What fast_p credits a sample with: a speedup timed below the timing floor is the host's launch
// time, noise (docs/engine.md), so it counts as at most 1x, as rewards count it; a slowdown stands.
std::optional<double> credited(const Verdict& v, bool compile) {
  const auto s = speedup(v, compile);
  return s && below_floor(v, compile) ? std::optional<double>(std::min(*s, 1.0)) : s;
}

SpeedupSummary summarise(std::vector<double> xs) {
  SpeedupSummary s;
  s.n = xs.size();
  if (xs.empty()) return s;
  std::sort(xs.begin(), xs.end());
  double sum = 0, logs = 0;
  for (double x : xs) sum += x, logs += std::log(x);
  const auto n = static_cast<double>(xs.size());
  s.mean = sum / n;
  s.geomean = std::exp(logs / n);
  const std::size_t mid = xs.size() / 2;
  s.median = xs.size() % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
  s.min = xs.front();
  s.max = xs.back();
  return s;
}

double mean(const std::vector<double>& xs) {
  double sum = 0;
  for (double x : xs) sum += x;
  return sum / static_cast<double>(xs.size());
}

// A task's pass@k-style estimate from its `successes`; unset below k samples or without them.
std::optional<double> task_at_k(const TaskTally& t, int k, std::optional<int> successes) {
  if (t.samples < k || !successes) return std::nullopt;
  return pass_at_k(t.samples, *successes, k);
}

// pass@k-style means over the tasks with at least k samples; `count` picks the successes.
template <class Count>
AtK mean_at_k(const std::vector<TaskTally>& tasks, int k, Count count) {
  AtK a;
  a.k = k;
  std::vector<double> per_task;
  for (const auto& t : tasks)
    if (const auto v = task_at_k(t, k, count(t))) per_task.push_back(*v);
  a.tasks = per_task.size();
  if (a.tasks) a.value = mean(per_task);
  a.interval = bootstrap_mean(per_task);
  return a;
}

// A task's estimate of one compared metric (compare_runs), or unset when it has too few samples.
using PerTask = std::function<std::optional<double>(const TaskTally&)>;

Change change_of(std::string metric, const Summary& before, const Summary& after, const PerTask& value) {
  std::map<std::string, const TaskTally*> first;
  for (const auto& t : before.tasks) first[t.task_id] = &t;
  std::vector<double> b, a, delta;
  for (const auto& t : after.tasks) {
    const auto it = first.find(t.task_id);
    if (it == first.end()) continue;
    const auto vb = value(*it->second), va = value(t);
    if (!vb || !va) continue;
    b.push_back(*vb);
    a.push_back(*va);
    delta.push_back(*va - *vb);
  }
  Change c;
  c.metric = std::move(metric);
  c.tasks = b.size();
  if (b.empty()) return c;
  c.before = mean(b);
  c.after = mean(a);
  c.delta = c.after - c.before;
  c.interval = bootstrap_mean(delta);
  return c;
}

std::vector<AtK> fast_at(const std::vector<TaskTally>& tasks, const MetricsOptions& o, bool compile) {
  std::vector<AtK> out;
  for (std::size_t pi = 0; pi < o.ps.size(); ++pi)
    for (int k : o.ks) {
      AtK a = mean_at_k(tasks, k, [&](const TaskTally& t) -> std::optional<int> {
        const auto& f = compile ? t.faster_compile : t.faster_eager;
        if (f.empty()) return std::nullopt;
        return f[pi];
      });
      a.p = o.ps[pi];
      out.push_back(a);
    }
  return out;
}

Summary summarise_verdicts(const std::vector<const Verdict*>& verdicts, const MetricsOptions& o) {
  Summary s;
  s.samples = verdicts.size();
  for (const auto& status : verdict_statuses()) s.statuses[status] = 0;
  for (const auto& stage : stages()) s.stages[stage] = 0;
  std::map<std::string, TaskTally> tallies;
  std::vector<double> ce, cc, ae, ac;
  for (const Verdict* v : verdicts) {
    ++s.statuses[v->status];
    ++s.stages[stage_of(v->status)];
    std::vector<std::string> seen;
    for (const auto& f : v->findings)
      if (f.severity == "error" && std::find(seen.begin(), seen.end(), f.rule) == seen.end()) {
        seen.push_back(f.rule);
        ++s.rules[f.rule];
      }
    TaskTally& t = tallies[v->task_id];
    t.task_id = v->task_id;
    t.faster_eager.resize(o.ps.size());
    t.faster_compile.resize(o.ps.size());
    ++t.samples;
    const bool correct = v->status == "correct";
    t.correct += correct;
    const auto se = speedup(*v, false), sc = speedup(*v, true);
    const auto fe = credited(*v, false), fc = credited(*v, true);
    for (std::size_t pi = 0; pi < o.ps.size(); ++pi) {
      t.faster_eager[pi] += fe && *fe > o.ps[pi];
      t.faster_compile[pi] += fc && *fc > o.ps[pi];
    }
    if (se) {
      ce.push_back(*se);
      t.eager_speedups.push_back(*fe);
      s.below_floor_eager += below_floor(*v, false);
    }
    if (sc) {
      cc.push_back(*sc);
      t.compile_speedups.push_back(*fc);
      s.below_floor_compile += below_floor(*v, true);
    }
    ae.push_back(se.value_or(1.0));
    ac.push_back(sc.value_or(1.0));
  }
  s.timed = !ce.empty() || !cc.empty();
  for (auto& [id, t] : tallies) {
    // Without any timing, fast_p is unknown rather than 0 (a CPU run measures no speed).
    if (!s.timed) t.faster_eager.clear(), t.faster_compile.clear();
    s.tasks.push_back(std::move(t));
  }
  for (int k : o.ks)
    s.pass.push_back(mean_at_k(s.tasks, k, [](const TaskTally& t) -> std::optional<int> { return t.correct; }));
  s.fast_eager = fast_at(s.tasks, o, false);
  s.fast_compile = fast_at(s.tasks, o, true);
  s.eager_speedups = ce;
  std::sort(s.eager_speedups.begin(), s.eager_speedups.end());
  s.compile_speedups = cc;
  std::sort(s.compile_speedups.begin(), s.compile_speedups.end());
  s.correct_eager = summarise(ce);
  s.correct_compile = summarise(cc);
  if (!ce.empty()) s.all_eager = summarise(ae);
  if (!cc.empty()) s.all_compile = summarise(ac);
  return s;
}

std::optional<int> level_of(const Verdict& v) {
  if (v.level) return v.level;
  return level_from_path(v.task_id);
}

}  // namespace

std::optional<Interval> bootstrap_mean(std::span<const double> values, int resamples, std::uint64_t seed) {
  if (values.empty() || resamples < 1) return std::nullopt;
  // A generator whose sequence the standard fixes, drawn from by modulo (not a distribution, whose
  // output each standard library defines its own way): the same interval on every platform.
  std::mt19937_64 draw(seed);
  const std::size_t n = values.size();
  std::vector<double> means(static_cast<std::size_t>(resamples));
  for (double& m : means) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += values[draw() % n];
    m = sum / static_cast<double>(n);
  }
  std::sort(means.begin(), means.end());
  const auto at = [&](double q) { return means[static_cast<std::size_t>(std::lround(q * (means.size() - 1)))]; };
  return Interval{at(0.025), at(0.975)};
}

std::vector<Change> compare_runs(const Summary& before, const Summary& after, const MetricsOptions& o) {
  std::vector<Change> out;
  for (int k : o.ks)
    out.push_back(change_of(fmt::format("pass@{}", k), before, after,
                            [k](const TaskTally& t) { return task_at_k(t, k, t.correct); }));
  if (!before.timed || !after.timed) return out;
  for (std::size_t pi = 0; pi < o.ps.size(); ++pi)  // as fast_at counts them, so both tables agree
    out.push_back(change_of(fmt::format("fast_{}@1 (eager)", o.ps[pi]), before, after, [pi](const TaskTally& t) {
      return task_at_k(t, 1, pi < t.faster_eager.size() ? std::optional<int>(t.faster_eager[pi]) : std::nullopt);
    }));
  return out;
}

double pass_at_k(int n, int c, int k) {
  assert(k >= 1 && k <= n && c >= 0 && c <= n);
  if (n - c < k) return 1.0;
  double miss = 1.0;  // C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)
  for (int i = n - c + 1; i <= n; ++i) miss *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - miss;
}

const std::vector<std::string>& stages() {
  static const std::vector<std::string> kStages{"syntax",    "functionality", "compile", "runtime",
                                                "incorrect", "correct",       "error"};
  return kStages;
}

std::string stage_of(const std::string& status) {
  if (status == "invalid_syntax") return "syntax";
  if (status == "invalid_functionality" || status == "hack") return "functionality";
  if (status == "compile_error") return "compile";
  if (status == "runtime_error" || status == "timeout") return "runtime";
  if (status == "incorrect" || status == "correct") return status;
  return "error";
}

Metrics compute_metrics(std::span<const Verdict> verdicts, const MetricsOptions& options) {
  Metrics m;
  m.options = options;
  std::vector<const Verdict*> all;
  std::map<int, std::vector<const Verdict*>> by_level;
  for (const auto& v : verdicts) {
    all.push_back(&v);
    if (auto level = level_of(v)) by_level[*level].push_back(&v);
  }
  m.overall = summarise_verdicts(all, options);
  for (const auto& [level, vs] : by_level) m.levels[level] = summarise_verdicts(vs, options);
  return m;
}

std::vector<AtK> pass_curve(const Summary& s) {
  int fewest = s.tasks.empty() ? 0 : s.tasks.front().samples;
  for (const auto& t : s.tasks) fewest = std::min(fewest, t.samples);
  std::vector<AtK> curve;
  for (int k = 1; k <= fewest; ++k)
    curve.push_back(mean_at_k(s.tasks, k, [](const TaskTally& t) -> std::optional<int> { return t.correct; }));
  return curve;
}

std::vector<AtK> fast_curve(const Summary& s, const std::vector<double>& ps, bool compile) {
  std::vector<AtK> curve;
  for (double p : ps) {
    // At k = 1 a task's share is its faster samples over its samples, as fast_at's is.
    AtK a = mean_at_k(s.tasks, 1, [&](const TaskTally& t) -> std::optional<int> {
      if (!s.timed) return std::nullopt;
      const auto& speedups = compile ? t.compile_speedups : t.eager_speedups;
      return static_cast<int>(std::count_if(speedups.begin(), speedups.end(), [p](double x) { return x > p; }));
    });
    a.p = p;
    curve.push_back(a);
  }
  return curve;
}

}  // namespace tritium
