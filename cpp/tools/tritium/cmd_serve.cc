// tritium serve: the reward server (docs/serve.md). SIGTERM or SIGINT drains it: work in flight
// finishes, new work gets 503, then the process exits 0.
#include <fmt/format.h>
#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "cli.h"
#include "tritium/serve.h"

namespace tritium::cli {
namespace {

struct ServeCliOptions {
  ServeOptions serve;
  EngineFlags engine;
  std::string reward_config;
  double max_body_mb = 16;
  bool json = false;
};

Result<Json> reward_config(const std::string& text) {
  if (text.empty()) return Json::object();
  std::string source = text;
  if (text.front() != '{') {
    auto file = read_file(text);
    if (!file) return file.error();
    source = *file;
  }
  Json j = Json::parse(source, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{fmt::format("--reward-config {}: not a JSON object", text)};
  if (auto c = reward_config_from_json(j); !c) return Error{"--reward-config: " + c.error().message};
  return j;
}

int run_serve(ServeCliOptions& o) {
  auto config = reward_config(o.reward_config);
  if (!config) return fail(kUsage, config.error().message);
  o.serve.reward = *config;
  o.serve.engine = o.engine.options();
  o.serve.max_body_bytes = static_cast<std::size_t>(o.max_body_mb * (1 << 20));
  if (o.serve.token.empty())
    if (const char* token = std::getenv("TRITIUM_SERVE_TOKEN")) o.serve.token = token;
  // Signals go to one waiting thread, not to whichever thread they hit: block them first, so
  // every thread started from here on inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto server = Server::create(o.serve);
  if (!server) return engine_failure(o.serve.engine, server.error());
  const std::string url = fmt::format("http://{}:{}", o.serve.host, (*server)->port());
  if (o.json)
    print_json({{"listening", url}});
  else
    std::cout << "tritium serve: listening on " << url << std::endl;
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::cerr << fmt::format("tritium serve: {} received, draining\n", signal == SIGTERM ? "SIGTERM" : "SIGINT");
    (*server)->drain();
  });
  (*server)->run();
  waiter.join();
  std::cerr << "tritium serve: drained, exiting\n";
  return kOk;
}

}  // namespace

void add_serve_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<ServeCliOptions>();
  auto* app =
      root.add_subcommand("serve", "HTTP reward server: verify, evaluate, reward, OpenRLHF /get_reward, metrics");
  app->add_option("--host", o->serve.host, "Address to listen on")->capture_default_str();
  app->add_option("--port", o->serve.port, "Port (0: any free port, printed on start)")->capture_default_str();
  app->add_option("--token", o->serve.token,
                  "Bearer token required on every route but /healthz (or $TRITIUM_SERVE_TOKEN)");
  app->add_option("--tasks", o->serve.tasks, "Task suite, so items may name tasks by task_id")
      ->check(CLI::ExistingPath);
  app->add_option("--reward-config", o->reward_config,
                  "Default reward config: a JSON file or inline JSON (docs/rewards.md)");
  app->add_option("--max-body-mb", o->max_body_mb, "Largest request body")->capture_default_str();
  app->add_option("--max-items", o->serve.max_items, "Most items in one request")->capture_default_str();
  app->add_option("--max-pending", o->serve.max_pending, "Most items evaluating at once before 429")
      ->capture_default_str();
  app->add_option("--request-timeout", o->serve.request_timeout_s, "Seconds before an evaluating request gets 504")
      ->capture_default_str();
  app->add_option("--drain-timeout", o->serve.drain_timeout_s, "Seconds a drain waits for the work in flight")
      ->capture_default_str();
  app->add_option("--threads", o->serve.threads, "Worker threads answering requests that arrived whole")
      ->check(CLI::Range(9, 4096))
      ->capture_default_str();
  app->add_option("--read-timeout", o->serve.read_timeout_s,
                  "Seconds a request's header and body may take to arrive, from its first byte (else 408)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--keep-alive-timeout", o->serve.keep_alive_timeout_s, "Seconds an idle connection stays open")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--max-client-connections", o->serve.max_client_connections,
                  "Open connections per client address; more are refused with 429")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app->add_flag("--json", o->json, "Say where it listens as one JSON line on stdout: {listening: URL}");
  add_engine_flags(app, o->engine);
  commands.push_back({app, [o] { return run_serve(*o); }, /*own_signals=*/true});
}

}  // namespace tritium::cli
