// Private to exec: the persistent verdict cache, one SQLite file mapping a content hash (of task,
// candidate, profile, device, versions) to the verdict the engine computed for it, so an
// unchanged candidate is never run twice. SQLite because several engine processes may share one
// file: WAL mode lets readers run beside a writer, and a busy timeout makes writers wait their turn.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "tritium/core.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tritium::exec {

/// The schema this build reads and writes (`meta.schema_version`); a newer file is refused.
inline constexpr int kCacheSchemaVersion = 1;

/// Thread-safe (one connection behind a mutex) and move-only; a moved-from cache is not used.
class VerdictCache {
 public:
  /// Opens or creates `file` (and its parent directories). The error names the file and the fix
  /// when it is not SQLite, has a newer schema, or cannot be opened.
  static Result<VerdictCache> open(const std::filesystem::path& file);

  /// The verdict stored under `key`; nullopt on a miss, and for a row that is not a JSON object.
  std::optional<Json> get(const std::string& key);
  /// Stores (or replaces) the verdict under `key`; false when it could not be written.
  bool put(const std::string& key, const Json& verdict);
  /// The number of stored verdicts.
  std::size_t size();
  const std::filesystem::path& file() const { return file_; }

 private:
  struct CloseDb {
    void operator()(sqlite3* db) const;
  };
  struct Finalize {
    void operator()(sqlite3_stmt* stmt) const;
  };
  using Statement = std::unique_ptr<sqlite3_stmt, Finalize>;

  VerdictCache() = default;

  std::filesystem::path file_;
  std::unique_ptr<sqlite3, CloseDb> db_;  // declared before the statements: closed after them
  Statement get_, put_, count_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();  // a pointer keeps us movable
};

/// The cache key of a verdict: sha256_hex(parts.dump()). `parts` is an object the caller builds
/// (task source, candidate code, profile, device, versions); its key order is part of the key.
/// Throws Json::type_error when a string in `parts` is not valid UTF-8.
std::string cache_key(const Json& parts);

}  // namespace tritium::exec
