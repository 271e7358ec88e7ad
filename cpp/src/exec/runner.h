// Private to exec: one warm runner process (python -m tritium.runner) and its channel.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tritium/exec.h"
#include "tritium/process.h"

namespace tritium::exec {

/// An answer from the runner, or why there is none.
struct Reply {
  enum class Kind { ok, timeout, died, bad_frame };
  Kind kind = Kind::ok;
  Json body;           // the answer when kind == ok
  std::string detail;  // otherwise: what happened, for the message
};

/// The environment a runner for `device` starts with: scrubbed_environment(), and on a GPU one
/// hardware work queue a context (CUDA_DEVICE_MAX_CONNECTIONS=1) unless the caller set a number.
/// A job makes a context for its worker, and the driver makes contexts about one at a time: with
/// one queue, 16 made at once took 0.97 s instead of 2.26 s, and a worker's context beside 7 other
/// jobs 0.22 s instead of 2.87 (medians; an H100, 2026-12-06). A process's streams then share the
/// queue; candidates may not use side streams (hack.stream), and trusted code does not.
std::vector<std::string> runner_environment(const std::string& device);

/// Starts lazily, answers one request at a time, and is killed (whole process group) on timeout
/// or protocol failure; the next call starts a fresh one.
class Runner {
 public:
  explicit Runner(RunnerOptions options);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  /// Starts the runner if it is not running; the error says how to fix the environment.
  std::optional<Error> ensure_started();
  /// Starts those of `runners` not running side by side (their Pythons import torch at once, not
  /// one after the other) and waits for all; a runner that fails to start is left stopped, for its
  /// first call's ensure_started() to report.
  static void start_together(const std::vector<Runner*>& runners);
  /// Sends one request and waits up to `timeout_s` for its answer.
  Reply call(const Json& request, double timeout_s);
  void stop();
  /// What the runner said when it started: python and torch versions.
  const Json& hello() const { return hello_; }

 private:
  std::string log_tail() const;
  bool running();
  std::optional<Error> spawn();        // the process, its channel and log
  std::optional<Error> await_hello();  // its first frame, which says it is ready

  RunnerOptions options_;
  process::Child child_;
  int channel_ = -1;
  std::string log_path_;
  Json hello_;
};

}  // namespace tritium::exec
