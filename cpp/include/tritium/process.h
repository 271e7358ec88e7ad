// Child processes in their own process group, killed as a whole: the engine's runners, the
// model server a search starts.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tritium/core.h"

namespace tritium::process {

struct SpawnSpec {
  std::vector<std::string> argv;        // argv[0] is looked up on PATH when it has no '/'
  std::vector<std::string> env;         // "KEY=VALUE"; empty = inherit the parent's environment
  int channel_fd = -1;                  // becomes fd 3 in the child (-1: none)
  std::string output_path;              // the child's stdout and stderr go here ("" = /dev/null)
};

/// A started child, leader of its own process group.
struct Child {
  pid_t pid = -1;
};

Result<Child> spawn(const SpawnSpec& spec);

/// Kills the child's whole process group and reaps the child.
void kill_group(Child& child);

/// Reaps the child if it has exited; returns its wait status, or -1 if it is still running.
int try_reap(Child& child);

/// "exit code 3", "signal 9 (Killed)".
std::string describe_wait_status(int status);

}  // namespace tritium::process
