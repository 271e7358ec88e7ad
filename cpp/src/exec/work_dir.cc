#include "work_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace fs = std::filesystem;

namespace tritium::exec {
namespace {

constexpr const char* kPrefix = "tritium-eval-";
constexpr const char* kLock = "lock";

// Created under a temporary name, locked, then renamed into place: a reclaiming engine that finds
// `lock` always finds it held while its owner lives.
int take_lock(const fs::path& dir) {
  std::string pattern = (dir / ".lock-XXXXXX").string();
  const int fd = mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX) != 0 || rename(pattern.c_str(), (dir / kLock).c_str()) != 0) {
    unlink(pattern.c_str());
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

Result<WorkDir> WorkDir::create(const std::string& requested, bool keep) {
  std::error_code ec;
  WorkDir w;
  if (!requested.empty()) {
    w.path_ = requested;
    fs::create_directories(w.path_, ec);
    // A directory an engine made for itself, given again: held (shared) so that nobody reclaims it
    // under us; never removed by us.
    if (!ec) w.lock_fd_ = open((w.path_ / kLock).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (w.lock_fd_ >= 0) flock(w.lock_fd_, LOCK_SH | LOCK_NB);
  } else {
    std::string pattern = (fs::temp_directory_path() / (std::string(kPrefix) + "XXXXXX")).string();
    if (!mkdtemp(pattern.data())) ec = std::error_code(errno, std::generic_category());
    w.path_ = pattern;
    w.remove_ = !ec && !keep;
  }
  if (ec) return Error{fmt::format("cannot create the work directory {}: {}", w.path_.string(), ec.message())};
  fs::create_directories(w.path_ / "refs", ec);
  fs::create_directories(w.path_ / "jobs", ec);
  // Sandboxed candidates may run under another uid: they traverse these, but cannot list them.
  for (const auto& d : {w.path_, w.path_ / "jobs"}) chmod(d.c_str(), 0711);
  chmod((w.path_ / "refs").c_str(), 0700);
  if (w.remove_) {
    w.lock_fd_ = take_lock(w.path_);
    // Without a guard the directory is still removed by close(), or reclaimed once the lock is free.
    if (auto guard = process::guard_directory(w.path_.string(), w.lock_fd_)) w.guard_ = *guard;
  }
  return w;
}

WorkDir::WorkDir(WorkDir&& other) noexcept { *this = std::move(other); }

WorkDir& WorkDir::operator=(WorkDir&& other) noexcept {
  if (this == &other) return *this;
  close();
  path_ = std::move(other.path_);
  remove_ = std::exchange(other.remove_, false);
  lock_fd_ = std::exchange(other.lock_fd_, -1);
  guard_ = std::exchange(other.guard_, {});
  return *this;
}

WorkDir::~WorkDir() { close(); }

void WorkDir::close() {
  if (remove_) process::remove_tree(path_.string());
  remove_ = false;
  process::release(guard_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
}

std::vector<fs::path> reclaim_work_dirs(const fs::path& parent) {
  std::vector<fs::path> removed;
  std::error_code ec;
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path dir = it->path();
    if (dir.filename().string().rfind(kPrefix, 0) != 0) continue;
    struct stat st{};
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
    const int fd = open((dir / kLock).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && process::remove_tree(dir.string())) removed.push_back(dir);
    ::close(fd);
  }
  return removed;
}

}  // namespace tritium::exec
