#include "../../src/exec/cache.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace tritium::exec {
namespace {

// A fresh directory per test, removed afterwards; the cache file sits one level down so that
// open() has a parent directory to create.
struct VerdictCacheTest : ::testing::Test {
  fs::path dir;
  fs::path file;

  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = fs::temp_directory_path() / ("tritium-cache-test-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(dir);
    file = dir / "nested" / "verdicts.sqlite";
  }
  void TearDown() override { fs::remove_all(dir); }

  VerdictCache open_ok() {
    auto cache = VerdictCache::open(file);
    if (!cache) ADD_FAILURE() << cache.error().message;
    return std::move(*cache);
  }

  // Runs one SQL statement on the file with a separate raw connection.
  void raw_sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char* message = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK) << (message ? message : "");
    sqlite3_free(message);
    sqlite3_close(db);
  }
};

Json verdict(int n) { return {{"ok", n % 2 == 0}, {"n", n}, {"stage", "correctness"}}; }

TEST_F(VerdictCacheTest, MissesThenHitsAfterAPut) {
  auto cache = open_ok();
  EXPECT_TRUE(fs::exists(file));
  EXPECT_EQ(cache.get("k"), std::nullopt);
  EXPECT_EQ(cache.size(), 0u);
  ASSERT_TRUE(cache.put("k", verdict(1)));
  EXPECT_EQ(cache.get("k"), verdict(1));
  EXPECT_EQ(cache.get("other"), std::nullopt);
  EXPECT_EQ(cache.size(), 1u);
}

TEST_F(VerdictCacheTest, KeepsKeyOrderAndUnicode) {
  auto cache = open_ok();
  const Json v = {{"z", 1}, {"a", "größe ∑"}, {"m", {{"y", nullptr}, {"b", 2.5}}}};
  ASSERT_TRUE(cache.put("k", v));
  ASSERT_TRUE(cache.get("k"));
  EXPECT_EQ(cache.get("k")->dump(), v.dump());
}

TEST_F(VerdictCacheTest, PutReplacesAnExistingVerdict) {
  auto cache = open_ok();
  ASSERT_TRUE(cache.put("k", verdict(1)));
  ASSERT_TRUE(cache.put("k", verdict(2)));
  EXPECT_EQ(cache.get("k"), verdict(2));
  EXPECT_EQ(cache.size(), 1u);
}

TEST_F(VerdictCacheTest, PersistsAcrossReopen) {
  {
    auto cache = open_ok();
    ASSERT_TRUE(cache.put("a", verdict(1)));
    ASSERT_TRUE(cache.put("b", verdict(2)));
  }
  auto cache = open_ok();
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.get("a"), verdict(1));
  EXPECT_EQ(cache.get("b"), verdict(2));
}

TEST_F(VerdictCacheTest, StaysUsableAfterAMove) {
  auto first = open_ok();
  ASSERT_TRUE(first.put("a", verdict(1)));
  VerdictCache moved = std::move(first);
  EXPECT_EQ(moved.get("a"), verdict(1));
  auto other = open_ok();
  other = std::move(moved);
  EXPECT_EQ(other.get("a"), verdict(1));
  EXPECT_TRUE(other.put("b", verdict(2)));
}

TEST_F(VerdictCacheTest, TwoCachesOnOneFileSeeEachOthersWrites) {
  auto writer = open_ok();
  auto reader = open_ok();
  EXPECT_EQ(reader.get("k"), std::nullopt);
  ASSERT_TRUE(writer.put("k", verdict(3)));
  EXPECT_EQ(reader.get("k"), verdict(3));
  ASSERT_TRUE(reader.put("k", verdict(4)));
  EXPECT_EQ(writer.get("k"), verdict(4));
}

