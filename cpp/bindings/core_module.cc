// tritium._core: the library's calls, for Python. Translation only: documents cross as JSON text
// (the same documents the CLI prints with --json), so the two faces cannot drift apart.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "tritium/exec.h"
#include "tritium/llm.h"
#include "tritium/metrics.h"
#include "tritium/reward.h"
#include "tritium/pyast.h"
#include "tritium/synth.h"
#include "tritium/verify.h"

namespace nb = nanobind;

namespace {

std::string load_suite_json(const std::string& path, bool with_source) {
  auto suite = tritium::load_suite(path);
  if (!suite) throw std::invalid_argument(suite.error().message);
  return tritium::to_json(*suite, with_source).dump();
}

std::string check_suite_json(const std::string& path, const std::string& device, double timeout_s,
                             unsigned seed, const std::string& python) {
  auto suite = tritium::load_suite(path);
  if (!suite) throw std::invalid_argument(suite.error().message);
  tritium::RunnerOptions options{python, device, timeout_s, seed};
  auto check = tritium::check_suite(*suite, options);
  if (!check) throw std::runtime_error(check.error().message);
  return tritium::to_json(*check).dump();
}

nb::dict parse_python(nb::bytes source, bool with_facts) {
  const std::string_view text(source.c_str(), source.size());
  tritium::pyast::Parsed parsed;
  {
    nb::gil_scoped_release release;
    parsed = tritium::pyast::parse(text);
  }
  nb::dict out;
  out["ok"] = parsed.ok();
  if (parsed.error) {
    out["line"] = parsed.error->line;
    out["col"] = parsed.error->col;
    out["message"] = parsed.error->message;
  } else if (with_facts) {
    out["facts"] = tritium::pyast::facts(parsed.tree);
  }
  return out;
}

std::string verify_json(const std::string& text, bool is_response, const std::string& task_source) {
  const auto v = is_response ? tritium::verify_response(text, task_source) : tritium::verify_code(text, task_source);
  return tritium::to_json(v).dump();
}

std::string extract_json(const std::string& response) {
  return tritium::to_json(tritium::extract_response(response)).dump();
}

// Synthesis for Python: options as JSON (SynthOptions' fields; "ops" a comma list or a list of
// category names; "size" "cpu" or "gpu"), tasks back as suite JSON with their sources.
std::string synthesize_json(const std::string& options_json) {
  const auto j = tritium::Json::parse(options_json);
  tritium::synth::SynthOptions o;
  o.count = j.value("count", o.count);
  o.min_difficulty = j.value("min_difficulty", o.min_difficulty);
  o.max_difficulty = j.value("max_difficulty", o.max_difficulty);
  o.seed = j.value("seed", o.seed);
  o.threads = j.value("threads", o.threads);
  const std::string size = j.value("size", std::string("cpu"));
  if (size != "cpu" && size != "gpu") throw std::invalid_argument("size must be 'cpu' or 'gpu', not '" + size + "'");
  o.size = size == "gpu" ? tritium::synth::SizeProfile::gpu : tritium::synth::SizeProfile::cpu;
  auto categories = tritium::synth::parse_categories(j.value("ops", std::string()));
  if (!categories) throw std::invalid_argument(categories.error().message);
  o.categories = *categories;
  std::vector<tritium::synth::SynthTask> tasks;
  {
    nb::gil_scoped_release release;
    auto made = tritium::synth::synthesize(o);
    if (!made) throw std::invalid_argument(made.error().message);
    tasks = std::move(*made);
  }
  tritium::Json out = tritium::Json::array();
  for (const auto& t : tasks) out.push_back(tritium::to_json(t.task, true));
  return out.dump();
}

std::string synth_stats_json(const std::string& tasks_json, const std::string& ops) {
  std::vector<tritium::Task> tasks;
  for (const auto& t : tritium::Json::parse(tasks_json)) {
    tritium::Task task;
    task.id = t.value("id", std::string());
    task.meta = t.value("meta", tritium::Json::object());
    tasks.push_back(std::move(task));
  }
  auto categories = tritium::synth::parse_categories(ops);
  if (!categories) throw std::invalid_argument(categories.error().message);
  return tritium::synth::coverage_stats(tasks, *categories).dump();
}

// Rewards for Python: verdicts (a JSON list) and a reward config (a JSON object, absent keys
// default) in; [{reward, advantage}] out, grouped by each verdict's meta.group.
std::vector<tritium::Verdict> verdicts_from(const std::string& verdicts_json) {
  std::vector<tritium::Verdict> verdicts;
  for (const auto& v : tritium::Json::parse(verdicts_json)) verdicts.push_back(tritium::verdict_from_json(v));
  return verdicts;
}

std::string rewards_json(const std::string& verdicts_json, const std::string& config_json) {
  auto config = tritium::reward_config_from_json(tritium::Json::parse(config_json));
  if (!config) throw std::invalid_argument(config.error().message);
  tritium::Json out = tritium::Json::array();
  for (const auto& s : tritium::score_batch(verdicts_from(verdicts_json), *config)) out.push_back(tritium::to_json(s));
  return out.dump();
}

std::string reward_config_json(const std::string& config_json) {
  auto config = tritium::reward_config_from_json(tritium::Json::parse(config_json));
  if (!config) throw std::invalid_argument(config.error().message);
  return tritium::to_json(*config).dump();
}

std::vector<double> token_advantages(const std::string& response, const std::vector<std::pair<std::size_t, std::size_t>>& offsets,
                                     double plan, double code) {
  std::vector<tritium::TextSpan> spans;
  for (const auto& [begin, end] : offsets) spans.push_back({begin, end});
  return tritium::response_token_advantages(response, spans, {plan, code});
}

std::string metrics_json(const std::string& verdicts_json, const std::vector<int>& ks, const std::vector<double>& ps) {
  for (int k : ks)
    if (k < 1) throw std::invalid_argument("each k must be at least 1");
  return tritium::to_json(tritium::compute_metrics(verdicts_from(verdicts_json), {ks, ps})).dump();
}

double pass_at_k(int n, int c, int k) {
  if (k < 1 || k > n || c < 0 || c > n) throw std::invalid_argument("pass_at_k needs 1 <= k <= n and 0 <= c <= n");
  return tritium::pass_at_k(n, c, k);
}

// The engine for Python: options and items as JSON documents, verdicts back as one.
class PyEngine {
 public:
  explicit PyEngine(const std::string& options_json) {
    const auto j = tritium::Json::parse(options_json);
    tritium::EngineOptions o;
    o.python = j.value("python", o.python);
    o.device = j.value("device", o.device);
    o.profile = j.value("profile", o.profile);
    o.trials = j.value("trials", o.trials);
    o.jobs = j.value("jobs", o.jobs);
    o.timeout_s = j.value("timeout_s", o.timeout_s);
    if (j.contains("seed") && j["seed"].is_number_unsigned()) o.seed = j["seed"].get<std::uint64_t>();
    o.static_check = j.value("static_check", o.static_check);
    o.timing = j.value("timing", o.timing);
    o.cache = j.value("cache", o.cache);
    o.work_dir = j.value("work_dir", o.work_dir);
    o.memory_gb = j.value("memory_gb", o.memory_gb);
    o.reference_cache_gb = j.value("reference_cache_gb", o.reference_cache_gb);
    o.unsafe_sandbox = j.value("unsafe_sandbox", o.unsafe_sandbox);
    auto engine = tritium::Engine::create(o);
    if (!engine) throw std::runtime_error(engine.error().message);
    engine_ = std::move(*engine);
  }

