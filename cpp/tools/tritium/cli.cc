#include "cli.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>

namespace tritium::cli {

int fail(int code, const std::string& message) {
  std::cerr << "tritium: error: " << message << "\n";
  return code;
}

int engine_failure(const EngineOptions& options, const Error& error) {
  return fail(engine_options_error(options) ? kUsage : kEnvironment, error.message);
}

int workflow_failure(const Error& error) { return fail(error.environment ? kEnvironment : kUsage, error.message); }

workflow::Listener listener(std::ostream* notes, const std::string& prefix) {
  auto progress = std::make_shared<Progress>();
  workflow::Listener l;
  l.progress = [progress](std::size_t done, std::size_t total, const std::string& label) {
    if (done < total)
      progress->update(done, total, label);
    else
      progress->clear();
  };
  if (notes)
    l.note = [progress, notes, prefix](const std::string& line) {
      progress->clear();
      *notes << prefix << line << std::endl;
    };
  return l;
}

void print_json(const Json& document) { std::cout << document.dump() << std::endl; }

bool is_terminal(int fd) { return isatty(fd) == 1; }

Progress::Progress(std::size_t total)
    : total_(total), enabled_(is_terminal(2)), start_(std::chrono::steady_clock::now()) {}

void Progress::update(std::size_t done, const std::string& label) {
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double eta = rate > 0 ? (total_ - done) / rate : 0;
  std::cerr << fmt::format("\r\033[K[{}/{}] {:.2f}/s ETA {:.0f}s {}", done, total_, rate, eta, label) << std::flush;
}

void Progress::update(std::size_t done, std::size_t total, const std::string& label) {
  total_ = total;
  update(done, label);
}

void Progress::clear() {
  if (enabled_) std::cerr << "\r\033[K" << std::flush;
}

void add_version_command(CLI::App& root, Commands& commands) {
  auto* app = root.add_subcommand("version", "Print the version");
  auto json = std::make_shared<bool>(false);
  app->add_flag("--json", *json, "Print JSON");
  commands.push_back({app, [json]() -> int {
                        if (*json)
                          print_json({{"tritium", version()}});
                        else
                          std::cout << "tritium " << version() << "\n";
                        return kOk;
                      }});
}

void add_help_command(CLI::App& root, Commands& commands) {
  auto* app = root.add_subcommand("help", "Show help for tritium or for one command");
  auto topic = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  app->add_option("command", *topic, "The command to explain");
  app->add_flag("--json", *json, "List the commands as JSON");
  commands.push_back({app, [&root, topic, json]() -> int {
                        if (*json) {
                          Json list = Json::array();
                          for (const auto* sub : root.get_subcommands({}))
                            list.push_back({{"name", sub->get_name()}, {"description", sub->get_description()}});
                          print_json({{"commands", list}});
                          return kOk;
                        }
                        if (topic->empty()) {
                          // root.help() would describe the selected subcommand, `help` itself.
                          std::cout << root.get_formatter()->make_help(&root, "tritium", CLI::AppFormatMode::Normal);
                          return kOk;
                        }
                        try {
                          std::cout << root.get_subcommand(*topic)->help();
                        } catch (const CLI::OptionNotFound&) {
                          return fail(kUsage, fmt::format("no command '{}'; 'tritium help' lists them", *topic));
                        }
                        return kOk;
                      }});
}

EngineOptions EngineFlags::options() const {
  EngineOptions o = engine;
  o.seed = seed;
  o.static_check = !no_static;
  o.timing = !no_timing;
  return o;
}

void add_engine_flags(CLI::App* app, EngineFlags& f) {
  app->add_option("--device", f.engine.device, "cpu, cuda, cuda:N or auto")
      ->check(CLI::Validator([](std::string& d) { return device_error(d).value_or(""); }, "DEVICE"))
      ->capture_default_str();
  app->add_option("--profile", f.engine.profile, "Tolerance profile: kernelbench, strict, legacy")
      ->capture_default_str();
  app->add_option("--trials", f.engine.trials, "Checked trials per candidate (at least 5)")->capture_default_str();
  app->add_option("--jobs", f.engine.jobs, "Candidate workers (0: one per core; at most 8 on a GPU)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--timeout", f.engine.timeout_s, "Seconds each candidate may take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--seed", f.seed, "Engine seed (default: drawn afresh; set it to reproduce a run)");
  app->add_option("--cache", f.engine.cache, "SQLite verdict cache file (a repeated candidate is not rerun)");
  app->add_option("--memory-gb", f.engine.memory_gb,
                  "Memory per candidate worker beyond the runtime, CPU only (0: 60% of RAM shared among the jobs)")
      ->capture_default_str();
  app->add_option("--device-memory-gb", f.engine.device_memory_gb,
                  "Memory the jobs in flight may reserve at once, per GPU (0: 90% of its free memory at start)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--reference-cache-gb", f.engine.reference_cache_gb,
                  "Disk for the reference files of tasks not being judged (0: half the free space)")
      ->capture_default_str();
  app->add_option("--python", f.engine.python,
                  "Python for the runners (default: $TRITIUM_PYTHON, the python3 beside tritium, or python3)");
  app->add_flag("--no-static", f.no_static, "Skip the static verifier: only the runtime checks judge");
  app->add_flag("--no-timing", f.no_timing, "Do not time on the GPU (correctness only)");
  app->add_option("--timer-gather", f.engine.timer_gather_s,
                  "Seconds a candidate ready to be timed waits for others to time after the same drain of the GPU")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_flag("--fork-comparers", f.engine.fork_comparers,
                "Fork a comparer process, with its own CUDA context, for each candidate instead of keeping one "
                "per slot (the comparison baseline)");
  app->add_flag("--lazy-reference-timing", f.engine.lazy_reference_timing,
                "Time a task's eager and torch.compile references only once one of its candidates is correct "
                "(RL batches, where most tasks get none); by default they are timed beside the checks");
  app->add_flag("--keep-files", f.engine.keep_files, "Keep the work directory's files (debugging)");
  app->add_flag("--unsafe-sandbox", f.engine.unsafe_sandbox,
                "Run candidates even where the sandbox cannot be established; every verdict is marked unsafe");
  app->add_option("--work-dir", f.engine.work_dir, "Work directory (default: a fresh temporary one)");
}

search::GeneratorSpec ModelFlags::resolved(const Suite* tasks) const {
  search::GeneratorSpec g = spec;
  g.spec = model;
  g.tasks = tasks;
  g.client.chat = !completions;
  if (!extra_body.empty()) g.client.extra_body = Json::parse(extra_body);
  g.server_args.insert(g.server_args.end(), {"--device", model_device});
  return g;
}

void add_model_flags(CLI::App* app, ModelFlags& f, const std::string& model_flag) {
  app->add_option(model_flag, f.model,
                  "http(s):// URL of an OpenAI-compatible server, a model directory (served by a child "
                  "'tritium serve-model'), or 'emitter' (synthesized tasks' reference solutions)")
      ->required(model_flag != "--generator");  // search may tune a given kernel alone
  app->add_option("--model-name", f.spec.client.model, "The request's \"model\" field (API servers need it)");
  app->add_option("--temperature", f.sampling.temperature, "Sampling temperature")->capture_default_str();
  app->add_option("--top-p", f.sampling.top_p, "Nucleus sampling")->capture_default_str();
  app->add_option("--max-tokens", f.sampling.max_tokens, "Tokens per sample")->capture_default_str();
  app->add_option("--sampling-seed", f.sampling.seed, "The request's seed (servers that honour it)");
  app->add_option("--concurrency", f.concurrency, "Requests in flight")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--request-timeout", f.spec.client.timeout_s, "Seconds a request may take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--retries", f.spec.client.max_retries, "Retries on 429, 5xx, timeouts")->capture_default_str();
  app->add_option("--system-prompt", f.spec.client.system_prompt, "A system message before the task prompt");
  app->add_option("--extra-body", f.extra_body,
                  "A JSON object of fields added to every request (e.g. '{\"top_k\": 20, "
                  "\"chat_template_kwargs\": {\"enable_thinking\": true}}')")
      ->check(CLI::Validator(
          [](std::string& text) {
            const Json j = Json::parse(text, nullptr, false);
            return j.is_object() ? std::string() : std::string("not a JSON object");
          },
          "JSON"));
  app->add_flag("--completions", f.completions, "Use /v1/completions with the raw prompt instead of chat");
  app->add_option("--model-device", f.model_device, "A model directory's device: auto, cpu, cuda, cuda:N")
      ->capture_default_str();
}

int exec_python_module(const std::string& python, const std::string& module, const std::vector<std::string>& args) {
  const std::string interpreter = python.empty() ? find_python() : python;
  std::vector<std::string> all{interpreter, "-m", module};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  sigset_t none;  // Python takes the signals main.cc blocked for its stop thread
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  execvp(interpreter.c_str(), argv.data());  // returns only on failure
  return fail(kEnvironment,
              fmt::format("cannot run {}: {}; set TRITIUM_PYTHON or --python", interpreter, std::strerror(errno)));
}

}  // namespace tritium::cli
