#pragma once
// The engine's work directory and its lifetime (docs/engine.md, "Lifetime"). An engine's own
// directory (a fresh `tritium-eval-*` in the temporary directory) holds a lock, `lock`, flocked by
// its owner for as long as the engine lives and by the guard process that removes it once the
// owner is gone (a signal's default action, SIGKILL, an interpreter that never runs destructors).
// A directory whose lock is free has no owner left: the next engine removes it (reclaim_work_dirs).
// A --work-dir the user gives is never removed and gets no lock of its own.
#include <filesystem>
#include <string>
#include <vector>

#include "tritium/core.h"
#include "tritium/process.h"

namespace tritium::exec {

class WorkDir {
 public:
  WorkDir() = default;
  // `requested` empty: a fresh directory, ours, removed at the end unless `keep` (then it gets no
  // lock, so that no later engine reclaims it either). Otherwise that directory, created if needed.
  static Result<WorkDir> create(const std::string& requested, bool keep);
  WorkDir(WorkDir&& other) noexcept;
  WorkDir& operator=(WorkDir&& other) noexcept;
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  ~WorkDir();  // close()

  const std::filesystem::path& path() const { return path_; }

  // Removes the directory when it is ours and not kept (call it once nothing writes there any
  // more: the runners are gone), then lets the lock and the guard go.
  void close();

 private:
  std::filesystem::path path_;
  bool remove_ = false;
  int lock_fd_ = -1;
  process::DirectoryGuard guard_;
};

// Removes every `tritium-eval-*` directory directly under `parent` that this user owns and whose
// lock is free (its engine and guard are gone); returns what it removed. Directories without a
// lock (a user's --work-dir, --keep-files, ones made by older versions) are left alone.
std::vector<std::filesystem::path> reclaim_work_dirs(const std::filesystem::path& parent);

}  // namespace tritium::exec
