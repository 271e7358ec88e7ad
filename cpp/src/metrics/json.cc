// Metrics as JSON: numbers that could not be computed are null, never 0.
#include <fmt/format.h>

#include "tritium/metrics.h"

namespace tritium {
namespace {

Json number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json to_json(const SpeedupSummary& s) {
  return {{"n", s.n},
          {"geomean", number(s.geomean)},
          {"mean", number(s.mean)},
          {"median", number(s.median)},
          {"min", number(s.min)},
          {"max", number(s.max)}};
}

Json interval(const std::optional<Interval>& i) { return i ? Json::array({i->low, i->high}) : Json(nullptr); }

Json pass_json(const std::vector<AtK>& pass, bool intervals = false) {
  Json out = Json::object();
  for (const auto& a : pass) out[fmt::format("pass@{}", a.k)] = intervals ? interval(a.interval) : number(a.value);
  return out;
}

Json fast_json(const std::vector<AtK>& fast, bool intervals = false) {
  Json out = Json::object();
  for (const auto& a : fast)
    out[fmt::format("fast_{}@{}", a.p, a.k)] = intervals ? interval(a.interval) : number(a.value);
  return out;
}

}  // namespace

Json to_json(const Summary& s) {
  Json tasks = Json::array();
  for (const auto& t : s.tasks)
    tasks.push_back({{"task_id", t.task_id}, {"samples", t.samples}, {"correct", t.correct}});
  return {{"samples", s.samples},
          {"tasks", s.tasks.size()},
          {"statuses", s.statuses},
          {"stages", s.stages},
          {"rules", s.rules},
          {"pass", pass_json(s.pass)},
          {"timed", s.timed},
          {"below_timing_floor", {{"eager", s.below_floor_eager}, {"compile", s.below_floor_compile}}},
          {"fast_eager", fast_json(s.fast_eager)},
          {"fast_compile", fast_json(s.fast_compile)},
          {"intervals",  // [low, high]: 95% bootstrap over tasks (bootstrap_mean)
           {{"pass", pass_json(s.pass, true)},
            {"fast_eager", fast_json(s.fast_eager, true)},
            {"fast_compile", fast_json(s.fast_compile, true)}}},
          {"speedup",
           {{"correct_eager", to_json(s.correct_eager)},
            {"correct_compile", to_json(s.correct_compile)},
            {"all_eager", to_json(s.all_eager)},
            {"all_compile", to_json(s.all_compile)}}},
          {"per_task", tasks}};
}

Json to_json(const Change& c) {
  return {{"metric", c.metric},  {"tasks", c.tasks}, {"before", c.before},
          {"after", c.after},    {"delta", c.delta}, {"interval", interval(c.interval)},
          {"beyond", c.beyond()}};
}

Json to_json(const Metrics& m) {
  Json levels = Json::object();
  for (const auto& [level, s] : m.levels) levels[std::to_string(level)] = to_json(s);
  return {
      {"options", {{"ks", m.options.ks}, {"ps", m.options.ps}}}, {"overall", to_json(m.overall)}, {"levels", levels}};
}

}  // namespace tritium
