#pragma once
// Private to exec: the engine's NVIDIA MPS daemon, kept by python -m tritium.runner.mps (docs/engine.md,
// "MPS"). The trusted runners' workers connect to it, so that the trusted half of every running job
// shares one GPU context; candidates never do.
#include <filesystem>
#include <memory>
#include <string>

#include "tritium/core.h"
#include "tritium/exec.h"
#include "tritium/process.h"

namespace tritium::exec {

class Mps {
 public:
  // Starts the keeper with the daemon's pipe and log directories under `dir` and waits until the
  // daemon listens. An Error says why there is none (no daemon on this machine, it did not start,
  // a path too long for a socket): the engine then runs without MPS.
  static Result<std::unique_ptr<Mps>> start(const std::string& python, const std::filesystem::path& dir);
  ~Mps();  // the daemon told to quit (its server ends first), then the keeper's group killed
  Mps(const Mps&) = delete;
  Mps& operator=(const Mps&) = delete;

  // What the trusted runners get in their environment: TRITIUM_MPS_DIRECTORY=<dir>.
  std::string runner_env() const;

 private:
  Mps(process::Child keeper, std::filesystem::path dir) : keeper_(keeper), dir_(std::move(dir)) {}
  process::Child keeper_;
  std::filesystem::path dir_;
};

}  // namespace tritium::exec
