// tritium: the command-line face of the library. See docs/cli.md.
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <thread>

#include "cli.h"

namespace {

// SIGTERM, SIGINT and SIGHUP end a command without leaving anything behind (docs/cli.md, "Signals").
// One thread takes them (they are blocked in the others, which inherit the mask of the one that
// starts them), says so on stderr, and ends the process by the same signal, at once: its runners
// die by their parent-death signal (their workers and candidates with them) and each engine's guard
// removes its work directory. Nothing is killed while the process lives on: a thread that saw its
// runner die would judge (and cache) the candidate as crashed.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  return set;
}

const char* signal_name(int sig) { return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP"; }

void take_stop_signals() {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    std::cerr << fmt::format("tritium: {} received; stopping\n", signal_name(sig)) << std::flush;
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    raise(sig);
    _exit(128 + sig);
  }).detach();
}

// A Python stage (tritium train) that starts this command names itself in TRITIUM_PARENT_PID: its
// death, SIGKILL included, is then our SIGTERM, so nothing of ours outlives it. Not passed on to
// our own children.
void follow_parent() {
  const char* value = std::getenv("TRITIUM_PARENT_PID");
  if (!value) return;
  const pid_t parent = std::atoi(value);
  unsetenv("TRITIUM_PARENT_PID");
  if (parent <= 0) return;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) kill(getpid(), SIGTERM);  // it died before the signal was armed
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tritium::cli;
  CLI::App app{"Tritium: train and evaluate LLMs that write fast, honest Triton kernels.", "tritium"};
  app.set_version_flag("--version", std::string("tritium ") + tritium::version());
  app.require_subcommand(0, 1);
  Commands commands;
  add_help_command(app, commands);
  add_version_command(app, commands);
  add_tasks_command(app, commands);
  add_parse_command(app, commands);
  add_verify_command(app, commands);
  add_eval_command(app, commands);
  add_synth_command(app, commands);
  add_report_command(app, commands);
  add_data_command(app, commands);
  add_train_command(app, commands);
  add_serve_model_command(app, commands);
  add_bench_command(app, commands);
  add_distill_command(app, commands);
  add_search_command(app, commands);
#ifdef TRITIUM_HAS_SERVE
  add_serve_command(app, commands);
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    const auto* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front();
    return fail(kUsage,
                fmt::format("{}; see 'tritium {}--help'", e.what(), sub ? sub->get_name() + " " : std::string()));
  }
  try {
    for (const auto& command : commands) {
      if (!command.app->parsed()) continue;
      if (!command.own_signals) take_stop_signals();
      follow_parent();
      return command.run();
    }
  } catch (const std::exception& e) {
    return fail(kInternal, fmt::format("internal error: {}; please report it", e.what()));
  }
  std::cout << app.help();
  return kUsage;
}
