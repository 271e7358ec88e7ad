// Verdicts from a candidate worker's reply and its comparer's: the earliest failing stage wins.
#include "judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace tritium::exec {
namespace {

// A worker's failure stage -> the status it costs and the rule that names it.
struct StageRule {
  std::string_view stage, status, rule;
};
constexpr std::array<StageRule, 10> kStages = {{
    {"channel", "runtime_error", "eval.channel"},
    {"load", "runtime_error", "eval.load"},
    {"params", "runtime_error", "eval.param_mismatch"},
    {"compile", "compile_error", "eval.compile"},
    {"runtime", "runtime_error", "eval.runtime"},
    {"crash", "runtime_error", "eval.crash"},
    {"runner", "runtime_error", "eval.runner"},
    {"output", "incorrect", "eval.output"},
    {"hack", "hack", "runtime.tampering"},
    {"timeout", "timeout", "eval.timeout"},
}};

// The verdict under construction: each failure adds a finding; the earliest status wins.
class Outcome {
 public:
  explicit Outcome(Verdict& v) : v_(v) {
    v_.status = "correct";
    v_.message.clear();
  }
  void fail(std::string_view status, std::string rule, std::string message, std::uint32_t line = 0) {
    if (!seen_.insert(rule).second) return;  // one finding per rule: the first says enough
    if (status_rank(status) < status_rank(v_.status)) {
      v_.status = std::string(status);
      v_.message = message;
    }
    v_.findings.push_back({std::move(rule), "error", line, 0, std::move(message)});
  }
  // The engine could not judge the candidate (status error: nobody's fault, not cached), unless a
  // check has already failed it.
  void cannot_judge(std::string rule, std::string message, std::uint32_t line = 0) {
    if (!seen_.insert(rule).second) return;
    if (v_.status == "correct") {
      v_.status = "error";
      v_.message = message;
    }
    v_.findings.push_back({std::move(rule), "error", line, 0, std::move(message)});
  }
  Verdict& verdict() { return v_; }

 private:
  Verdict& v_;
  std::set<std::string> seen_;
};

std::string trial_label(const Json& trial) {
  std::string label =
      fmt::format("trial {} ({} inputs, {} mode", trial.value("index", 0),
                  trial.value("distribution", std::string("task")), trial.value("mode", std::string("?")));
  if (trial.contains("variant") && trial["variant"].is_string()) label += ", " + trial["variant"].get<std::string>();
  return label + ")";
}

void observe(const Json& trials, Outcome& out) {
  for (const auto& t : trials) {
    const auto launches = t.value("launches", Json::array());
    out.verdict().triton_launches += static_cast<int>(launches.size());
    const std::string mode = t.value("mode", std::string("?"));
    if (launches.empty())
      out.fail("invalid_functionality", "runtime.no_launch:" + mode,
               fmt::format("ModelNew.forward launched none of the candidate's Triton kernels in {} mode (trial {})",
                           mode, t.value("index", 0)));
    const Json ops = t.value("torch_ops", Json::object());
    for (const auto& [op, count] : ops.items())
      out.fail("invalid_functionality", "runtime.torch_compute:" + op,
               fmt::format("PyTorch computed aten.{} ({} call(s)) in forward outside the Triton kernels (trial {})", op,
                           count.get<int>(), t.value("index", 0)));
    if (t.value("threads_left", 0) > 0)
      out.fail("hack", "runtime.thread",
               fmt::format("forward returned with {} new thread(s) still running", t["threads_left"].get<int>()));
  }
}

void worker_failure(const Json& body, Outcome& out) {
  const std::string stage = body.value("stage", std::string("runner"));
  std::string message = body.value("error", std::string("failed without a message"));
  const std::uint32_t line = body.value("line", 0u);
  if (body.value("interpreter_limit", false)) {
    // The worker recognised the failure as a known limit of Triton's interpreter (candidate.py's
    // interpreter_limit): the kernel may well be right, and only a GPU can tell.
    out.verdict().interpreter_limit = true;
    return out.cannot_judge("eval.interpreter_limit",
                            message +
                                " (a known limit of Triton's CPU interpreter, not the candidate's fault: "
                                "the engine cannot judge it here; evaluate on a GPU)",
                            line);
  }
  if (stage == "load" && message.rfind("does not parse", 0) == 0)
    return out.fail("invalid_syntax", "syntax.parse", message, line);
  for (const auto& s : kStages)
    if (s.stage == stage) {
      const std::string rule = body.contains("rule") ? body["rule"].get<std::string>() : std::string(s.rule);
      return out.fail(s.status, rule, message, line);
    }
  out.fail("runtime_error", "eval.runner", message, line);
}

struct ErrorTotals {
  std::optional<double> abs, rel;
  void add(const Json& result) {
    if (result.contains("max_abs") && result["max_abs"].is_number())
      abs = std::max(abs.value_or(0), result["max_abs"].get<double>());
    if (result.contains("max_rel") && result["max_rel"].is_number())
      rel = std::max(rel.value_or(0), result["max_rel"].get<double>());
  }
};

// The comparer's results (compare.py) by set: ("trial" or "spot", index) -> result.
class Comparisons {
 public:
  explicit Comparisons(const Reply& reply) {
    ok_ = reply.kind == Reply::Kind::ok && reply.body.value("ok", false);
    why_ = reply.kind != Reply::Kind::ok ? "the comparer " + reply.detail
                                         : reply.body.value("error", std::string("the comparer failed"));
    if (!ok_) return;
    for (const auto& r : reply.body.value("sets", Json::array()))
      if (r.is_object() && r.value("kind", Json()).is_string() && r.value("index", Json()).is_number_integer())
        sets_.emplace(std::pair{r["kind"].get<std::string>(), r["index"].get<int>()}, r);
  }
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  const Json* find(const std::string& kind, int index) const {
    auto it = sets_.find({kind, index});
    return it == sets_.end() ? nullptr : &it->second;
  }

