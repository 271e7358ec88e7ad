#include "../../src/exec/disk_budget.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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

  ReferenceStore::Compute writes(std::size_t bytes, bool ok = true, bool transient = false) {
    return [this, bytes, ok, transient](const fs::path& dir) {
      ++computed;
      std::ofstream(dir / "trial-0.out.tt", std::ios::binary) << std::string(bytes, 'x');
      Reference ref;
      ref.ok = ok;
      ref.error = ok ? "" : "the task's reference failed";
      ref.transient = transient;
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
  {
    const auto a = store.get("a", writes(1000));
  }  // a is now the more recent
  {
    const auto c = store.get("c", writes(1000));
  }  // 3,000 bytes: b goes
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
  {
    const auto b = store.get("b", writes(1000));
  }
  EXPECT_TRUE(fs::exists(a->dir / "trial-0.out.tt"));
  const fs::path dir = a->dir;
  a.reset();
  EXPECT_TRUE(fs::exists(dir));
  copy.reset();
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(store.bytes(), 0u);
}

// A full disk failed the runner, not the task: a long-lived engine (a reward server, an RL loop)
// judged every later candidate of the task an error until it was restarted.
TEST_F(ReferenceStoreTest, ComputesATransientFailureAgainWhenAskedNext) {
  ReferenceStore store(root, 10'000);
  fs::path dir;
  {
    const auto bad = store.get("full", writes(1000, false, true));
    EXPECT_FALSE(bad->ok);
    dir = bad->dir;
  }
  EXPECT_FALSE(fs::exists(dir));
  bool recomputed = false;
  const auto again = store.get("full", writes(1000), &recomputed);
  EXPECT_TRUE(recomputed);
  EXPECT_EQ(computed, 2);
  EXPECT_TRUE(again->ok);
  EXPECT_EQ(store.bytes(), 1000u);
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

TEST_F(ReferenceStoreTest, ShedDeletesEveryIdleReferenceAndRemembersTheLargest) {
  ReferenceStore store(root, 1'000'000);
  {
    const auto a = store.get("a", writes(1000));
  }
  const auto b = store.get("b", writes(3000));
  store.shed();
  EXPECT_EQ(store.bytes(), 3000u);  // b is being read
  EXPECT_EQ(store.largest(), 3000u);
  EXPECT_EQ(b->bytes, 3000u);
}

// The gate over a pretend disk whose free space the test sets.
struct DiskGateTest : ::testing::Test {
  std::atomic<std::uintmax_t> free{1000};
  std::atomic<int> room_asked{0};
  DiskGate gate{[this] { return free.load(); }, [this] { ++room_asked; }, 0};
};

TEST_F(DiskGateTest, AJobAloneAlwaysEnters) {
  free = 0;
  const auto pass = gate.enter(5000);
  EXPECT_EQ(gate.waits(), 0u);
}

TEST_F(DiskGateTest, AJobWaitsForRoomBesideTheJobsInFlight) {
  auto first = gate.enter(600);
  std::atomic<bool> admitted{false};
  std::thread second([&] {
    const auto pass = gate.enter(600);  // 600 reserved + 600 > 1000 free
    admitted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(admitted);
  EXPECT_GE(room_asked, 1);  // idle references shed first
  first.reset();
  second.join();
  EXPECT_TRUE(admitted);
  EXPECT_EQ(gate.waits(), 1u);
}

TEST_F(DiskGateTest, RoomMadeBeforeWaitingAdmitsAtOnce) {
  DiskGate shedding{[this] { return free.load(); }, [this] { free = 5000; }, 0};
  const auto first = shedding.enter(600);
  const auto second = shedding.enter(600);
  EXPECT_EQ(shedding.waits(), 0u);
}

TEST_F(DiskGateTest, SmallJobsEnterSideBySide) {
  const auto a = gate.enter(300);
  const auto b = gate.enter(300);
  const auto c = gate.enter(300);
  EXPECT_EQ(gate.waits(), 0u);
  EXPECT_EQ(room_asked, 0);
}

TEST_F(DiskGateTest, AWaitingLargeJobIsNotPassedOverBySmallerOnes) {
  auto first = gate.enter(600);
  std::atomic<bool> large_in{false}, small_in{false};
  std::thread large([&] {
    const auto pass = gate.enter(900);  // waits for `first` to leave
    large_in = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread small([&] {
    const auto pass = gate.enter(100);  // would fit beside `first`, but the large job came first
    small_in = true;
    EXPECT_TRUE(large_in);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(large_in);
  EXPECT_FALSE(small_in);
  first.reset();
  large.join();
  small.join();
  EXPECT_TRUE(small_in);
}

}  // namespace
}  // namespace tritium::exec