TEST_F(VerdictCacheTest, ServesEightThreadsAtOnce) {
  auto cache = open_ok();
  auto second = open_ok();  // a second connection on the same file contends for the write lock
  constexpr int kThreads = 8, kPerThread = 50;
  std::atomic<int> failures = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      VerdictCache& mine = t % 2 ? second : cache;
      for (int i = 0; i < kPerThread; ++i) {
        const std::string key = std::to_string(t) + "/" + std::to_string(i);
        if (!mine.put(key, verdict(i))) ++failures;
        if (mine.get(key) != verdict(i)) ++failures;
        mine.get(std::to_string((t + 1) % kThreads) + "/" + std::to_string(i));  // may hit or miss
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(cache.size(), static_cast<std::size_t>(kThreads * kPerThread));
  EXPECT_EQ(second.get("7/49"), verdict(49));
}

TEST_F(VerdictCacheTest, TwoProcessesWriteOneFileAtOnce) {
  {
    open_ok();
  }  // created before the fork, so the child inherits no open connection
  constexpr int kPerProcess = 200;
  auto write_all = [&](const std::string& prefix) {
    auto cache = VerdictCache::open(file);
    int failures = cache ? 0 : 1;
    for (int i = 0; cache && i < kPerProcess; ++i)
      if (!cache->put(prefix + std::to_string(i), verdict(i))) ++failures;
    return failures;
  };
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(write_all("child/") == 0 ? 0 : 1);
  EXPECT_EQ(write_all("parent/"), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto cache = open_ok();
  EXPECT_EQ(cache.size(), static_cast<std::size_t>(2 * kPerProcess));
  EXPECT_EQ(cache.get("child/199"), verdict(199));
}

TEST_F(VerdictCacheTest, RefusesAFileThatIsNotSqlite) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << "{\"these\": \"are not the droppings of SQLite\"}\n" << std::string(4096, 'x');
  auto cache = VerdictCache::open(file);
  ASSERT_FALSE(cache);
  EXPECT_NE(cache.error().message.find(file.string()), std::string::npos) << cache.error().message;
  EXPECT_NE(cache.error().message.find("delete it or give another cache file (the cache option, --cache)"),
            std::string::npos)
      << cache.error().message;
}

TEST_F(VerdictCacheTest, RefusesANewerSchemaVersion) {
  {
    open_ok();
  }
  raw_sql("UPDATE meta SET value = '" + std::to_string(kCacheSchemaVersion + 1) + "' WHERE key = 'schema_version'");
  auto cache = VerdictCache::open(file);
  ASSERT_FALSE(cache);
  EXPECT_NE(cache.error().message.find(file.string()), std::string::npos) << cache.error().message;
  EXPECT_NE(cache.error().message.find("newer"), std::string::npos) << cache.error().message;
}

TEST_F(VerdictCacheTest, ReadsACorruptRowAsAMiss) {
  {
    auto cache = open_ok();
    ASSERT_TRUE(cache.put("good", verdict(1)));
  }
  raw_sql("INSERT INTO verdicts VALUES ('truncated', '{\"ok\": tr', 0), ('array', '[1, 2]', 0), ('text', 'hello', 0)");
  auto cache = open_ok();
  EXPECT_EQ(cache.get("truncated"), std::nullopt);
  EXPECT_EQ(cache.get("array"), std::nullopt);
  EXPECT_EQ(cache.get("text"), std::nullopt);
  EXPECT_EQ(cache.get("good"), verdict(1));
  ASSERT_TRUE(cache.put("truncated", verdict(2)));  // a put repairs it
  EXPECT_EQ(cache.get("truncated"), verdict(2));
}

TEST(CacheKey, IsTheSha256OfTheDumpedParts) {
  const Json parts = {{"task", "class Model: ..."}, {"candidate", "import triton"}, {"device", "cpu"}};
  EXPECT_EQ(cache_key(parts), sha256_hex(parts.dump()));
  EXPECT_EQ(cache_key(parts).size(), 64u);
  Json changed = parts;
  changed["device"] = "cuda";
  EXPECT_NE(cache_key(changed), cache_key(parts));
}

}  // namespace
}  // namespace tritium::exec
