#include "frame.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>

namespace tritium::exec {
namespace {

using Clock = std::chrono::steady_clock;

bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

ReadStatus recv_all(int fd, Clock::time_point deadline, char* data, std::size_t size) {
  while (size > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return ReadStatus::timeout;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return ReadStatus::timeout;
    const ssize_t n = recv(fd, data, size, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return ReadStatus::closed;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return ReadStatus::ok;
}

}  // namespace

bool write_frame(int fd, const std::string& payload) {
  const auto n = static_cast<std::uint32_t>(payload.size());
  const unsigned char header[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                                   static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
  return send_all(fd, reinterpret_cast<const char*>(header), 4) && send_all(fd, payload.data(), payload.size());
}

ReadStatus read_frame(int fd, Clock::time_point deadline, std::string& payload) {
  unsigned char header[4];
  if (auto s = recv_all(fd, deadline, reinterpret_cast<char*>(header), 4); s != ReadStatus::ok) return s;
  const std::size_t n = header[0] | (header[1] << 8) | (header[2] << 16) | (std::size_t{header[3]} << 24);
  if (n > kMaxFrameBytes) return ReadStatus::bad_frame;
  payload.assign(n, '\0');
  return recv_all(fd, deadline, payload.data(), n);
}

}  // namespace tritium::exec