  // Items that cannot be used get an "error" verdict in their place; the rest are evaluated.
  std::string evaluate_json(const std::string& items_json) {
    tritium::Json out = tritium::Json::array();
    for (const auto& v : tritium::evaluate_items(*engine_, tritium::Json::parse(items_json))) out.push_back(tritium::to_json(v));
    return out.dump();
  }

  std::string info_json() const { return engine_->info().dump(); }

 private:
  std::unique_ptr<tritium::Engine> engine_;
};

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "Tritium's C++ core";
  m.def("version", &tritium::version);
  m.def("load_suite_json", &load_suite_json, nb::arg("path"), nb::arg("with_source") = false);
  m.def("check_suite_json", &check_suite_json, nb::arg("path"), nb::arg("device"), nb::arg("timeout_s"),
        nb::arg("seed"), nb::arg("python"), nb::call_guard<nb::gil_scoped_release>());
  m.def("parse_python", &parse_python, nb::arg("source"), nb::arg("with_facts") = false,
        "Parses Python source bytes: {ok, line?, col?, message?, facts?}");
  m.def("verify_json", &verify_json, nb::arg("text"), nb::arg("is_response"), nb::arg("task_source") = "",
        nb::call_guard<nb::gil_scoped_release>());
  m.def("synthesize_json", &synthesize_json, nb::arg("options_json"));
  m.def("synth_stats_json", &synth_stats_json, nb::arg("tasks_json"), nb::arg("ops") = "");
  m.def("extract_json", &extract_json, nb::arg("response"), nb::call_guard<nb::gil_scoped_release>());
  m.def("rewards_json", &rewards_json, nb::arg("verdicts_json"), nb::arg("config_json") = "{}");
  m.def("reward_config_json", &reward_config_json, nb::arg("config_json"));
  m.def("token_advantages", &token_advantages, nb::arg("response"), nb::arg("offsets"), nb::arg("plan"), nb::arg("code"));
  m.def("metrics_json", &metrics_json, nb::arg("verdicts_json"), nb::arg("ks"), nb::arg("ps"));
  m.def("pass_at_k", &pass_at_k, nb::arg("n"), nb::arg("c"), nb::arg("k"));
  m.def("kernel_prompt", [](const std::string& source) { return tritium::kernel_prompt(source); }, nb::arg("task_source"));
  m.def("task_in_prompt", [](const std::string& prompt) { return tritium::task_in_prompt(prompt); }, nb::arg("prompt"));
  m.def("format_response", [](const std::string& plan, const std::string& code) { return tritium::format_response(plan, code); },
        nb::arg("plan"), nb::arg("code"));
  nb::class_<PyEngine>(m, "Engine")
      .def(nb::init<const std::string&>(), nb::arg("options_json"), nb::call_guard<nb::gil_scoped_release>())
      .def("evaluate_json", &PyEngine::evaluate_json, nb::arg("items_json"), nb::call_guard<nb::gil_scoped_release>())
      .def("info_json", &PyEngine::info_json);
}
