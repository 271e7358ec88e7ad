// tritium synth: synthesize KernelBench-format tasks (CSP-DAG), and `synth stats SUITE`.
// The work is workflow::make_suite; this file is its flags and its printing.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"

namespace tritium::cli {
namespace {

struct SynthCliOptions {
  workflow::SuiteOptions suite;
  std::string difficulty = "1-3", ops, size = "cpu", stats_suite;
  bool json = false;
};

// Where validation reports go: stdout, unless the tasks themselves go there (no --out), which must
// stay a JSONL of tasks and nothing else.
std::ostream& report_stream(const SynthCliOptions& o) { return o.suite.out.empty() ? std::cerr : std::cout; }

void print_validation(const SynthCliOptions& o, const Json& r) {
  if (r.contains("validated"))
    report_stream(o) << fmt::format(
        "validated {} tasks on {}: {} ran, {} failed, {} ill-conditioned (dropped); slowest "
        "forward {:.1f} ms ({:.1f} s)\n",
        r["validated"].get<int>(), r["device"].get<std::string>(), r["validated"].get<int>() - r["failed"].get<int>(),
        r["failed"].get<int>(), r["ill_conditioned"].get<int>(), r["slowest_forward_ms"].get<double>(),
        r["seconds"].get<double>());
  if (r.contains("solutions"))
    report_stream(o) << fmt::format("solutions: {} of {} tasks have one; {} correct under the engine ({})\n",
                                    r["solutions"]["count"].get<int>(), r["solutions"]["of_tasks"].get<int>(),
                                    r["solutions"]["correct"].get<int>(), r["solutions"]["device"].get<std::string>());
}

int run_synth(SynthCliOptions& o) {
  if (auto e = synth::parse_difficulty(o.difficulty, o.suite.synth)) return fail(kUsage, "--" + e->message);
  auto categories = synth::parse_categories(o.ops);
  if (!categories) return fail(kUsage, "--ops: " + categories.error().message);
  o.suite.synth.categories = *categories;
  const auto size = synth::parse_size(o.size);
  if (!size) return fail(kUsage, fmt::format("--size: '{}' is none of cpu, mid, gpu", o.size));
  o.suite.synth.size = *size;
  auto run = workflow::make_suite(o.suite, listener(o.json ? nullptr : &report_stream(o), ""));
  if (!run) return workflow_failure(run.error());
  const Json& r = run->report;
  if (o.suite.out.empty())
    for (const auto& t : run->tasks) print_json(suite_line(t));
  else
    std::cerr << fmt::format("{} tasks in {:.2f} s -> {}\n", r["tasks"].get<int>(), r["synth_seconds"].get<double>(),
                             o.suite.out);
  if (o.json && o.suite.validate)
    report_stream(o) << r.dump() << std::endl;
  else if (!o.json)
    print_validation(o, r);
  return run->ok ? kOk : kFailures;
}

int run_stats(const SynthCliOptions& o) {
  auto suite = load_suite(o.stats_suite);
  if (!suite) return fail(kUsage, suite.error().message);
  auto categories = synth::parse_categories(o.ops);
  if (!categories) return fail(kUsage, "--ops: " + categories.error().message);
  const Json stats = synth::coverage_stats(suite->tasks, *categories);
  if (o.json) {
    print_json(stats);
    return kOk;
  }
  const auto& chi = stats["chi_square"];
  std::cout << fmt::format("{} tasks, {} operator draws over {} operators ({} never drawn)\n",
                           stats["tasks"].get<int>(), stats["op_draws"].get<int>(), stats["ops"].get<int>(),
                           stats["ops_missing"].get<int>());
  std::cout << fmt::format("uniformity: chi-square {:.1f} on {} df, p = {:.3f} ({})\n", chi["statistic"].get<double>(),
                           chi["df"].get<double>(), chi["p_value"].get<double>(),
                           chi["uniform_at_0.01"].get<bool>() ? "consistent with uniform" : "NOT uniform at 0.01");
  std::cout << fmt::format("op pairs (producer -> consumer) covered: {} of {}\n", stats["pairs_covered"].get<int>(),
                           stats["pairs_possible"].get<int>());
  std::cout << "difficulty:";
  for (const auto& [k, n] : stats["difficulty"].items()) std::cout << fmt::format(" {}:{}", k, n.get<int>());
  std::cout << '\n';
  for (const char* key : {"flops", "est_ms"})
    if (!stats[key].is_null())
      std::cout << fmt::format("{}: min {:.3g}, median {:.3g}, max {:.3g}\n", key, stats[key]["min"].get<double>(),
                               stats[key]["median"].get<double>(), stats[key]["max"].get<double>());
  std::cout << "histogram:";
  for (const auto& [name, n] : stats["histogram"].items()) std::cout << fmt::format(" {}={}", name, n.get<int>());
  std::cout << '\n';
  return kOk;
}

}  // namespace

void add_synth_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<SynthCliOptions>();
  auto& s = o->suite;
  auto* app = root.add_subcommand("synth", "Synthesize KernelBench-format tasks (CSP-DAG); see docs/synth.md");
  app->add_option("--count", s.synth.count, "How many distinct tasks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--difficulty", o->difficulty, "Compute operators per task: K or K1-K2 (1-20)")
      ->capture_default_str();
  app->add_option("--ops", o->ops, "Operator categories to draw from, comma-separated (default: all)");
  app->add_option("--seed", s.synth.seed, "Seed: the same options and seed give the same tasks")->capture_default_str();
  app->add_option("--size", o->size,
                  "Size profile: cpu (references under ~50 ms on one core), mid (tensors up to 64 MiB: RL on a GPU) or "
                  "gpu (an H200 band, up to GBs)")
      ->capture_default_str();
  app->add_option("--out", s.out, "A .jsonl suite, or a directory of .py tasks plus meta.jsonl (default: stdout)");
  app->add_option("--threads", s.synth.threads, "Threads (the output does not depend on it)")->capture_default_str();
  app->add_flag("--with-solutions", s.synth.with_solutions,
                "Add a reference Triton ModelNew and its plan (meta.solution, meta.plan) where the emitter can");
  app->add_flag("--validate", s.validate,
                "Run every task's reference in the runner (--device), and judge every solution with the engine");
  app->add_option("--device", s.device, "Where --validate runs references")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app->add_option("--python", s.python, "Python for the runner");
  app->add_option("--timeout", s.solution_timeout_s, "Seconds each solution may take under the engine (--validate)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_flag("--json", o->json, "Print JSON documents instead of text");

  auto* stats =
      app->add_subcommand("stats", "Coverage of a synthesized suite: op histogram and uniformity, pairs, sizes");
  stats->add_option("suite", o->stats_suite, "A synthesized suite (.jsonl with meta)")->required();
  stats->add_option("--ops", o->ops, "The categories it was drawn from (default: all)");
  stats->add_flag("--json", o->json, "Print one JSON document");
  commands.push_back({stats, [o]() { return run_stats(*o); }});
  commands.push_back({app, [o]() { return run_synth(*o); }});
}

}  // namespace tritium::cli
