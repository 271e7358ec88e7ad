// Where samples come from (docs/llm.md): an HTTP endpoint, a model directory served by a child
// model server, or the reference solutions synthesized tasks carry.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tritium/process.h"
#include "tritium/search.h"

namespace tritium::search {
namespace {

namespace fs = std::filesystem;

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

// The emitter's reference solutions: the task a prompt carries, looked up in the suite, answered
// with its meta.plan and meta.solution (deterministic: every sample is the same).
class EmitterGenerator : public Generator {
 public:
  explicit EmitterGenerator(const Suite& tasks) : tasks_(tasks) {}

  Result<std::vector<Generation>> generate(const std::string& prompt, const Sampling& sampling) override {
    const auto source = task_in_prompt(prompt);
    if (!source) return Error{"the prompt carries no task (no fenced block defining class Model)"};
    for (const auto& t : tasks_.tasks) {
      if (trimmed(t.source) != trimmed(*source)) continue;
      if (!t.meta.contains("solution") || !t.meta["solution"].is_string() || !t.meta.contains("plan"))
        return Error{
            fmt::format("task {} has no reference solution: the emitter answers synthesized tasks "
                        "(with_solutions, tritium synth --with-solutions); `tritium search` emits kernels from the "
                        "traced DAG of others (stage fragments)",
                        t.id)};
      const Generation g{format_response(t.meta["plan"].get<std::string>(), t.meta["solution"].get<std::string>()),
                         "stop"};
      return std::vector<Generation>(std::max(sampling.n, 1), g);
    }
    return Error{"the emitter does not know the prompt's task (it is not in the suite)"};
  }
  std::string name() const override { return "emitter"; }
  bool emits_from_dag() const override { return true; }

 private:
  const Suite& tasks_;
};

// A model directory behind a child model server on a free loopback port; the child's process
// group goes with this generator.
class LocalModelGenerator : public Generator {
 public:
  static Result<std::unique_ptr<Generator>> start(const GeneratorSpec& spec) {
    auto self = std::unique_ptr<LocalModelGenerator>(new LocalModelGenerator());
    char pattern[] = "/tmp/tritium-model-server-XXXXXX";
    const int fd = mkstemp(pattern);
    if (fd < 0) return Error{"cannot create the model server's log file in /tmp"};
    close(fd);
    self->log_ = pattern;
    std::vector<std::string> argv{spec.python.empty() ? find_python() : spec.python, "-m", "tritium.model_server",
                                  spec.spec, "--host", "127.0.0.1", "--port", "0",
                                  // it dies with this process (its parent-death signal, docs/cli.md "Signals")
                                  "--parent-pid", std::to_string(getpid())};
    argv.insert(argv.end(), spec.server_args.begin(), spec.server_args.end());
    auto child = process::spawn({argv, {}, -1, self->log_.string()});
    if (!child) return child.error();
    self->child_ = *child;
    auto url = self->wait_for_url(spec.startup_timeout_s);
    if (!url) return url.error();
    ClientOptions client = spec.client;
    client.base_url = *url;
    auto c = LlmClient::create(client);
    if (!c) return c.error();
    self->client_ = std::move(*c);
    return std::unique_ptr<Generator>(std::move(self));
  }

  ~LocalModelGenerator() override {
    if (child_.pid > 0) process::kill_group(child_);
    std::error_code ec;
    if (!log_.empty()) fs::remove(log_, ec);
  }

  Result<std::vector<Generation>> generate(const std::string& prompt, const Sampling& sampling) override {
    return client_->generate(prompt, sampling);
  }
  std::string name() const override { return client_->name(); }

 private:
  LocalModelGenerator() = default;

  // The server's first stdout line names its URL; its log says why when it never comes.
  Result<std::string> wait_for_url(double timeout_s) {
    const std::string marker = "listening on ";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      const auto text = read_file(log_);
      if (text) {
        if (const auto at = text->find(marker); at != std::string::npos && text->find('\n', at) != std::string::npos)
          return text->substr(at + marker.size(), text->find('\n', at) - at - marker.size());
      }
      if (const int status = process::try_reap(child_); status != -1) {
        child_.pid = -1;
        return Error{fmt::format("the model server exited ({}) before listening:\n{}",
                                 process::describe_wait_status(status),
                                 text ? text->substr(text->size() > 2000 ? text->size() - 2000 : 0) : "")};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return Error{fmt::format("the model server did not listen within {} s (log: {})", timeout_s, log_.string())};
  }

  process::Child child_;
  fs::path log_;
  std::unique_ptr<LlmClient> client_;
};

}  // namespace

Result<std::unique_ptr<Generator>> open_generator(const GeneratorSpec& spec) {
  if (spec.spec == "emitter") {
    if (!spec.tasks) return Error{"the emitter generator needs the task suite"};
    return std::unique_ptr<Generator>(std::make_unique<EmitterGenerator>(*spec.tasks));
  }
  if (spec.spec.starts_with("http://") || spec.spec.starts_with("https://")) {
    ClientOptions client = spec.client;
    client.base_url = spec.spec;
    auto c = LlmClient::create(client);
    if (!c) return c.error();
    return std::unique_ptr<Generator>(std::move(*c));
  }
  std::error_code ec;
  if (fs::is_directory(spec.spec, ec)) return LocalModelGenerator::start(spec);
  return Error{fmt::format("model '{}': expected an http(s):// URL, a model directory, or 'emitter'", spec.spec)};
}

}  // namespace tritium::search
