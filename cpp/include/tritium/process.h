// Child processes in their own process group, killed as a whole: the engine's runners, the
// model server a search starts. And a guard process that removes a directory once its owner is
// gone, however the owner ended (docs/engine.md, "Lifetime").
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tritium/core.h"

namespace tritium::process {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH when it has no '/'
  std::vector<std::string> env;   // "KEY=VALUE"; empty = inherit the parent's environment
  int channel_fd = -1;            // becomes fd 3 in the child (-1: none)
  std::string output_path;        // the child's stdout and stderr go here ("" = /dev/null)
};

/// A started child, leader of its own process group; or a process another one forked on our
/// behalf (a runner forked by the engine's zygote), followed through a pidfd and never reaped here.
struct Child {
  pid_t pid = -1;
  int pidfd = -1;  // set for an adopted process
};

Result<Child> spawn(const SpawnSpec& spec);

/// Follows `pid`, which leads its own process group but is not our child: an error where the
/// kernel has no pidfd_open (Linux before 5.3) or the process is gone.
Result<Child> adopt(pid_t pid);

/// Kills the child's whole process group and reaps the child (an adopted one: waits, at most a
/// few seconds, until it has ended).
void kill_group(Child& child);

/// The status try_reap() gives an adopted process that ended (its parent reaped it): no wait
/// status has these bits.
inline constexpr int kStatusUnknown = 1 << 16;

/// Reaps the child if it has exited; returns its wait status (kStatusUnknown for an adopted
/// process), or -1 if it is still running.
int try_reap(Child& child);

/// "exit code 3", "signal 9 (Killed)".
std::string describe_wait_status(int status);

/// A process that removes a directory once its owner is gone. Forked by guard_directory(), it waits
/// for the end of a pipe whose other end only the owner holds (close-on-exec), so it wakes when the
/// owner ends however it ends: a return, a signal's default action, SIGKILL. It runs in its own
/// session (a terminal's Ctrl-C and a kill of the owner's process group spare it), ignores SIGINT,
/// SIGTERM and SIGHUP, and keeps `keep_fd` (the directory's lock) open until it has removed it.
struct DirectoryGuard {
  pid_t pid = -1;
  int fd = -1;  // the owner's end of the pipe
};

/// Starts the guard of `dir`; an error when it cannot fork (the directory is then only removed by
/// its owner, or by the next engine that finds its lock free).
Result<DirectoryGuard> guard_directory(const std::string& dir, int keep_fd);

/// Lets the guard remove its directory now and waits (at most `wait_s`) for it to finish.
void release(DirectoryGuard& guard, double wait_s = 60);

/// Removes `dir` and everything under it, again for a few seconds while something is still writing
/// there (a worker killed a moment ago); whether it is gone.
bool remove_tree(const std::string& dir);

}  // namespace tritium::process
