#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../../src/exec/reference_store.h"

namespace fs = std::filesystem;

namespace tritium::exec {
namespace {

// References of 1,000 bytes each, written into the store's directories as the engine's are.
struct ReferenceStoreTest : ::testing::Test {
  fs::path root;
  std::atomic<int> computed{0};

  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root = fs::temp_directory_path() / ("tritium-refs-test-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(root);
  }
  void TearDown() override { fs::remove_all(root); }

  ReferenceStore::Compute writes(std::size_t bytes, bool ok = true) {
    return [this, bytes, ok](const fs::path& dir) {
      ++computed;
      std::ofstream(dir / "trial-0.out.tt", std::ios::binary) << std::string(bytes, 'x');
      Reference ref;
      ref.ok = ok;
      ref.error = ok ? "" : "the task's reference failed";
      ref.dir = dir;
      return ref;
    };
  }
};

TEST_F(ReferenceStoreTest, ComputesOncePerKeyAndKeepsWhatFits) {
  ReferenceStore store(root, 10'000);
  const auto a = store.get("a", writes(1000));
  const auto again = store.get("a", writes(1000));
  EXPECT_EQ(computed, 1);
  EXPECT_EQ(a->dir, again->dir);
  EXPECT_EQ(store.bytes(), 1000u);
  EXPECT_TRUE(fs::exists(a->dir / "trial-0.out.tt"));
}

TEST_F(ReferenceStoreTest, TrimsTheLeastRecentlyUsedIdleReferencesPastTheBudget) {
  ReferenceStore store(root, 2500);
  fs::path first, second;
  {
    const auto a = store.get("a", writes(1000));
    first = a->dir;
  }
  {
    const auto b = store.get("b", writes(1000));
    second = b->dir;
  }
  { const auto a = store.get("a", writes(1000)); }  // a is now the more recent
  { const auto c = store.get("c", writes(1000)); }  // 3,000 bytes: b goes
  EXPECT_EQ(computed, 3);
  EXPECT_TRUE(fs::exists(first));
  EXPECT_FALSE(fs::exists(second));
  EXPECT_EQ(store.bytes(), 2000u);
  bool recomputed = false;
  const auto b = store.get("b", writes(1000), &recomputed);  // asked again: computed afresh
  EXPECT_TRUE(recomputed);
  EXPECT_NE(b->dir, second);
  EXPECT_TRUE(fs::exists(b->dir / "trial-0.out.tt"));
}

TEST_F(ReferenceStoreTest, NeverDeletesAReferenceWhileALeaseOrItsCopyLives) {
  ReferenceStore store(root, 0);  // nothing idle may stay
  auto a = store.get("a", writes(1000));
  auto copy = a;  // as a queued timing holds one
  { const auto b = store.get("b", writes(1000)); }
  EXPECT_TRUE(fs::exists(a->dir / "trial-0.out.tt"));
  const fs::path dir = a->dir;
  a.reset();
  EXPECT_TRUE(fs::exists(dir));
  copy.reset();
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(store.bytes(), 0u);
}

TEST_F(ReferenceStoreTest, KeepsAFailedReferencesErrorWithoutItsFiles) {
  ReferenceStore store(root, 10'000);
  fs::path dir;
  {
    const auto bad = store.get("bad", writes(1000, false));
    EXPECT_FALSE(bad->ok);
    dir = bad->dir;
  }
  const auto again = store.get("bad", writes(1000));
  EXPECT_EQ(computed, 1);  // not retried per candidate
  EXPECT_FALSE(again->ok);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(store.bytes(), 0u);
}

TEST_F(ReferenceStoreTest, ConcurrentCallersShareOneComputation) {
  ReferenceStore store(root, 0);
  std::vector<std::thread> threads;
  std::atomic<int> saw_files{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 50; ++k) {
        const auto ref = store.get("shared", writes(100));
        if (fs::exists(ref->dir / "trial-0.out.tt")) ++saw_files;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(saw_files, 400);  // no lease ever found its files trimmed from under it
  EXPECT_GE(computed, 1);
  EXPECT_EQ(store.bytes(), 0u);
}

}  // namespace
}  // namespace tritium::exec
