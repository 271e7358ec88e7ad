// Verdicts: their statuses, and their JSON (DESIGN.md's contract) both ways: the cache stores them as JSON.
#include "tritium/verdict.h"

namespace tritium {
namespace {

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::optional<double> number_at(const Json& j, const char* key) {
  if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& verdict_statuses() {
  static const std::vector<std::string> all = {"invalid_syntax", "invalid_functionality",
                                               "hack",           "compile_error",
                                               "runtime_error",  "timeout",
                                               "incorrect",      "correct",
                                               "error"};
  return all;
}

Verdict error_verdict(const std::string& candidate_id, const std::string& message) {
  Verdict v;
  v.candidate_id = candidate_id;
  v.status = "error";
  v.message = message;
  return v;
}

Json to_json(const Verdict& v) {
  Json findings = Json::array();
  for (const auto& f : v.findings) findings.push_back(to_json(f));
  return {{"candidate_id", v.candidate_id},
          {"task_id", v.task_id},
          {"level", v.level ? Json(*v.level) : Json(nullptr)},
          {"status", v.status},
          {"message", v.message},
          {"findings", findings},
          {"correct", v.correct},
          {"max_abs_err", optional_number(v.max_abs_err)},
          {"max_rel_err", optional_number(v.max_rel_err)},
          {"runtime_ms", optional_number(v.runtime_ms)},
          {"ref_eager_ms", optional_number(v.ref_eager_ms)},
          {"ref_compile_ms", optional_number(v.ref_compile_ms)},
          {"speedup_eager", optional_number(v.speedup_eager)},
          {"speedup_compile", optional_number(v.speedup_compile)},
          {"coverage", optional_number(v.coverage)},
          {"runtime_stats", v.runtime_stats},
          {"timing_note", v.timing_note},
          {"below_timing_floor", v.below_timing_floor},
          {"compile_below_timing_floor", v.compile_below_timing_floor},
          {"triton_launches", v.triton_launches},
          {"kernels", v.kernels},
          {"device", v.device},
          {"profile", v.profile},
          {"trials", v.trials},
          {"interpreter_limit", v.interpreter_limit},
          {"unsafe", v.unsafe},
          {"stderr_tail", v.stderr_tail},
          {"cache_hit", v.cache_hit},
          {"eval_ms", v.eval_ms},
          {"phases_ms", v.phases_ms},
          {"sandbox", v.sandbox},
          {"meta", v.meta}};
}

Verdict verdict_from_json(const Json& j) {
  Verdict v;
  v.candidate_id = j.value("candidate_id", std::string());
  v.task_id = j.value("task_id", std::string());
  if (j.contains("level") && j["level"].is_number_integer()) v.level = j["level"].get<int>();
  v.status = j.value("status", std::string("error"));
  v.message = j.value("message", std::string());
  for (const auto& f : j.value("findings", Json::array()))
    v.findings.push_back({f.value("rule", std::string()), f.value("severity", std::string("error")),
                          f.value("line", 0u), f.value("col", 0u), f.value("message", std::string())});
  v.correct = j.value("correct", false);
  v.max_abs_err = number_at(j, "max_abs_err");
  v.max_rel_err = number_at(j, "max_rel_err");
  v.runtime_ms = number_at(j, "runtime_ms");
  v.ref_eager_ms = number_at(j, "ref_eager_ms");
  v.ref_compile_ms = number_at(j, "ref_compile_ms");
  v.speedup_eager = number_at(j, "speedup_eager");
  v.speedup_compile = number_at(j, "speedup_compile");
  v.coverage = number_at(j, "coverage");
  v.runtime_stats = j.value("runtime_stats", Json());
  v.timing_note = j.value("timing_note", std::string());
  v.below_timing_floor = j.value("below_timing_floor", false);
  v.compile_below_timing_floor = j.value("compile_below_timing_floor", false);
  v.triton_launches = j.value("triton_launches", 0);
  v.kernels = j.value("kernels", std::vector<std::string>{});
  v.device = j.value("device", std::string());
  v.profile = j.value("profile", std::string());
  v.trials = j.value("trials", 0);
  v.interpreter_limit = j.value("interpreter_limit", false);
  v.unsafe = j.value("unsafe", false);
  v.stderr_tail = j.value("stderr_tail", std::string());
  v.cache_hit = j.value("cache_hit", false);
  v.eval_ms = j.value("eval_ms", 0.0);
  v.phases_ms = j.value("phases_ms", Json());
  v.sandbox = j.value("sandbox", Json());
  v.meta = j.value("meta", Json::object());
  return v;
}

}  // namespace tritium
