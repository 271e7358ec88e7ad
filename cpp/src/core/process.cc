#include "tritium/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

extern char** environ;

namespace tritium::process {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& items) {
  std::vector<char*> out;
  for (const auto& s : items) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

using Clock = std::chrono::steady_clock;

// Closes every descriptor but 0-2, `a` and `b`: the guard must not hold its owner's sockets and pipes open.
void close_all_but(int a, int b) {
  const int lo = std::min(a, b), hi = std::max(a, b);
  auto close_range = [](unsigned first, unsigned last) {
    if (first > last) return;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, first, last, 0) == 0) return;
#endif
    const long max = sysconf(_SC_OPEN_MAX);
    for (long fd = first; fd <= std::min<long>(last, max > 0 ? max : 1024); ++fd) close(static_cast<int>(fd));
  };
  close_range(3, lo - 1);
  close_range(lo + 1, hi - 1);
  close_range(hi + 1, ~0u);
}

// Owner-only permissions on every directory under `dir` it owns, so that a tree a candidate made
// unwritable (chmod 0) can be removed without root.
void open_up(const std::filesystem::path& dir, int depth = 0) {
  chmod(dir.c_str(), 0700);
  std::error_code ec;
  if (depth > 256) return;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec)) open_up(it->path(), depth + 1);
}

}  // namespace

Result<Child> spawn(const SpawnSpec& spec) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  // Own process group, so a timeout can kill the runner and every worker it forked.
  posix_spawnattr_setpgroup(&attr, 0);
  // Default signal dispositions: the child must not inherit an ignored SIGPIPE or SIGINT.
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&attr, &all);
  // No blocked signals either: the CLI blocks SIGTERM and SIGINT for its signal thread.
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  const std::string out = spec.output_path.empty() ? "/dev/null" : spec.output_path;
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // The caller keeps its descriptors above 2 close-on-exec, and the channel above 3, so this
  // dup2 always clears close-on-exec on fd 3.
  if (spec.channel_fd >= 0) posix_spawn_file_actions_adddup2(&actions, spec.channel_fd, 3);

  auto argv = c_strings(spec.argv);
  auto envp = c_strings(spec.env);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), spec.env.empty() ? environ : envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error{fmt::format("cannot start {}: {}", spec.argv.empty() ? "?" : spec.argv[0], strerror(rc))};
  return Child{pid};
}

Result<Child> adopt(pid_t pid) {
#ifdef SYS_pidfd_open
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) {
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return Child{pid, fd};
  }
  return Error{fmt::format("cannot follow process {}: pidfd_open: {}", pid, strerror(errno))};
#else
  return Error{fmt::format("cannot follow process {}: no pidfd_open here", pid)};
#endif
}

namespace {

// Whether an adopted process has ended, waiting up to `wait_ms` (its pidfd reads ready then).
bool ended(const Child& child, int wait_ms) {
  pollfd ready{child.pidfd, POLLIN, 0};
  int rc;
  while ((rc = poll(&ready, 1, wait_ms)) < 0 && errno == EINTR) {
  }
  return rc != 0;  // an error too: nothing left to follow
}

void forget(Child& child) {
  close(child.pidfd);
  child = Child{};
}

}  // namespace

void kill_group(Child& child) {
  if (child.pid <= 0) return;
  if (child.pidfd >= 0) {  // ended, its pid may be another's already; its workers die with it
    if (!ended(child, 0)) {
      kill(-child.pid, SIGKILL);
      kill(child.pid, SIGKILL);
      (void)ended(child, 5000);
    }
    forget(child);
    return;
  }
  kill(-child.pid, SIGKILL);
  kill(child.pid, SIGKILL);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  child.pid = -1;
}

int try_reap(Child& child) {
  if (child.pid <= 0) return 0;
  if (child.pidfd >= 0) {
    if (!ended(child, 0)) return -1;
    forget(child);
    return kStatusUnknown;
  }
  int status = 0;
  if (waitpid(child.pid, &status, WNOHANG) == child.pid) {
    child.pid = -1;
    return status;
  }
  return -1;
}

std::string describe_wait_status(int status) {
  if (status == kStatusUnknown) return "status unknown: its parent, the zygote, reaped it";
  if (WIFEXITED(status)) return fmt::format("exit code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("wait status {}", status);
}

bool remove_tree(const std::string& dir) {
  namespace fs = std::filesystem;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (int attempt = 0;; ++attempt) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (!fs::exists(fs::symlink_status(dir, ec))) return true;
    if (Clock::now() > deadline) return false;
    if (attempt == 0) open_up(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Result<DirectoryGuard> guard_directory(const std::string& dir, int keep_fd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Error{fmt::format("cannot guard {}: pipe: {}", dir, strerror(errno))};
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return Error{fmt::format("cannot guard {}: fork: {}", dir, strerror(err))};
  }
  if (pid == 0) {
    // The child of a possibly multithreaded process: glibc keeps malloc usable after fork, and
    // nothing here takes a lock another thread could have held.
    setsid();
    struct sigaction ignore{};
    ignore.sa_handler = SIG_IGN;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaction(sig, &ignore, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Above 0-2 first (a process without stdin gets its pipe there), then nothing but them and 0-2.
    const int wake = fcntl(fds[0], F_DUPFD, 10);
    const int lock = keep_fd >= 0 ? fcntl(keep_fd, F_DUPFD, 10) : wake;
    const int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3 && null >= 0; ++fd) dup2(null, fd);
    close_all_but(wake, lock);
    char byte;
    for (;;) {
      const ssize_t n = read(wake, &byte, 1);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    remove_tree(dir);
    _exit(0);
  }
  close(fds[0]);
  return DirectoryGuard{pid, fds[1]};
}

void release(DirectoryGuard& guard, double wait_s) {
  if (guard.pid <= 0) return;
  close(guard.fd);
  const auto deadline = Clock::now() + std::chrono::duration<double>(wait_s);
  int status = 0;
  while (waitpid(guard.pid, &status, WNOHANG) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  guard = {};
}

}  // namespace tritium::process
