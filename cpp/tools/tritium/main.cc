// tritium: the command-line face of the library. See docs/cli.md.
#include <exception>
#include <iostream>

#include <fmt/format.h>

#include "cli.h"

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
    return fail(kUsage, fmt::format("{}; see 'tritium {}--help'", e.what(),
                                    sub ? sub->get_name() + " " : std::string()));
  }
  try {
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
  } catch (const std::exception& e) {
    return fail(kInternal, fmt::format("internal error: {}; please report it", e.what()));
  }
  std::cout << app.help();
  return kUsage;
}
