// The CLI's shared conventions: exit codes, errors, JSON output, progress. No logic of its own:
// subcommands translate flags into calls of the library and print what comes back.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tritium/core.h"
#include "tritium/exec.h"
#include "tritium/search.h"
#include "tritium/workflow.h"

namespace tritium::cli {

/// Exit codes, documented in docs/cli.md.
enum ExitCode : int {
  kOk = 0,           // the command did what was asked and found nothing wrong
  kFailures = 1,     // it ran, and some items failed (a broken task, an incorrect kernel)
  kUsage = 2,        // bad flag, bad or missing input: the message says what to fix
  kEnvironment = 3,  // the environment cannot do it (no Python runner, no torch, no GPU)
  kInternal = 4,     // a bug in Tritium: please report it
};

/// A parsed subcommand and what runs it.
struct Command {
  CLI::App* app;
  std::function<int()> run;
  bool own_signals = false;  // it takes SIGTERM and SIGINT itself (serve drains); else main.cc's stop applies
};
using Commands = std::vector<Command>;

/// Every subcommand registers itself through one of these (cmd_*.cc).
void add_help_command(CLI::App& root, Commands& commands);
void add_version_command(CLI::App& root, Commands& commands);
void add_tasks_command(CLI::App& root, Commands& commands);
void add_parse_command(CLI::App& root, Commands& commands);
void add_verify_command(CLI::App& root, Commands& commands);
void add_eval_command(CLI::App& root, Commands& commands);
void add_synth_command(CLI::App& root, Commands& commands);
void add_report_command(CLI::App& root, Commands& commands);
void add_data_command(CLI::App& root, Commands& commands);
void add_train_command(CLI::App& root, Commands& commands);
void add_serve_command(CLI::App& root, Commands& commands);  // when built with cpp-httplib
void add_serve_model_command(CLI::App& root, Commands& commands);
void add_bench_command(CLI::App& root, Commands& commands);
void add_distill_command(CLI::App& root, Commands& commands);
void add_search_command(CLI::App& root, Commands& commands);

/// The engine's flags, shared by every command that evaluates (eval, serve).
struct EngineFlags {
  EngineOptions engine;
  std::optional<std::uint64_t> seed;
  bool no_static = false, no_timing = false;
  EngineOptions options() const;  // the flags applied
};
void add_engine_flags(CLI::App* app, EngineFlags& flags);

/// The model flags of every command that samples (bench, distill, search): where samples come
/// from and how to sample.
struct ModelFlags {
  std::string model;           // URL, model directory or "emitter"
  search::GeneratorSpec spec;  // client options and the local server's
  Sampling sampling;
  int concurrency = 4;
  std::string model_device = "auto";
  bool completions = false;
  std::string extra_body;                                    // a JSON object (checked at parsing)
  search::GeneratorSpec resolved(const Suite* tasks) const;  // the flags applied
};
void add_model_flags(CLI::App* app, ModelFlags& flags, const std::string& model_flag);

/// Replaces this process with `python -m MODULE ARGS...` (the Python stages: train, serve-model).
int exec_python_module(const std::string& python, const std::string& module, const std::vector<std::string>& args);

/// Engine::create's failure as an exit: options the user gave wrong are usage errors, the rest the
/// environment's.
int engine_failure(const EngineOptions& options, const Error& error);

/// A workflow's Listener for a person: a progress line on stderr (while it is a terminal), and each
/// note on `notes` after `prefix`; null `notes`: notes unsaid (--json).
workflow::Listener listener(std::ostream* notes = &std::cerr, const std::string& prefix = "tritium: ");

/// A workflow's error as an exit: kEnvironment when the machine cannot do it, else kUsage.
int workflow_failure(const Error& error);

/// Prints "tritium: error: MESSAGE" on stderr and returns `code`.
int fail(int code, const std::string& message);

/// Prints a JSON document on stdout, one line per document.
void print_json(const Json& document);

bool is_terminal(int fd);

/// A count/rate/ETA line on stderr while it is a terminal; silent in pipes and CI.
class Progress {
 public:
  explicit Progress(std::size_t total = 0);
  void update(std::size_t done, const std::string& label);
  void update(std::size_t done, std::size_t total, const std::string& label);
  void clear();

 private:
  std::size_t total_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tritium::cli
