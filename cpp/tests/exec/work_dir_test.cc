#include "../../src/exec/work_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace tritium::exec {
namespace {

// Named after this test: a plain name ("fresh") in /tmp removed whatever else was there (a fresh
// clone of this repository, under test).
fs::path fresh_parent(const std::string& name) {
  const fs::path parent = fs::path(::testing::TempDir()) / ("tritium-work-dir-test-" + name);
  fs::remove_all(parent);
  fs::create_directories(parent);
  return parent;
}

fs::path work_dir(const fs::path& parent, const std::string& name, bool with_lock) {
  const fs::path dir = parent / ("tritium-eval-" + name);
  fs::create_directories(dir / "refs");
  std::ofstream(dir / "refs" / "data") << "reference";
  if (with_lock) std::ofstream(dir / "lock");
  return dir;
}

TEST(ReclaimWorkDirs, RemovesOnlyDirectoriesWhoseLockIsFree) {
  const fs::path parent = fresh_parent("reclaim");
  const fs::path dead = work_dir(parent, "dead", true);
  const fs::path alive = work_dir(parent, "alive", true);
  const fs::path no_lock = work_dir(parent, "nolock", false);  // a user's --work-dir, --keep-files
  const fs::path other = parent / "something-else";
  fs::create_directories(other);
  std::ofstream(other / "lock");
  const int held = open((alive / "lock").c_str(), O_RDONLY);
  ASSERT_EQ(flock(held, LOCK_EX), 0);

  EXPECT_EQ(reclaim_work_dirs(parent), std::vector<fs::path>{dead});
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive / "refs" / "data"));
  EXPECT_TRUE(fs::exists(no_lock));
  EXPECT_TRUE(fs::exists(other));
  close(held);
  EXPECT_EQ(reclaim_work_dirs(parent), std::vector<fs::path>{alive});  // its owner has gone
}

TEST(WorkDir, AFreshOneIsLockedWhileItLivesAndRemovedAtTheEnd) {
  const fs::path parent = fresh_parent("fresh");
  setenv("TMPDIR", parent.c_str(), 1);
  auto dir = WorkDir::create("", false);
  unsetenv("TMPDIR");
  ASSERT_TRUE(dir) << dir.error().message;
  const fs::path path = dir->path();
  EXPECT_EQ(path.parent_path(), parent);
  EXPECT_TRUE(fs::is_regular_file(path / "lock"));
  EXPECT_TRUE(reclaim_work_dirs(parent).empty());  // held by its owner (and its guard)
  dir->close();
  EXPECT_FALSE(fs::exists(path));
}

TEST(WorkDir, AGivenOneIsNeverRemovedNorLocked) {
  const fs::path given = fresh_parent("given") / "tritium-eval-mine";
  {
    auto dir = WorkDir::create(given.string(), false);
    ASSERT_TRUE(dir) << dir.error().message;
  }
  EXPECT_TRUE(fs::is_directory(given / "refs"));
  EXPECT_FALSE(fs::exists(given / "lock"));
  EXPECT_TRUE(reclaim_work_dirs(given.parent_path()).empty());
}

TEST(WorkDir, AKeptOneHasNoLockSoNoEngineReclaimsIt) {
  const fs::path parent = fresh_parent("kept");
  setenv("TMPDIR", parent.c_str(), 1);
  auto dir = WorkDir::create("", true);
  unsetenv("TMPDIR");
  ASSERT_TRUE(dir);
  const fs::path path = dir->path();
  dir->close();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path / "lock"));
  EXPECT_TRUE(reclaim_work_dirs(parent).empty());
}

}  // namespace
}  // namespace tritium::exec
