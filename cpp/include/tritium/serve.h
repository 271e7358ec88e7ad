// tritium/serve.h: the HTTP face of verify, evaluate and reward, for RL frameworks (docs/serve.md).
//
// Routes: POST /v1/verify, /v1/evaluate, /v1/reward, OpenRLHF's POST /get_reward, GET /healthz,
// GET /metrics (Prometheus text). Requests carry DESIGN.md's batch items; a bad item gets an
// "error" verdict in its place and the rest go on. Overload is refused early (429), never queued
// without bound; a drain (SIGTERM) finishes the work in flight and refuses new work (503). A request
// holds a thread only once it has arrived whole: slow and idle clients cost a descriptor, and
// /healthz is answered whatever the load.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "tritium/core.h"
#include "tritium/exec.h"
#include "tritium/reward.h"

namespace tritium {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;    // 0: any free port (see Server::port)
  std::string token;  // bearer token every route but /healthz needs; empty: none
  std::string tasks;  // a suite, so items may name tasks by "task_id"
  EngineOptions engine;
  Json reward = Json::object();  // the default reward config (a request may override keys)
  std::size_t max_body_bytes = 16u << 20;
  std::size_t max_items = 1024;      // per request
  std::size_t max_pending = 4096;    // items evaluating at once, over all requests, before 429
  double request_timeout_s = 1800;   // an evaluating request answers 504 after this
  double drain_timeout_s = 600;      // a drain waits this long for the work in flight
  int threads = 64;                  // worker threads answering requests that arrived whole
  double read_timeout_s = 30;        // a request's header and body must arrive within this of its first byte (else 408)
  double keep_alive_timeout_s = 30;  // an idle connection is closed after this
  std::size_t max_client_connections = 128;  // open connections per client address; more are refused with 429
};

/// A running server. create() binds (without SO_REUSEPORT: a busy port is an error) and starts the
/// engine; run() serves until drain() ends it.
class Server {
 public:
  static Result<std::unique_ptr<Server>> create(ServeOptions options);
  ~Server();
  int port() const;
  /// Serves on the calling thread; returns after drain() has finished the work in flight.
  void run();
  /// Thread-safe: refuse new work with 503, wait for the work in flight, then stop run().
  void drain();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tritium
