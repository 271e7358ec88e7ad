// build_sft_data: SFT examples {prompt, response} of traces that verify statically and, unless told
// otherwise, evaluate correct (docs/data.md).
#include <fmt/format.h>

#include <fstream>
#include <map>

#include "tritium/llm.h"
#include "tritium/workflow.h"

namespace tritium::workflow {
namespace {

struct Candidate {
  Task task;
  std::string response;
};
using Dropped = std::map<std::string, std::size_t>;

// The code without its module docstring and the blank lines after it. The synthesizer's solutions
// open with one that restates the plan, which the trace already gives in <think>: 11% of the
// response tokens of a 440-task difficulty 1-4 set (SmolLM2's tokenizer), sampled in every rollout.
std::string without_module_docstring(const std::string& code) {
  constexpr std::string_view kQuotes = "\"\"\"";
  if (!code.starts_with(kQuotes)) return code;
  const std::size_t close = code.find(kQuotes, kQuotes.size());
  if (close == std::string::npos) return code;
  const std::size_t body = code.find_first_not_of('\n', close + kQuotes.size());
  return body == std::string::npos ? std::string() : code.substr(body);
}

// Each task's reference solution and plan as a response.
std::vector<Candidate> reference_traces(const Suite& suite, Dropped& dropped) {
  std::vector<Candidate> out;
  for (const auto& t : suite.tasks) {
    if (t.meta.contains("solution") && t.meta["solution"].is_string() && t.meta.contains("plan"))
      out.push_back({t, format_response(t.meta["plan"].get<std::string>(),
                                        without_module_docstring(t.meta["solution"].get<std::string>()))});
    else
      ++dropped["no_solution"];
  }
  return out;
}

// The lines of a responses file; a bad line is told and dropped, never a stop.
Result<std::vector<Candidate>> given_responses(const std::string& path, const Suite& suite, Dropped& dropped,
                                               const Listener& listener) {
  auto text = read_file(path);
  if (!text) return text.error();
  std::vector<Candidate> out;
  for (const auto& [line_no, line] : jsonl_lines(*text)) {
    const std::string where = fmt::format("{}:{}", path, line_no);
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("response") || !j["response"].is_string()) {
      listener.tell(fmt::format("warning: {}: expected {{\"task_id\" | \"task\", \"response\"}}", where));
      ++dropped["bad_line"];
      continue;
    }
    j.erase("code");
    auto item = eval_item_from_json(j, suite, where);
    if (!item) {
      listener.tell("warning: " + item.error().message);
      ++dropped["bad_line"];
      continue;
    }
    out.push_back({item->task, item->code});
  }
  return out;
}

// The candidates the engine judges correct; the others counted by status.
Result<std::vector<const Candidate*>> judged_correct(const std::vector<const Candidate*>& kept,
                                                     const EngineOptions& options, Dropped& dropped,
                                                     const Listener& listener) {
  auto engine = Engine::create(options);
  if (!engine) return engine.error();
  std::vector<EvalItem> items;
  for (const auto* c : kept) items.push_back({c->task.id, c->task, c->response, true});
  const auto verdicts = (*engine)->evaluate(items, [&](std::size_t done, std::size_t total, const Verdict& v) {
    listener.step(done, total, v.candidate_id);
  });
  std::vector<const Candidate*> correct;
  for (std::size_t i = 0; i < verdicts.size(); ++i)
    if (verdicts[i].correct)
      correct.push_back(kept[i]);
    else
      ++dropped[verdicts[i].status];
  return correct;
}

}  // namespace

Result<SftDataOptions> sft_data_options_from_json(const Json& json) {
  SftDataOptions o;
  Json engine;
  OptionReader r(json, "SFT data options");
  r.read("tasks", o.tasks).read("responses", o.responses).read("out", o.out).read("evaluate", o.evaluate);
  r.read("engine", engine);
  if (auto e = r.done()) return *e;
  if (o.tasks.empty() || o.out.empty()) return Error{"SFT data options: \"tasks\" and \"out\" are required"};
  auto engine_options = engine_options_from_json(engine);
  if (!engine_options) return engine_options.error();
  o.engine = *engine_options;
  return o;
}

Result<Json> build_sft_data(const SftDataOptions& o, const Listener& listener) {
  auto suite = load_suite(o.tasks);
  if (!suite) return suite.error();
  Dropped dropped;
  auto candidates = o.responses.empty() ? Result<std::vector<Candidate>>(reference_traces(*suite, dropped))
                                        : given_responses(o.responses, *suite, dropped, listener);
  if (!candidates) return candidates.error();
  std::vector<const Candidate*> kept;
  for (const auto& c : *candidates) {  // the static verifier first: cheap, and it catches cheats
    const auto v = verify_response(c.response, c.task.source);
    if (v.valid())
      kept.push_back(&c);
    else
      ++dropped[v.status];
  }
  if (o.evaluate && !kept.empty()) {
    auto correct = judged_correct(kept, o.engine, dropped, listener);
    if (!correct) return correct.error();
    kept = std::move(*correct);
  }
  std::ofstream out(o.out);
  for (const auto* c : kept) out << sft_example(c->task, c->response).dump() << '\n';
  out.close();
  if (!out) return Error{fmt::format("could not write {}", o.out)};
  return Json{{"out", o.out},
              {"candidates", candidates->size()},
              {"kept", kept.size()},
              {"dropped", dropped},
              {"evaluated", o.evaluate}};
}

}  // namespace tritium::workflow