 private:
  bool ok_ = false;
  std::string why_;
  std::map<std::pair<std::string, int>, Json> sets_;
};

// A set the worker produced: the comparer's verdict on it, or why there is none. False when the
// set has no result (the finding is made).
const Json* compared(const Comparisons& cmp, const std::string& kind, int index, const std::string& label,
                     Outcome& out) {
  if (const Json* r = cmp.find(kind, index)) return r;
  if (!cmp.ok())
    out.cannot_judge("engine.compare", fmt::format("{}: could not be compared: {}", label, cmp.why()));
  else
    out.fail("incorrect", "eval.output", fmt::format("{}: the outputs never reached the comparer", label));
  return nullptr;
}

// Every planned trial is judged from the comparer's results, whatever the worker reports: a
// candidate that wrote the worker's answer itself cannot leave trials out. A trial the worker did
// not reach (it failed before) is left to the worker's failure.
void compare_trials(const Json& reported, const Json& planned, bool worker_ok, const Comparisons& cmp, Outcome& out,
                    ErrorTotals& totals) {
  std::map<int, Json> seen;
  for (const auto& t : reported) seen[t.value("index", -1)] = t;
  for (const auto& p : planned) {
    const int i = p.value("index", -1);
    const std::string label = trial_label(p);
    const auto t = seen.find(i);
    if (t != seen.end())
      if (const Json mutated = t->second.value("input_mutated", Json()); mutated.is_number_integer())
        out.fail("incorrect", "eval.input_mutated",
                 fmt::format("{}: forward changed input {} in place; inputs must be left as they were", label,
                             mutated.get<int>()));
    if (!cmp.find("trial", i) && t == seen.end() && !worker_ok) continue;
    const Json* r = compared(cmp, "trial", i, label, out);
    if (!r) continue;
    ++out.verdict().trials;
    totals.add(*r);
    if (!r->value("match", false))
      out.fail("incorrect", "eval.mismatch",
               fmt::format("{}: {}", label, r->value("message", std::string("mismatch"))));
  }
}

void compare_spots(const Json& timed, int planned, const Comparisons& cmp, Outcome& out, ErrorTotals& totals) {
  const auto positions = timed.value("spot_positions", std::vector<int>{});
  for (int k = 0; k < planned; ++k) {
    const std::string label = k < static_cast<int>(positions.size()) ? fmt::format("timed call {}", positions[k])
                                                                     : fmt::format("spot set {}", k);
    const Json* r = compared(cmp, "spot", k, label, out);
    if (!r) continue;
    totals.add(*r);
    if (!r->value("match", false))
      out.fail("incorrect", "eval.timed_output",
               fmt::format("{} returned a wrong result (outputs of timed calls are checked): {}", label,
                           r->value("message", std::string("mismatch"))));
  }
}

// The task's float32 reference is itself past the profile's tolerance on the task's own inputs:
// the comparer allowed a multiple of its own error (compare.py, ILL_CONDITIONED_FACTOR). Said in
// every verdict of the task, so no one reads its `correct` as meeting the profile.
void note_ill_conditioned(const Json& planned, const Reply& comparison, Outcome& out) {
  double worst = 0;
  for (const auto& t : planned)
    for (const auto& e : t.value("reference_error", Json::array()))
      if (e.is_number()) worst = std::max(worst, e.get<double>());
  if (worst <= 0 || comparison.kind != Reply::Kind::ok) return;
  out.verdict().findings.push_back(
      {"eval.ill_conditioned", "warning", 0, 0,
       fmt::format("the task's float32 reference is itself up to {:.3g} from float64 on its own inputs, past the "
                   "profile's tolerance: outputs on those inputs were allowed {:g}x that error",
                   worst, comparison.body.value("ill_conditioned_factor", 0.0))});
}

std::optional<double> number(const Json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

void add_note(Verdict& v, const std::string& note) { v.timing_note += (v.timing_note.empty() ? "" : "; ") + note; }

// Timing statistics whose calls were mostly host-bound (timing.py, HOST_BOUND_SHARE).
bool below_floor(const Json& stats) { return stats.is_object() && stats.value("below_floor", false); }

void fill_timing(const Json& timed, Verdict& v) {
  if (v.status != "correct") {
    v.timing_note = "not timed: the candidate is not correct";
    return;
  }
  const Json stats = timed.value("stats", Json());
  if (!stats.is_object()) {
    v.timing_note = v.device.rfind("cuda", 0) == 0
                        ? "timing disabled"
                        : "not timed on the CPU: the Triton interpreter's speed means nothing";
    return;
  }
  v.runtime_stats = stats;
  v.runtime_ms = number(stats, "median_ms");
  if (stats.value("timed_to", std::string()) == "device")
    v.timing_note = "work outside the calling stream: timed to the device's end, less the host round trip";
  if (stats.contains("exclusive") && stats["exclusive"] == false)
    add_note(v, "timed while other work held the GPU (a neighbour hung past the lock wait): noisier than usual");
  if (below_floor(stats)) {
    v.below_timing_floor = true;
    add_note(v,
             "below the timing floor: the GPU waited for the host's launches in most timed calls, so the "
             "runtime is mostly the host's and its speedups are noise");
  }
  if (const Json cov = timed.value("coverage", Json()); cov.is_object()) v.coverage = number(cov, "coverage");
}

}  // namespace

void apply_reference_timing(const Json& timing, Verdict& v) {
  if (!v.runtime_ms || !timing.is_object()) return;
  // Shared by the task's candidates: where its timing spent its time (compile, lock_wait, exclusive).
  if (!v.phases_ms.is_object()) v.phases_ms = Json::object();
  const Json phases = timing.value("phases_ms", Json::object());  // named: items() would outlive a temporary
  for (const auto& [name, ms] : phases.items()) v.phases_ms["reference_timing." + name] = ms;
  v.ref_eager_ms = number(timing.value("eager", Json()), "median_ms");
  v.ref_compile_ms = number(timing.value("compile", Json()), "median_ms");
  if (timing.contains("error"))
    add_note(v, "the reference could not be timed: " + timing.value("error", std::string()));
  if (below_floor(timing.value("eager", Json()))) {
    v.below_timing_floor = true;
    add_note(v, "the eager reference is below the timing floor (host-bound): speedup_eager is noise");
  }
  if (below_floor(timing.value("compile", Json()))) {
    v.compile_below_timing_floor = true;
    add_note(v, "the torch.compile reference is below the timing floor (host-bound): speedup_compile is noise");
  }
  if (*v.runtime_ms > 0) {
    if (v.ref_eager_ms) v.speedup_eager = *v.ref_eager_ms / *v.runtime_ms;
    if (v.ref_compile_ms) v.speedup_compile = *v.ref_compile_ms / *v.runtime_ms;
  }
}

int status_rank(std::string_view status) {
  const auto& statuses = verdict_statuses();
  return static_cast<int>(std::find(statuses.begin(), statuses.end(), status) - statuses.begin());
}

void judge(const Reply& reply, const Reply& comparison, const Json& plan, Verdict& verdict) {
  Outcome out(verdict);
  if (reply.kind != Reply::Kind::ok) {
    const bool timed_out = reply.kind == Reply::Kind::timeout;
    out.fail(timed_out ? "timeout" : "runtime_error", timed_out ? "eval.timeout" : "eval.runner",
             fmt::format("the candidate's runner {}", reply.detail));
    return;
  }
  const Json& body = reply.body;
  verdict.stderr_tail = body.value("output_tail", std::string());
  verdict.sandbox = body.value("sandbox", Json());
  verdict.phases_ms = body.value("phases_ms", Json());
  verdict.kernels = body.value("kernels", std::vector<std::string>{});
  const Json trials = body.value("trials", Json::array());
  const Json planned = plan.value("trials", Json::array());
  const bool worker_ok = body.value("ok", false);
  verdict.trials = 0;  // those the comparer judged
  observe(trials, out);
  if (worker_ok && trials.size() != planned.size())
    out.fail("hack", "runtime.report",
             fmt::format("the worker's answer reports {} of the {} planned trials: it was not written by the worker",
                         trials.size(), planned.size()));
  const Json timed = body.value("timed", Json::object());
  if (timed.value("threads_left", 0) > 0)
    out.fail("hack", "runtime.thread", "a timed call returned with threads still running");
  ErrorTotals totals;
  const Comparisons cmp(comparison);
  compare_trials(trials, planned, worker_ok, cmp, out, totals);
  note_ill_conditioned(planned, comparison, out);
  if (worker_ok) {
    // A worker whose checked trials failed skips its timed calls (candidate.py); its word counts
    // only where the comparer's results or its trials already failed it.
    const bool failed = status_rank(verdict.status) <= status_rank("incorrect");
    if (!(failed && timed.contains("skipped"))) compare_spots(timed, plan.value("spots", 0), cmp, out, totals);
  } else if (const std::string stage = body.value("stage", std::string());
             (stage == "channel" || stage == "runner") && !cmp.ok()) {
    // The comparer failed first (the engine then closes the channel, which the worker sees
    // shipping, or opening it): the comparer's fault, not the candidate's.
    out.cannot_judge("engine.compare", "the outputs could not be compared: " + cmp.why());
  } else {
    worker_failure(body, out);
  }
  verdict.max_abs_err = totals.abs;
  verdict.max_rel_err = totals.rel;
  verdict.correct = verdict.status == "correct";
  if (verdict.correct)
    verdict.message = fmt::format("correct on {} trials and the timed calls' spot checks", verdict.trials);
  fill_timing(timed, verdict);
  // A GPU job's outputs normally cross device memory (channel.py); a refusal is slower, not wrong.
  if (comparison.kind == Reply::Kind::ok && comparison.body.contains("device_refused"))
    add_note(verdict, "the outputs crossed host memory: " + comparison.body.value("device_refused", std::string()));
}

}  // namespace tritium::exec

namespace tritium {}  // namespace tritium
