// The verdict cache: SQLite in WAL mode, one connection per VerdictCache, prepared statements.
#include "cache.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <system_error>

namespace fs = std::filesystem;

namespace tritium::exec {
namespace {

// How long a statement waits for another process's write lock before giving up.
constexpr int kBusyTimeoutMs = 10'000;

// sqlite3_close_v2 defers the close until the last statement is finalized, so the order in which
// a moved-over cache releases its members does not matter.
void close_db(sqlite3* db) { sqlite3_close_v2(db); }

// Resets a prepared statement when the call that used it returns, however it returns.
class ResetOnExit {
 public:
  explicit ResetOnExit(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~ResetOnExit() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  sqlite3_stmt* stmt_;
};

bool exec_sql(sqlite3* db, const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }

Error open_error(const fs::path& file, sqlite3* db) {
  const int code = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
  const std::string what = db ? sqlite3_errmsg(db) : "out of memory";
  if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
    return {
        fmt::format("verdict cache {}: not an SQLite database ({}); delete it or give another cache file (the cache "
                    "option, --cache)",
                    file.string(), what)};
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    return {
        fmt::format("verdict cache {}: locked by another process for over {} s ({}); retry, or give another cache file "
                    "(the cache option, --cache)",
                    file.string(), kBusyTimeoutMs / 1000, what)};
  return {
      fmt::format("verdict cache {}: cannot open ({}); check its permissions, or give another cache file (the cache "
                  "option, --cache)",
                  file.string(), what)};
}

// Creates the tables on a new file and reads the schema version of an existing one, in one write
// transaction so that two processes creating the same file cannot interleave.
std::optional<Error> init_schema(sqlite3* db, const fs::path& file) {
  if (!exec_sql(db, "BEGIN IMMEDIATE")) return open_error(file, db);
  auto fail = [&](std::optional<Error> error) {
    exec_sql(db, "ROLLBACK");
    return error;
  };
  if (!exec_sql(db, "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"))
    return fail(open_error(file, db));
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &raw, nullptr) != SQLITE_OK)
    return fail(open_error(file, db));
  std::optional<long long> found;
  int rc = sqlite3_step(raw);
  if (rc == SQLITE_ROW) found = sqlite3_column_int64(raw, 0);
  sqlite3_finalize(raw);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail(open_error(file, db));
  if (found && *found > kCacheSchemaVersion)
    return fail(Error{fmt::format(
        "verdict cache {}: schema version {} is newer than this Tritium's ({}); upgrade Tritium, or delete the file or "
        "give another cache file (the cache option, --cache)",
        file.string(), *found, kCacheSchemaVersion)});
  // Version 1 is the first schema: nothing to migrate yet.
  const std::string create = fmt::format(
      "CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, verdict TEXT NOT NULL, created REAL NOT NULL);"
      "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', '{}');"
      "COMMIT",
      kCacheSchemaVersion);
  if (!exec_sql(db, create.c_str())) return fail(open_error(file, db));
  return std::nullopt;
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void VerdictCache::CloseDb::operator()(sqlite3* db) const { close_db(db); }
void VerdictCache::Finalize::operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }

Result<VerdictCache> VerdictCache::open(const fs::path& file) {
  if (file.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec)
      return Error{fmt::format(
          "verdict cache {}: cannot create its directory ({}); give another cache file (the cache option, --cache)",
          file.string(), ec.message())};
  }
  VerdictCache cache;
  cache.file_ = file;
  sqlite3* raw = nullptr;
  // Our own mutex serialises the connection, so SQLite's is not needed.
  const int rc =
      sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  cache.db_.reset(raw);  // even a failed open allocates a handle that must be closed
  if (rc != SQLITE_OK) return open_error(file, raw);
  sqlite3* db = cache.db_.get();
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // WAL: readers never block the writer; NORMAL sync is durable across crashes of the process,
  // which is all a cache needs. The first statement that reads the file tells a non-SQLite file.
  if (!exec_sql(db, "PRAGMA journal_mode=WAL") || !exec_sql(db, "PRAGMA synchronous=NORMAL"))
    return open_error(file, db);
  if (auto error = init_schema(db, file)) return *error;

  auto prepare = [&](const char* sql, Statement& out) {
    sqlite3_stmt* stmt = nullptr;
    const bool ok = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) == SQLITE_OK;
    out.reset(stmt);
    return ok;
  };
  if (!prepare("SELECT verdict FROM verdicts WHERE key = ?1", cache.get_) ||
      !prepare("INSERT OR REPLACE INTO verdicts (key, verdict, created) VALUES (?1, ?2, ?3)", cache.put_) ||
      !prepare("SELECT COUNT(*) FROM verdicts", cache.count_))
    return open_error(file, db);
  return cache;
}

std::optional<Json> VerdictCache::get(const std::string& key) {
  std::lock_guard lock(*mutex_);
  sqlite3_stmt* stmt = get_.get();
  ResetOnExit reset(stmt);
  if (sqlite3_bind_text(stmt, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT) != SQLITE_OK ||
      sqlite3_step(stmt) != SQLITE_ROW)
    return std::nullopt;
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  if (!text) return std::nullopt;
  // A row that does not parse (a crashed writer, a hand edit) is a miss; put() will replace it.
  Json verdict = Json::parse(text, text + sqlite3_column_bytes(stmt, 0), nullptr, /*allow_exceptions=*/false);
  if (!verdict.is_object()) return std::nullopt;
  return verdict;
}

bool VerdictCache::put(const std::string& key, const Json& verdict) {
  std::string text;
  try {
    text = verdict.dump();
  } catch (const Json::type_error&) {  // a string that is not UTF-8: not storable as JSON
    return false;
  }
  std::lock_guard lock(*mutex_);
  sqlite3_stmt* stmt = put_.get();
  ResetOnExit reset(stmt);
  return sqlite3_bind_text(stmt, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT) == SQLITE_OK &&
         sqlite3_bind_text(stmt, 2, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT) == SQLITE_OK &&
         sqlite3_bind_double(stmt, 3, unix_seconds()) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_DONE;
}

std::size_t VerdictCache::size() {
  std::lock_guard lock(*mutex_);
  sqlite3_stmt* stmt = count_.get();
  ResetOnExit reset(stmt);
  if (sqlite3_step(stmt) != SQLITE_ROW) return 0;
  return static_cast<std::size_t>(sqlite3_column_int64(stmt, 0));
}

std::string cache_key(const Json& parts) { return sha256_hex(parts.dump()); }

}  // namespace tritium::exec
