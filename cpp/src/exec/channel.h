// Private to exec: the shared memory and pipes through which a candidate's worker ships each set
// of outputs to its trusted comparer (python/tritium/runner/channel.py has the protocol). The
// engine makes one per job; both sides open it through /proc/<engine pid>/fd and check that what
// they opened is this job's (inode numbers), so a late process never reads another job's channel.
// On a GPU the spec also names a socket path in the job's directory and the bytes of device
// halves: the comparer allocates those and hands them to the worker (device_memory.py).
#pragma once

#include <cstddef>
#include <string>

#include "tritium/core.h"

namespace tritium::exec {

class Channel {
 public:
  /// A buffer of `bytes` (memory, not disk: a memfd) and the two pipes; with a `socket` path, device
  /// halves of `device_bytes` may replace the buffer (a GPU job).
  static Result<Channel> create(std::size_t bytes, std::size_t device_bytes = 0, std::string socket = {});
  Channel(Channel&& other) noexcept;
  Channel& operator=(Channel&& other) noexcept;
  Channel(const Channel&) = delete;
  ~Channel();

  /// What the request of each side names: the engine's pid, the descriptors and their inodes.
  Json spec() const;
  /// Closes the engine's ends: a side still waiting then sees the end of the stream.
  void close();

 private:
  Channel() = default;
  int buffer_ = -1, ready_[2] = {-1, -1}, go_[2] = {-1, -1};
  std::size_t bytes_ = 0, device_bytes_ = 0;
  std::string socket_;
};

}  // namespace tritium::exec
