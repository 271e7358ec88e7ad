// Private to exec: the shared memory and pipes through which a candidate's worker ships each set
// of outputs to its trusted comparer (python/tritium/runner/channel.py has the protocol). The
// engine makes one per job; both sides open it through /proc/<engine pid>/fd and check that what
// they opened is this job's (inode numbers), so a late process never reads another job's channel.
#pragma once

#include <cstddef>

#include "tritium/core.h"

namespace tritium::exec {

class Channel {
 public:
  /// A buffer of `bytes` (memory, not disk: a memfd) and the two pipes.
  static Result<Channel> create(std::size_t bytes);
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
  std::size_t bytes_ = 0;
};

}  // namespace tritium::exec
