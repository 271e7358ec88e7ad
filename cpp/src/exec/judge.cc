// Verdicts from a candidate worker's reply and its tensor files: the earliest failing stage wins.
#include "judge.h"

#include <algorithm>
#include <array>
#include <set>

#include <fmt/format.h>

#include "tensor_file.h"

namespace tritium::exec {
namespace {

constexpr std::array<std::string_view, 9> kStatuses = {
    "invalid_syntax", "invalid_functionality", "hack", "compile_error", "runtime_error",
    "timeout",        "incorrect",             "correct", "error"};

// A worker's failure stage -> the status it costs and the rule that names it.
struct StageRule {
  std::string_view stage, status, rule;
};
constexpr std::array<StageRule, 9> kStages = {{
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
  std::string label = fmt::format("trial {} ({} inputs, {} mode", trial.value("index", 0),
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
               fmt::format("ModelNew.forward launched none of the candidate's Triton kernels in {} mode (trial {})", mode,
                           t.value("index", 0)));
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
                            message + " (a known limit of Triton's CPU interpreter, not the candidate's fault: "
                                      "the engine cannot judge it here; evaluate on a GPU)",
                            line);
  }
  if (stage == "load" && message.rfind("does not parse", 0) == 0) return out.fail("invalid_syntax", "syntax.parse", message, line);
  for (const auto& s : kStages)
    if (s.stage == stage) {
      const std::string rule = body.contains("rule") ? body["rule"].get<std::string>() : std::string(s.rule);
      return out.fail(s.status, rule, message, line);
    }
  out.fail("runtime_error", "eval.runner", message, line);
}

struct ErrorTotals {
  std::optional<double> abs, rel;
  void add(const Comparison& c) {
    if (!c.same_shape || !c.same_dtype) return;
    abs = std::max(abs.value_or(0), c.max_abs_err);
    rel = std::max(rel.value_or(0), c.max_rel_err);
  }
};

// Compares every "out*" of `expected` with the same name in `actual` (with `prefix` on the
// candidate side); returns the first mismatch message, or "".
std::string compare_outputs(const TensorFile& expected, const TensorFile& actual, const std::string& prefix,
                            std::string_view profile, ErrorTotals& totals) {
  std::size_t n_expected = 0, n_actual = 0;
  for (const auto& t : expected.tensors()) n_expected += t.name.rfind("out", 0) == 0;
  for (const auto& t : actual.tensors()) n_actual += t.name.rfind(prefix + "out", 0) == 0;
  if (n_expected != n_actual) return fmt::format("{} output(s) expected, got {}", n_expected, n_actual);
  for (const auto& e : expected.tensors()) {
    if (e.name.rfind("out", 0) != 0) continue;
    const TensorView* a = actual.find(prefix + e.name);
    if (!a) return fmt::format("{} is missing", e.name);
    const auto tol = tolerance_for(profile, e.dtype).value_or(Tolerance{0, 0});
    const Comparison c = compare(e, *a, tol);
    totals.add(c);
    if (!c.match) return fmt::format("output {}: {}", e.name.substr(3), c.message);
  }
  return "";
}

std::string mutated_input(const TensorFile& original, const TensorFile& after) {
  for (const auto& t : original.tensors()) {
    const TensorView* a = after.find(t.name);
    if (!a || !bitwise_equal(t, *a)) return t.name.substr(2);
  }
  return "";
}

void compare_trials(const Json& trials, const Reference& ref, const std::filesystem::path& job, std::string_view profile,
                    Outcome& out, ErrorTotals& totals) {
  std::map<int, Json> described;
  for (const auto& t : ref.body.value("trials", Json::array())) described[t.value("index", -1)] = t;
  for (const auto& t : trials) {
    const int i = t.value("index", -1);
    const std::string label = trial_label(described.count(i) ? described[i] : t);
    auto expected = TensorFile::open(ref.dir / fmt::format("trial-{}.ref.tt", i));
    auto original = TensorFile::open(ref.dir / fmt::format("trial-{}.in.tt", i));
    if (!expected || !original) {
      out.fail("error", "engine.reference", fmt::format("reference files of trial {} unreadable", i));
      continue;
    }
    auto actual = TensorFile::open(job / fmt::format("trial-{}.out.tt", i));
    if (!actual) {
      out.fail("incorrect", "eval.output_file", fmt::format("{}: the outputs file is unusable: {}", label, actual.error().message));
      continue;
    }
    if (auto why = compare_outputs(*expected, *actual, "", profile, totals); !why.empty())
      out.fail("incorrect", "eval.mismatch", fmt::format("{}: {}", label, why));
    if (auto which = mutated_input(*original, *actual); !which.empty())
      out.fail("incorrect", "eval.input_mutated",
               fmt::format("{}: forward changed input {} in place; inputs must be left as they were", label, which));
  }
}

void compare_spots(const Json& timed, const Reference& ref, const std::filesystem::path& job, std::string_view profile,
                   Outcome& out, ErrorTotals& totals) {
  const auto positions = timed.value("spot_positions", std::vector<int>{});
  auto actual = TensorFile::open(job / "spots.out.tt");
  if (!actual) {
    out.fail("incorrect", "eval.output_file", "the timed calls' outputs file is unusable: " + actual.error().message);
    return;
  }
  for (std::size_t k = 0; k < positions.size(); ++k) {
    auto expected = TensorFile::open(ref.dir / fmt::format("spot-{}.ref.tt", k));
    if (!expected) continue;
    if (auto why = compare_outputs(*expected, *actual, fmt::format("s{}.", k), profile, totals); !why.empty())
      out.fail("incorrect", "eval.timed_output",
               fmt::format("timed call {} returned a wrong result (outputs of timed calls are checked): {}", positions[k], why));
  }
}

std::optional<double> number(const Json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

void fill_timing(const Json& timed, Verdict& v) {
  if (v.status != "correct") {
    v.timing_note = "not timed: the candidate is not correct";
    return;
  }
  const Json stats = timed.value("stats", Json());
  if (!stats.is_object()) {
    v.timing_note = v.device.rfind("cuda", 0) == 0 ? "timing disabled"
                                                   : "not timed on the CPU: the Triton interpreter's speed means nothing";
    return;
  }
  v.runtime_stats = stats;
  v.runtime_ms = number(stats, "median_ms");
  if (stats.value("timed_to", std::string()) == "device")
    v.timing_note = "work outside the calling stream: timed to the device's end, less the host round trip";
  if (stats.contains("exclusive") && stats["exclusive"] == false)
    v.timing_note += std::string(v.timing_note.empty() ? "" : "; ") +
                     "timed while other work held the GPU (a neighbour hung past the lock wait): noisier than usual";
  if (const Json cov = timed.value("coverage", Json()); cov.is_object()) v.coverage = number(cov, "coverage");
}

}  // namespace

void apply_reference_timing(const Json& timing, Verdict& v) {
  if (!v.runtime_ms || !timing.is_object()) return;
  v.ref_eager_ms = number(timing.value("eager", Json()), "median_ms");
  v.ref_compile_ms = number(timing.value("compile", Json()), "median_ms");
  if (timing.contains("error"))
    v.timing_note += std::string(v.timing_note.empty() ? "" : "; ") +
                     "the reference could not be timed: " + timing.value("error", std::string());
  if (*v.runtime_ms > 0) {
    if (v.ref_eager_ms) v.speedup_eager = *v.ref_eager_ms / *v.runtime_ms;
    if (v.ref_compile_ms) v.speedup_compile = *v.ref_compile_ms / *v.runtime_ms;
  }
}

int status_rank(std::string_view status) {
  const auto it = std::find(kStatuses.begin(), kStatuses.end(), status);
  return static_cast<int>(it - kStatuses.begin());
}

void judge(const Reply& reply, const Reference& reference, const std::filesystem::path& job_dir, std::string_view profile,
           Verdict& verdict) {
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
  verdict.trials = static_cast<int>(trials.size());
  observe(trials, out);
  const Json timed = body.value("timed", Json::object());
  if (timed.value("threads_left", 0) > 0)
    out.fail("hack", "runtime.thread", "a timed call returned with threads still running");
  ErrorTotals totals;
  compare_trials(trials, reference, job_dir, profile, out, totals);
  if (body.value("ok", false)) {
    compare_spots(timed, reference, job_dir, profile, out, totals);
  } else {
    worker_failure(body, out);
  }
  verdict.max_abs_err = totals.abs;
  verdict.max_rel_err = totals.rel;
  verdict.correct = verdict.status == "correct";
  if (verdict.correct) verdict.message = fmt::format("correct on {} trials and the timed calls' spot checks", trials.size());
  fill_timing(timed, verdict);
}


}  // namespace tritium::exec

namespace tritium {

const std::vector<std::string>& verdict_statuses() {
  static const std::vector<std::string> all(exec::kStatuses.begin(), exec::kStatuses.end());
  return all;
}

}  // namespace tritium
