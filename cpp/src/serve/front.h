// The server's front (docs/serve.md, "Connections"): one thread that owns the listening socket and
// every connection between requests. It reads each request whole (header and body) under one
// deadline, and only then hands it to a worker, so a slow or idle client holds a file descriptor,
// never a thread. cpp-httplib's own accept loop gives a connection a worker for its whole life and
// bounds each read, not the request: as many slow clients as threads stalled every route.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tritium/core.h"

namespace tritium::serve {

struct FrontOptions {
  double read_timeout_s = 30;                // a request's header and body, from its first byte; an answer's sending
  double keep_alive_timeout_s = 30;          // an idle connection between requests is closed after this
  std::size_t max_client_connections = 128;  // open connections per peer address; more get 429
  std::size_t max_body_bytes = 16u << 20;    // a larger Content-Length is refused before its body is read
  std::size_t max_requests_per_connection = 1000;
  int threads = 64;                     // workers that answer complete requests
  std::vector<std::string> fast_paths;  // GET targets answered on the front thread, never queued (/healthz)
};

/// Answers one complete request read from `stream` (cpp-httplib's Server::process_request): `close`
/// asks for Connection: close, `closed` is set when the client asked for it; false drops the connection.
using Answer = std::function<bool(httplib::Stream& stream, bool close, bool& closed)>;
/// A request the front refused itself (its path, or "-" before one was read), for /metrics.
using Refused = std::function<void(const std::string& path, int status)>;

class Front {
 public:
  /// Binds and listens on host:port without SO_REUSEPORT, so a busy port is an error here rather than
  /// a port shared with another server. Nothing is served before run().
  static Result<std::unique_ptr<Front>> listen(const std::string& host, int port, FrontOptions options, Answer answer,
                                               Refused refused);
  ~Front();
  int port() const;
  /// Serves on the calling thread until stop(); returns once every worker has finished its request.
  void run();
  /// Thread-safe: stop accepting, close the connections between requests, and end run().
  void stop();

  struct Impl;

 private:
  explicit Front(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tritium::serve
