// tritium data sft: SFT JSONL {prompt, response} of verified traces (docs/data.md), from tasks with
// reference solutions (tritium synth --with-solutions) or from {task, response} sets. The work is
// workflow::build_sft_data; this file is its flags and its printing.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"

namespace tritium::cli {
namespace {

struct DataOptions {
  workflow::SftDataOptions data;
  bool no_evaluate = false, json = false;
  EngineFlags engine;
};

int run_data_sft(DataOptions& o) {
  o.data.evaluate = !o.no_evaluate;
  o.data.engine = o.engine.options();
  auto stats = workflow::build_sft_data(o.data, listener());
  if (!stats) return workflow_failure(stats.error());
  const Json& s = *stats;
  if (o.json) {
    print_json(s);
  } else {
    std::cout << fmt::format("{} of {} examples kept in {}{}\n", s["kept"].get<int>(), s["candidates"].get<int>(),
                             o.data.out,
                             o.no_evaluate ? " (verified statically only)" : " (verified and evaluated correct)");
    for (const auto& [why, n] : s["dropped"].items())
      std::cout << fmt::format("  dropped {:>5}  {}\n", n.get<int>(), why);
  }
  return s["kept"].get<int>() == 0 ? kFailures : kOk;
}

}  // namespace

void add_data_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<DataOptions>();
  auto* data = root.add_subcommand("data", "Build training data");
  auto* sft = data->add_subcommand("sft",
                                   "SFT JSONL {prompt, response} of verified traces: from tasks with reference "
                                   "solutions (tritium synth --with-solutions), or from --responses");
  sft->add_option("--tasks", o->data.tasks, "Task suite (with meta.solution and meta.plan unless --responses)")
      ->required();
  sft->add_option("--responses", o->data.responses,
                  "JSONL of {\"task_id\" | \"task\", \"response\"} to verify instead");
  sft->add_option("--out", o->data.out, "SFT JSONL to write")->required();
  sft->add_flag("--no-evaluate", o->no_evaluate, "Keep what passes the static verifier, without running the engine");
  sft->add_flag("--json", o->json, "Print the statistics as JSON");
  add_engine_flags(sft, o->engine);
  data->require_subcommand(1);
  commands.push_back({sft, [o] { return run_data_sft(*o); }});
}

}  // namespace tritium::cli
