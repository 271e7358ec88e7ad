// tritium._core: the library's calls, for Python. Translation only: documents cross as JSON text
// (the same documents the CLI prints with --json), so the two faces cannot drift apart.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <iostream>
#include <stdexcept>

#include "tritium/exec.h"
#include "tritium/llm.h"
#include "tritium/metrics.h"
#include "tritium/pyast.h"
#include "tritium/reward.h"
#include "tritium/synth.h"
#include "tritium/verify.h"
#include "tritium/workflow.h"

namespace nb = nanobind;

namespace {

using tritium::Result;

// Errors cross as ValueError (the input is wrong) or RuntimeError (the machine cannot do it).
template <class T>
T value_or_raise(Result<T> result) {
  if (result) return std::move(*result);
  if (result.error().environment) throw std::runtime_error(result.error().message);
  throw std::invalid_argument(result.error().message);
}

std::string load_suite_json(const std::string& path, bool with_source) {
  return tritium::to_json(value_or_raise(tritium::load_suite(path)), with_source).dump();
}

std::string check_suite_json(const std::string& path, const std::string& device, double timeout_s, unsigned seed,
                             const std::string& python) {
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

std::string verify_item_json(const std::string& item_json, const std::string& task_source) {
  return tritium::to_json(value_or_raise(tritium::verify_item(tritium::Json::parse(item_json), task_source))).dump();
}

std::string extract_json(const std::string& response) {
  return tritium::to_json(tritium::extract_response(response)).dump();
}

// Synthesis: SynthOptions' JSON in (synth_options_from_json), tasks back as suite JSON with their sources.
std::string synthesize_json(const std::string& options_json) {
  const auto options = value_or_raise(tritium::synth::synth_options_from_json(tritium::Json::parse(options_json)));
  const auto tasks = value_or_raise(tritium::synth::synthesize(options));
  tritium::Json out = tritium::Json::array();
  for (const auto& t : tasks) out.push_back(tritium::to_json(t.task, true));
  return out.dump();
}

// A workflow: its options' JSON in, its document out; notes on stderr as the CLI prints them.
template <class Options>
std::string run_workflow(Result<Options> (*parse)(const tritium::Json&),
                         Result<tritium::Json> (*run)(const Options&, const tritium::workflow::Listener&),
                         const std::string& options_json) {
  const auto options = value_or_raise(parse(tritium::Json::parse(options_json)));
  tritium::workflow::Listener listener;
  listener.note = [](const std::string& line) { std::cerr << "tritium: " << line << std::endl; };
  return value_or_raise(run(options, listener)).dump();
}

Result<tritium::Json> suite_document(const tritium::workflow::SuiteOptions& options,
                                     const tritium::workflow::Listener& listener) {
  auto run = tritium::workflow::make_suite(options, listener);
  if (!run) return run.error();
  tritium::Json tasks = tritium::Json::array();
  for (const auto& t : run->tasks) tasks.push_back(tritium::to_json(t, true));
  return tritium::Json{{"tasks", tasks}, {"report", run->report}, {"ok", run->ok}};
}

Result<tritium::Json> report_document(const tritium::ReportOptions& options,
                                      const tritium::workflow::Listener& listener) {
  auto runs = tritium::make_report(options, listener.note);
  if (!runs) return runs.error();
  return tritium::report_json(*runs);
}

std::string synth_stats_json(const std::string& tasks_json, const std::string& ops) {
  std::vector<tritium::Task> tasks;
  for (const auto& t : tritium::Json::parse(tasks_json)) {
    tritium::Task task;
    task.id = t.value("id", std::string());
    task.meta = t.value("meta", tritium::Json::object());
    tasks.push_back(std::move(task));
  }
  return tritium::synth::coverage_stats(tasks, value_or_raise(tritium::synth::parse_categories(ops))).dump();
}

// Rewards for Python: verdicts (a JSON list) and a reward config (a JSON object, absent keys
// default) in; [{reward, advantage}] out, grouped by each verdict's meta.group.
std::vector<tritium::Verdict> verdicts_from(const std::string& verdicts_json) {
  std::vector<tritium::Verdict> verdicts;
  for (const auto& v : tritium::Json::parse(verdicts_json)) verdicts.push_back(tritium::verdict_from_json(v));
  return verdicts;
}

std::string rewards_json(const std::string& verdicts_json, const std::string& config_json) {
  const auto config = value_or_raise(tritium::reward_config_from_json(tritium::Json::parse(config_json)));
  tritium::Json out = tritium::Json::array();
  for (const auto& s : tritium::score_batch(verdicts_from(verdicts_json), config)) out.push_back(tritium::to_json(s));
  return out.dump();
}

std::string reward_config_json(const std::string& config_json) {
  return tritium::to_json(value_or_raise(tritium::reward_config_from_json(tritium::Json::parse(config_json)))).dump();
}

std::vector<double> token_advantages(const std::string& response,
                                     const std::vector<std::pair<std::size_t, std::size_t>>& offsets, double plan,
                                     double code) {
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
    const auto options = value_or_raise(tritium::engine_options_from_json(tritium::Json::parse(options_json)));
    auto engine = tritium::Engine::create(options);
    if (!engine) throw std::runtime_error(engine.error().message);
    engine_ = std::move(*engine);
  }

  // Items that cannot be used get an "error" verdict in their place; the rest are evaluated.
  // `progress` (None, or a callable of done, total and the verdict's status) is called from the
  // engine's threads as verdicts complete: a handle, since the call runs without the GIL, which
  // each call takes. An exception it raises is reported as unraisable, never ending the batch.
  std::string evaluate_json(const std::string& items_json, nb::handle progress) {
    tritium::EvalProgress report;
    if (!progress.is_none())
      report = [progress](std::size_t done, std::size_t total, const tritium::Verdict& v) {
        nb::gil_scoped_acquire gil;
        try {
          progress(done, total, v.status);
        } catch (nb::python_error& e) {
          e.discard_as_unraisable("tritium.Engine.evaluate's progress");
        }
      };
    tritium::Json out = tritium::Json::array();
    for (const auto& v : tritium::evaluate_items(*engine_, tritium::Json::parse(items_json), {}, report))
      out.push_back(tritium::to_json(v));
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
  m.def("verify_item_json", &verify_item_json, nb::arg("item_json"), nb::arg("task_source") = "",
        nb::call_guard<nb::gil_scoped_release>());
  m.def("synthesize_json", &synthesize_json, nb::arg("options_json"), nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "make_suite_json",
      [](const std::string& o) { return run_workflow(tritium::workflow::suite_options_from_json, suite_document, o); },
      nb::arg("options_json"), nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "sft_data_json",
      [](const std::string& o) {
        return run_workflow(tritium::workflow::sft_data_options_from_json, tritium::workflow::build_sft_data, o);
      },
      nb::arg("options_json"), nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "bench_json",
      [](const std::string& o) {
        return run_workflow(tritium::workflow::sampling_options_from_json, tritium::workflow::run_bench, o);
      },
      nb::arg("options_json"), nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "distill_json",
      [](const std::string& o) {
        return run_workflow(tritium::workflow::sampling_options_from_json, tritium::workflow::run_distill, o);
      },
      nb::arg("options_json"), nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "report_json",
      [](const std::string& o) { return run_workflow(tritium::report_options_from_json, report_document, o); },
      nb::arg("options_json"), nb::call_guard<nb::gil_scoped_release>());
  m.def("synth_stats_json", &synth_stats_json, nb::arg("tasks_json"), nb::arg("ops") = "");
  m.def("extract_json", &extract_json, nb::arg("response"), nb::call_guard<nb::gil_scoped_release>());
  m.def("rewards_json", &rewards_json, nb::arg("verdicts_json"), nb::arg("config_json") = "{}");
  m.def("reward_config_json", &reward_config_json, nb::arg("config_json"));
  m.def("token_advantages", &token_advantages, nb::arg("response"), nb::arg("offsets"), nb::arg("plan"),
        nb::arg("code"));
  m.def("metrics_json", &metrics_json, nb::arg("verdicts_json"), nb::arg("ks"), nb::arg("ps"));
  m.def("pass_at_k", &pass_at_k, nb::arg("n"), nb::arg("c"), nb::arg("k"));
  m.def(
      "kernel_prompt", [](const std::string& source) { return tritium::kernel_prompt(source); },
      nb::arg("task_source"));
  m.def("task_in_prompt", [](const std::string& prompt) { return tritium::task_in_prompt(prompt); }, nb::arg("prompt"));
  m.def(
      "format_response",
      [](const std::string& plan, const std::string& code) { return tritium::format_response(plan, code); },
      nb::arg("plan"), nb::arg("code"));
  nb::class_<PyEngine>(m, "Engine")
      .def(nb::init<const std::string&>(), nb::arg("options_json"), nb::call_guard<nb::gil_scoped_release>())
      .def("evaluate_json", &PyEngine::evaluate_json, nb::arg("items_json"), nb::arg("progress").none() = nb::none(),
           nb::call_guard<nb::gil_scoped_release>())
      .def("info_json", &PyEngine::info_json);
}
