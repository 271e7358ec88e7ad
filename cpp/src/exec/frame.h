// Private to exec: the runner protocol's framing. A frame is a 4-byte little-endian length, then
// that many bytes of UTF-8 JSON. Python's side is python/tritium/runner/protocol.py.
#pragma once

#include <chrono>
#include <string>

namespace tritium::exec {

inline constexpr std::size_t kMaxFrameBytes = 256u << 20;

enum class ReadStatus { ok, timeout, closed, bad_frame };

/// Writes one frame to a socket; false when the peer is gone (never raises SIGPIPE).
bool write_frame(int fd, const std::string& payload);

/// Reads one frame, waiting until `deadline` at most.
ReadStatus read_frame(int fd, std::chrono::steady_clock::time_point deadline, std::string& payload);

}  // namespace tritium::exec
