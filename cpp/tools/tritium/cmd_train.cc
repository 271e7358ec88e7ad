// tritium train --config FILE.toml and tritium serve-model PATH: the training stages and the model
// server run in Python (PyTorch, transformers), so these commands hand over to `python -m
// tritium.train` / `tritium.model_server` with the runner's interpreter.
#include "cli.h"
#include "tritium/exec.h"

namespace tritium::cli {
namespace {

struct TrainOptions {
  std::string config, python;
  bool json = false;
};

struct ServeModelOptions {
  std::string path, python;
};

}  // namespace

void add_train_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<TrainOptions>();
  auto* app =
      root.add_subcommand("train", "Run the training stages of a config: data, sft, rl, eval (docs/training.md)");
  app->add_option("--config", o->config, "A TOML config (configs/)")->required()->check(CLI::ExistingFile);
  app->add_option("--python", o->python, "Python with torch and transformers (default: as for the runners)");
  app->add_flag("--json", o->json,
                "Logs on stderr; on stdout one JSON document: {config, out, stages, checkpoints, "
                "eval: {stage: metrics}, report}");
  commands.push_back({app, [o] {
                        std::vector<std::string> args{"--config", o->config};
                        if (o->json) args.push_back("--json");
                        return exec_python_module(o->python, "tritium.train", args);
                      }});
}

void add_serve_model_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<ServeModelOptions>();
  auto* app = root.add_subcommand("serve-model",
                                  "Serve a transformers causal-LM directory with OpenAI-compatible "
                                  "chat and completions endpoints, batching requests (docs/llm.md)");
  app->add_option("path", o->path, "Model directory (transformers, a Tritium checkpoint, or one holding a .gguf)")
      ->required()
      ->check(CLI::ExistingDirectory);
  app->add_option("--python", o->python, "Python with torch and transformers (default: as for the runners)");
  app->allow_extras();  // --port, --host, --max-batch, ...: the server's own flags (python -m tritium.model_server -h)
  app->footer(
      "Other flags go to the server: --host, --port (0: a free one), --device, --dtype, --max-batch, "
      "--batch-wait-ms, --max-pending, --max-tokens, --timeout, --api-key, --model-name, --json.");
  commands.push_back({app, [o, app] {
                        std::vector<std::string> args{o->path};
                        for (const auto& extra : app->remaining()) args.push_back(extra);
                        return exec_python_module(o->python, "tritium.model_server", args);
                      }});
}

}  // namespace tritium::cli
