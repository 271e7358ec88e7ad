// A job's channel: a memfd and two pipes, all close-on-exec (no runner the engine starts later
// inherits them); the sides open them by path, not by inheritance.
#include "channel.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tritium::exec {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

long long inode(int fd) {
  struct stat st{};
  return fstat(fd, &st) == 0 ? static_cast<long long>(st.st_ino) : -1;
}

}  // namespace

Result<Channel> Channel::create(std::size_t bytes, std::size_t device_bytes, std::string socket) {
  Channel c;
  c.bytes_ = bytes;
  // A Unix socket's path holds at most 107 bytes: a longer one keeps the halves in host memory.
  if (!socket.empty() && socket.size() < 108 && device_bytes > 0) {
    c.socket_ = std::move(socket);
    c.device_bytes_ = device_bytes;
  }
  c.buffer_ = memfd_create("tritium-outputs", MFD_CLOEXEC);
  if (c.buffer_ < 0 || ftruncate(c.buffer_, static_cast<off_t>(bytes)) != 0 || pipe2(c.ready_, O_CLOEXEC) != 0 ||
      pipe2(c.go_, O_CLOEXEC) != 0)
    return Error{
        fmt::format("cannot make the channel for a candidate's outputs ({} bytes): {}", bytes, std::strerror(errno))};
  return c;
}

Channel::Channel(Channel&& o) noexcept { *this = std::move(o); }

Channel& Channel::operator=(Channel&& o) noexcept {
  if (this == &o) return *this;
  close();
  std::swap(buffer_, o.buffer_);
  std::swap(ready_, o.ready_);
  std::swap(go_, o.go_);
  bytes_ = o.bytes_;
  device_bytes_ = o.device_bytes_;
  socket_ = std::move(o.socket_);
  return *this;
}

Channel::~Channel() { close(); }

void Channel::close() {
  close_fd(buffer_);
  for (int i = 0; i < 2; ++i) {
    close_fd(ready_[i]);
    close_fd(go_[i]);
  }
}

Json Channel::spec() const {
  Json spec = {{"pid", static_cast<long long>(getpid())},
               {"bytes", bytes_},
               {"buffer", buffer_},
               {"ready_r", ready_[0]},
               {"ready_w", ready_[1]},
               {"go_r", go_[0]},
               {"go_w", go_[1]},
               {"inodes", {{"buffer", inode(buffer_)}, {"ready", inode(ready_[0])}, {"go", inode(go_[0])}}}};
  if (!socket_.empty()) spec.update({{"socket", socket_}, {"device_bytes", device_bytes_}});
  return spec;
}

}  // namespace tritium::exec
