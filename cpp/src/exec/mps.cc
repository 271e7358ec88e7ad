#include "mps.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

namespace tritium::exec {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kReadyWait = std::chrono::seconds(20);  // the keeper imports nothing heavy: ~0.1 s
constexpr auto kQuitWait = std::chrono::seconds(8);    // the keeper's own waits, 5 s, and a margin

std::string tail_of(const fs::path& file) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.size() > 400 ? text.substr(text.size() - 400) : text;
}

}  // namespace

Result<std::unique_ptr<Mps>> Mps::start(const std::string& python, const fs::path& dir) {
  const fs::path control = dir / "pipe" / "control";
  if (control.string().size() >= sizeof(sockaddr_un{}.sun_path))
    return Error{fmt::format("its socket's path would be too long for a Unix socket: {}", control.string())};
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{fmt::format("cannot create {}: {}", dir.string(), ec.message())};
  const fs::path log = dir / "keeper.log";
  auto keeper =
      process::spawn({{python, "-m", "tritium.runner.mps", dir.string(), "--parent-pid", std::to_string(getpid())},
                      scrubbed_environment(),
                      -1,
                      log.string()});
  if (!keeper) return Error{keeper.error().message};
  std::unique_ptr<Mps> mps(new Mps(*keeper, dir));
  for (const auto deadline = Clock::now() + kReadyWait; !fs::exists(control, ec);) {
    const int status = process::try_reap(mps->keeper_);
    if (status >= 0 || Clock::now() > deadline) {
      const std::string why = tail_of(log);
      return Error{status >= 0 ? fmt::format("its keeper ended ({}): {}", process::describe_wait_status(status),
                                             why.empty() ? "no output" : why)
                               : "its daemon did not listen within 20 s"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return mps;
}

Mps::~Mps() {
  if (keeper_.pid > 0 && kill(keeper_.pid, SIGTERM) == 0) {
    for (const auto deadline = Clock::now() + kQuitWait; Clock::now() < deadline;) {
      if (process::try_reap(keeper_) >= 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  process::kill_group(keeper_);
}

std::string Mps::runner_env() const { return "TRITIUM_MPS_DIRECTORY=" + dir_.string(); }

}  // namespace tritium::exec
