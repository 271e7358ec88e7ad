// Private to exec: one warm runner process (python -m tritium.runner) and its channel.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
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

/// The engine's zygote (python -m tritium.runner --zygote; runner/zygote.py): one Python that
/// imports torch, Triton, Dynamo and Inductor once and forks runners on request. Each runner started
/// on its own imported them all again: an engine's 23 at once saturated a 16-core host for 5 s, and
/// a batch's first reference started 7 s after the engine's creation (H100, 2026-12-07). It runs
/// from a thread of its own that lives as long as it does: its parent-death signal follows the
/// thread that started it.
class Zygote {
 public:
  /// `scratch`: a directory of its own (Triton's driver module, built there once).
  Zygote(std::string python, std::string device, std::string scratch, bool warm_compile);
  ~Zygote();
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  /// Starts it and waits for its hello; an error when it does not start.
  std::optional<Error> start();
  /// A runner as `options` describe, forked from the zygote: `channel` becomes its channel, its
  /// output goes to `log_path`. An error when the zygote is gone (it is not started again).
  Result<process::Child> fork(const RunnerOptions& options, int channel, const std::string& log_path);
  /// What it said when it started.
  const Json& hello() const { return hello_; }
  /// The ms of each step of its set-up (every role's imports, Triton's key), once a fork waited for
  /// it; null before.
  Json set_up_ms() const;

 private:
  std::optional<Error> spawn();
  void stop_locked();

  std::string python_, device_, scratch_, log_path_;
  bool warm_compile_;
  mutable std::mutex mutex_;  // one fork at a time
  std::condition_variable stopping_cv_;
  bool stopping_ = false;
  std::thread keeper_;
  process::Child child_;
  int channel_ = -1;
  Json hello_;
  Json set_up_ms_;
};

/// Starts lazily, answers one request at a time, and is killed (whole process group) on timeout
/// or protocol failure; the next call starts a fresh one: forked from `zygote` while it runs,
/// otherwise started on its own.
class Runner {
 public:
  explicit Runner(RunnerOptions options, Zygote* zygote = nullptr);
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
  Zygote* zygote_;
  process::Child child_;
  int channel_ = -1;
  std::string log_path_;
  Json hello_;
};

}  // namespace tritium::exec
