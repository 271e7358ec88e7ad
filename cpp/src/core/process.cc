#include "tritium/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

extern char** environ;

namespace tritium::process {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& items) {
  std::vector<char*> out;
  for (const auto& s : items) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
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
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

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
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(),
                              spec.env.empty() ? environ : envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    return Error{fmt::format("cannot start {}: {}", spec.argv.empty() ? "?" : spec.argv[0], strerror(rc))};
  return Child{pid};
}

void kill_group(Child& child) {
  if (child.pid <= 0) return;
  kill(-child.pid, SIGKILL);
  kill(child.pid, SIGKILL);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  child.pid = -1;
}

int try_reap(Child& child) {
  if (child.pid <= 0) return 0;
  int status = 0;
  if (waitpid(child.pid, &status, WNOHANG) == child.pid) {
    child.pid = -1;
    return status;
  }
  return -1;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("wait status {}", status);
}

}  // namespace tritium::process
