// tritium data sft: SFT JSONL {prompt, response} of verified traces (docs/data.md), from tasks with
// reference solutions (tritium synth --with-solutions) or from {task, response} sets.
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "cli.h"
#include "tritium/exec.h"
#include "tritium/llm.h"

namespace tritium::cli {
namespace {

struct DataOptions {
  std::string tasks, responses, out;
  bool no_evaluate = false, json = false;
  EngineFlags engine;
};

struct Candidate {
  Task task;
  std::string response;
};

// The candidates: each task's reference solution and plan, or the lines of --responses.
Result<std::vector<Candidate>> gather(const DataOptions& o, const Suite& suite, std::map<std::string, std::size_t>& dropped) {
  std::vector<Candidate> out;
  if (o.responses.empty()) {
    for (const auto& t : suite.tasks) {
      if (t.meta.contains("solution") && t.meta["solution"].is_string() && t.meta.contains("plan"))
        out.push_back({t, format_response(t.meta["plan"].get<std::string>(), t.meta["solution"].get<std::string>())});
      else
        ++dropped["no_solution"];
    }
    return out;
  }
  auto text = read_file(o.responses);
  if (!text) return text.error();
  for (const auto& [line_no, line] : jsonl_lines(*text)) {
    const std::string where = fmt::format("{}:{}", o.responses, line_no);
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("response") || !j["response"].is_string()) {
      std::cerr << fmt::format("tritium: warning: {}: expected {{\"task_id\" | \"task\", \"response\"}}\n", where);
      ++dropped["bad_line"];
      continue;
    }
    j.erase("code");
    auto item = eval_item_from_json(j, suite, where);
    if (!item) {
      std::cerr << fmt::format("tritium: warning: {}\n", item.error().message);
      ++dropped["bad_line"];
      continue;
    }
    out.push_back({item->task, item->code});
  }
  return out;
}

int run_data_sft(const DataOptions& o) {
  auto suite = load_suite(o.tasks);
  if (!suite) return fail(kUsage, suite.error().message);
  std::map<std::string, std::size_t> dropped;
  auto candidates = gather(o, *suite, dropped);
  if (!candidates) return fail(kUsage, candidates.error().message);
  std::vector<const Candidate*> kept;
  for (const auto& c : *candidates) {  // the static verifier first: cheap, and it catches cheats
    const auto v = verify_response(c.response, c.task.source);
    if (v.valid()) kept.push_back(&c);
    else ++dropped[v.status];
  }
  if (!o.no_evaluate && !kept.empty()) {
    const EngineOptions engine_options = o.engine.options();
    auto engine = Engine::create(engine_options);
    if (!engine) return engine_failure(engine_options, engine.error());
    std::vector<EvalItem> items;
    for (const auto* c : kept) items.push_back({c->task.id, c->task, c->response, true, Json::object()});
    Progress progress(items.size());
    const auto verdicts = (*engine)->evaluate(items, [&](std::size_t done, std::size_t, const Verdict& v) {
      progress.update(done, v.candidate_id);
    });
    progress.clear();
    std::vector<const Candidate*> correct;
    for (std::size_t i = 0; i < verdicts.size(); ++i)
      if (verdicts[i].status == "correct") correct.push_back(kept[i]);
      else ++dropped[verdicts[i].status];
    kept = std::move(correct);
  }
  std::ofstream out(o.out);
  for (const auto* c : kept) out << sft_example(c->task, c->response).dump() << '\n';
  out.close();
  if (!out) return fail(kUsage, fmt::format("could not write {}", o.out));
  const Json stats = {{"out", o.out}, {"candidates", candidates->size()}, {"kept", kept.size()},
                      {"dropped", dropped}, {"evaluated", !o.no_evaluate}};
  if (o.json) {
    print_json(stats);
  } else {
    std::cout << fmt::format("{} of {} examples kept in {}{}\n", kept.size(), candidates->size(), o.out,
                             o.no_evaluate ? " (verified statically only)" : " (verified and evaluated correct)");
    for (const auto& [why, n] : dropped) std::cout << fmt::format("  dropped {:>5}  {}\n", n, why);
  }
  return kept.empty() ? kFailures : kOk;
}

}  // namespace

void add_data_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<DataOptions>();
  auto* data = root.add_subcommand("data", "Build training data");
  auto* sft = data->add_subcommand("sft", "SFT JSONL {prompt, response} of verified traces: from tasks with reference "
                                          "solutions (tritium synth --with-solutions), or from --responses");
  sft->add_option("--tasks", o->tasks, "Task suite (with meta.solution and meta.plan unless --responses)")->required();
  sft->add_option("--responses", o->responses, "JSONL of {\"task_id\" | \"task\", \"response\"} to verify instead");
  sft->add_option("--out", o->out, "SFT JSONL to write")->required();
  sft->add_flag("--no-evaluate", o->no_evaluate, "Keep what passes the static verifier, without running the engine");
  sft->add_flag("--json", o->json, "Print the statistics as JSON");
  add_engine_flags(sft, o->engine);
  data->require_subcommand(1);
  commands.push_back({sft, [o] { return run_data_sft(*o); }});
}

}  // namespace tritium::cli
