#include "runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>

#include "frame.h"

extern char** environ;

namespace tritium::exec {
namespace {

using Clock = std::chrono::steady_clock;

// Startup imports torch, which takes seconds on a cold disk.
constexpr double kStartupTimeoutS = 180;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// Moves a descriptor above the range the child's dup2 targets use, keeping close-on-exec.
int move_high(int fd) {
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return high;
}

std::string make_log_path() {
  std::string pattern = (std::filesystem::temp_directory_path() / "tritium-runner-XXXXXX").string();
  const int fd = mkstemp(pattern.data());
  if (fd >= 0) close(fd);
  return pattern;
}

}  // namespace

std::vector<std::string> runner_environment(const std::string& device) {
  std::vector<std::string> env = scrubbed_environment();
  const std::string_view name = "CUDA_DEVICE_MAX_CONNECTIONS=";
  const bool set = std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.starts_with(name); });
  if (device.starts_with("cuda") && !set) env.emplace_back(std::string(name) + "1");
  return env;
}

Runner::Runner(RunnerOptions options, Zygote* zygote) : options_(std::move(options)), zygote_(zygote) {
  if (options_.python.empty()) options_.python = find_python();
}

Runner::~Runner() {
  stop();
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

void Runner::stop() {
  if (channel_ >= 0) close(channel_);
  channel_ = -1;
  process::kill_group(child_);
}

std::string Runner::log_tail() const {
  std::ifstream in(log_path_);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t") != std::string::npos) last = line;
  return last;
}

std::optional<Error> Runner::ensure_started() {
  if (running()) return std::nullopt;
  if (auto error = spawn()) return error;
  return await_hello();
}

void Runner::start_together(const std::vector<Runner*>& runners) {
  std::vector<Runner*> spawned;
  for (Runner* runner : runners)
    if (!runner->running() && !runner->spawn()) spawned.push_back(runner);
  for (Runner* runner : spawned) (void)runner->await_hello();  // an error is met again by the first call
}

bool Runner::running() { return child_.pid > 0 && process::try_reap(child_) < 0; }

std::optional<Error> Runner::spawn() {
  stop();
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return Error{fmt::format("cannot create the runner channel: {}", strerror(errno))};
  channel_ = move_high(fds[0]);
  const int child_end = move_high(fds[1]);
  if (log_path_.empty()) log_path_ = make_log_path();
  if (zygote_) {
    if (auto child = zygote_->fork(options_, child_end, log_path_)) {
      close(child_end);
      child_ = *child;
      return std::nullopt;
    }  // the zygote is gone: this runner starts on its own
  }

  process::SpawnSpec spec{{options_.python, "-m", "tritium.runner", "--channel-fd", "3", "--device", options_.device,
                           "--role", options_.role, "--threads", std::to_string(options_.threads),
                           // the runner's parent-death signal is armed after Python starts: by then the
                           // engine may be gone, which only its pid tells (docs/engine.md, "Lifetime")
                           "--parent-pid", std::to_string(getpid())},
                          runner_environment(options_.device),
                          child_end,
                          log_path_};
  if (options_.warm_compile) spec.argv.push_back("--warm-compile");
  if (options_.light_first) spec.argv.push_back("--light-first");
  auto child = process::spawn(spec);
  close(child_end);
  if (!child) {
    stop();
    return Error{
        fmt::format("{}; set TRITIUM_PYTHON to a Python with tritium and torch installed", child.error().message)};
  }
  child_ = *child;
  return std::nullopt;
}

std::optional<Error> Runner::await_hello() {
  std::string payload;
  const auto status = read_frame(channel_, deadline_after(kStartupTimeoutS), payload);
  if (status == ReadStatus::ok) {
    hello_ = Json::parse(payload, nullptr, false);
    if (hello_.is_object() && hello_.value("ok", false)) return std::nullopt;
  }
  const std::string why =
      hello_.is_object() && hello_.contains("error") ? hello_["error"].get<std::string>() : log_tail();
  stop();
  return Error{
      fmt::format("the runner ({} -m tritium.runner) did not start: {}; install the Python "
                  "package and its dependencies (make setup), or set TRITIUM_PYTHON",
                  options_.python, why.empty() ? "no output" : why)};
}

Reply Runner::call(const Json& request, double timeout_s) {
  if (!write_frame(channel_, request.dump())) {
    stop();
    return {Reply::Kind::died, nullptr, "the runner exited before the request was sent"};
  }
  std::string payload;
  switch (read_frame(channel_, deadline_after(timeout_s), payload)) {
    case ReadStatus::ok: {
      Json body = Json::parse(payload, nullptr, false);
      if (body.is_object()) return {Reply::Kind::ok, std::move(body), ""};
      stop();
      return {Reply::Kind::bad_frame, nullptr, "the runner sent a frame that is not a JSON object"};
    }
    case ReadStatus::timeout:
      stop();
      return {Reply::Kind::timeout, nullptr, fmt::format("no answer within {:g} s", timeout_s)};
    case ReadStatus::closed: {
      const int status = process::try_reap(child_);
      const std::string how = status >= 0 ? process::describe_wait_status(status) : "closed its channel";
      stop();
      return {Reply::Kind::died, nullptr, fmt::format("the runner died ({})", how)};
    }
    case ReadStatus::bad_frame:
      stop();
      return {Reply::Kind::bad_frame, nullptr, "the runner sent an oversized frame"};
  }
  return {Reply::Kind::bad_frame, nullptr, "unreachable"};
}

namespace {

// Sends `fd` over the socket `channel` with one byte of data (SCM_RIGHTS).
bool send_descriptor(int channel, int fd) {
  char byte = 0;
  iovec data{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  ssize_t sent;
  while ((sent = sendmsg(channel, &message, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return sent == 1;
}

}  // namespace

Zygote::Zygote(std::string python, std::string device, std::string scratch, bool warm_compile)
    : python_(python.empty() ? find_python() : std::move(python)),
      device_(std::move(device)),
      scratch_(std::move(scratch)),
      warm_compile_(warm_compile) {}

Zygote::~Zygote() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    stop_locked();
  }
  stopping_cv_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

void Zygote::stop_locked() {
  if (channel_ >= 0) close(channel_);
  channel_ = -1;
  process::kill_group(child_);
}

std::optional<Error> Zygote::start() {
  std::promise<std::optional<Error>> started;
  auto result = started.get_future();
  keeper_ = std::thread([this, &started] {
    started.set_value(spawn());
    std::unique_lock lock(mutex_);
    stopping_cv_.wait(lock, [this] { return stopping_; });
  });
  return result.get();
}

std::optional<Error> Zygote::spawn() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return Error{fmt::format("cannot create the zygote's channel: {}", strerror(errno))};
  const int child_end = move_high(fds[1]);
  std::lock_guard lock(mutex_);
  channel_ = move_high(fds[0]);
  log_path_ = make_log_path();
  process::SpawnSpec spec{{python_, "-m", "tritium.runner", "--channel-fd", "3", "--device", device_, "--parent-pid",
                           std::to_string(getpid()), "--zygote", scratch_},
                          runner_environment(device_),
                          child_end,
                          log_path_};
  if (warm_compile_) spec.argv.push_back("--warm-compile");
  auto child = process::spawn(spec);
  close(child_end);
  if (!child) {
    stop_locked();
    return child.error();
  }
  child_ = *child;
  std::string payload;
  if (read_frame(channel_, deadline_after(kStartupTimeoutS), payload) == ReadStatus::ok) {
    hello_ = Json::parse(payload, nullptr, false);
    if (hello_.is_object() && hello_.value("ok", false)) return std::nullopt;
  }
  stop_locked();
  return Error{fmt::format("the runner zygote ({} -m tritium.runner --zygote) did not start", python_)};
}

Json Zygote::set_up_ms() const {
  std::lock_guard lock(mutex_);
  return set_up_ms_;
}

Result<process::Child> Zygote::fork(const RunnerOptions& options, int channel, const std::string& log_path) {
  std::lock_guard lock(mutex_);
  if (channel_ < 0) return Error{"the runner zygote is not running"};
  const Json request{{"op", "fork"},
                     {"role", options.role},
                     {"device", options.device},
                     {"threads", options.threads},
                     {"warm_compile", options.warm_compile},
                     {"light_first", options.light_first},  // forked before the zygote's imports of every role
                     {"log", log_path}};
  std::string payload;
  // The first fork that is not light waits for what is left of the zygote's imports (seconds).
  const auto asked = std::chrono::steady_clock::now();
  if (!write_frame(channel_, request.dump()) || !send_descriptor(channel_, channel) ||
      read_frame(channel_, deadline_after(kStartupTimeoutS), payload) != ReadStatus::ok) {
    stop_locked();
    return Error{"the runner zygote stopped answering"};
  }
  const Json reply = Json::parse(payload, nullptr, false);
  if (!reply.is_object() || !reply.value("ok", false) || !reply.contains("pid") || !reply["pid"].is_number_integer())
    return Error{fmt::format("the runner zygote could not fork: {}", reply.is_object() ? reply.dump() : payload)};
  if (reply.contains("set_up_ms") && reply["set_up_ms"].is_object()) {  // the first fork after the set-up
    set_up_ms_ = reply["set_up_ms"];
    set_up_ms_["fork_waited"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count();
  }
  const pid_t pid = reply["pid"].get<pid_t>();
  auto child = process::adopt(pid);
  if (!child) {  // it cannot be followed: gone, or a kernel without pidfds; the runner starts on its own
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  return child;
}

}  // namespace tritium::exec

namespace tritium {

std::vector<std::string> scrubbed_environment() {
  static constexpr std::string_view kKeep[] = {"PATH",
                                               "HOME",
                                               "LANG",
                                               "LC_ALL",
                                               "LC_CTYPE",
                                               "LD_LIBRARY_PATH",
                                               "PYTHONPATH",
                                               "VIRTUAL_ENV",
                                               "CUDA_VISIBLE_DEVICES",
                                               "CUDA_HOME",
                                               "CUDA_PATH",
                                               "NVIDIA_VISIBLE_DEVICES",
                                               "OMP_NUM_THREADS",
                                               "CUDA_DEVICE_MAX_CONNECTIONS"};
  static constexpr std::string_view kKeepPrefixes[] = {"TRITON_", "TORCHINDUCTOR_", "PYTORCH_"};
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool keep = std::find(std::begin(kKeep), std::end(kKeep), name) != std::end(kKeep);
    for (auto prefix : kKeepPrefixes) keep = keep || name.rfind(prefix, 0) == 0;
    if (keep) env.emplace_back(entry);
  }
  return env;
}

}  // namespace tritium
