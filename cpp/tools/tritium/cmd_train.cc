// tritium train --config FILE.toml: the training stages run in Python (PyTorch, transformers), so
// this command hands over to `python -m tritium.train` with the runner's interpreter.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cli.h"
#include "tritium/exec.h"

namespace tritium::cli {
namespace {

struct TrainOptions {
  std::string config, python;
};

int run_train(const TrainOptions& o) {
  const std::string python = o.python.empty() ? find_python() : o.python;
  std::vector<std::string> args{python, "-m", "tritium.train", "--config", o.config};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execvp(python.c_str(), argv.data());  // returns only on failure
  return fail(kEnvironment, fmt::format("cannot run {}: {}; set TRITIUM_PYTHON or --python", python, std::strerror(errno)));
}

}  // namespace

void add_train_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<TrainOptions>();
  auto* app = root.add_subcommand("train", "Run the training stages of a config: data, sft, rl, eval (docs/training.md)");
  app->add_option("--config", o->config, "A TOML config (configs/)")->required()->check(CLI::ExistingFile);
  app->add_option("--python", o->python, "Python with torch and transformers (default: as for the runners)");
  commands.push_back({app, [o] { return run_train(*o); }});
}

}  // namespace tritium::cli
