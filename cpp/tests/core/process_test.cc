#include "tritium/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace tritium::process {
namespace {

int wait_exit(Child& child) {
  for (int i = 0; i < 500; ++i) {
    if (int status = try_reap(child); status >= 0) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

TEST(Spawn, RunsAProgramAndCapturesItsOutput) {
  const std::string out = ::testing::TempDir() + "/spawn_out.txt";
  auto child = spawn({{"sh", "-c", "echo hello; echo oops >&2; exit 3"}, {}, -1, out});
  ASSERT_TRUE(child) << child.error().message;
  const int status = wait_exit(*child);
  EXPECT_EQ(describe_wait_status(status), "exit code 3");
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "hello\noops\n");
}

TEST(Spawn, NamesAProgramThatDoesNotExist) {
  auto child = spawn({{"/no/such/program"}, {}, -1, ""});
  ASSERT_FALSE(child);
  EXPECT_NE(child.error().message.find("/no/such/program"), std::string::npos);
}

TEST(Spawn, ChildLeadsItsOwnProcessGroup) {
  auto child = spawn({{"sleep", "30"}, {}, -1, ""});
  ASSERT_TRUE(child);
  EXPECT_EQ(getpgid(child->pid), child->pid);
  kill_group(*child);
  EXPECT_EQ(child->pid, -1);
}

TEST(KillGroup, AlsoKillsGrandchildren) {
  const std::string pidfile = ::testing::TempDir() + "/grandchild.pid";
  auto child = spawn({{"sh", "-c", "sleep 60 & echo $! > " + pidfile + "; wait"}, {}, -1, ""});
  ASSERT_TRUE(child);
  pid_t grandchild = 0;
  for (int i = 0; i < 200 && grandchild == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream in(pidfile);
    in >> grandchild;
  }
  ASSERT_GT(grandchild, 0);
  kill_group(*child);
  // The orphaned grandchild is reaped by init; it must be gone or a zombie soon.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string pid, comm, state;
    gone = !(stat >> pid >> comm >> state) || state == "Z";
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
}

// A process another one started (a runner the zygote forks): `sh` starts a sleep in its own group,
// so the sleep is a grandchild here, never ours to reap.
pid_t grandchild_in_own_group(const std::string& name, int seconds) {
  const std::string pidfile = ::testing::TempDir() + "/" + name + ".pid";
  std::filesystem::remove(pidfile);
  auto child = spawn({{"sh", "-c", "setsid sleep " + std::to_string(seconds) + " & echo $! > " + pidfile}, {}, -1, ""});
  if (!child) return -1;
  wait_exit(*child);
  pid_t pid = 0;
  for (int i = 0; i < 200 && pid == 0; ++i) {
    std::ifstream in(pidfile);
    in >> pid;
    if (pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pid;
}

TEST(Adopt, FollowsAProcessItDidNotStartUntilItEnds) {
  const pid_t pid = grandchild_in_own_group("adopted-short", 1);
  ASSERT_GT(pid, 0);
  auto adopted = adopt(pid);
  ASSERT_TRUE(adopted) << adopted.error().message;
  EXPECT_EQ(try_reap(*adopted), -1);  // running
  const int status = wait_exit(*adopted);
  EXPECT_EQ(status, kStatusUnknown);  // ended, reaped by its parent: no status here
  EXPECT_NE(describe_wait_status(status).find("unknown"), std::string::npos);
  EXPECT_EQ(adopted->pid, -1);
}

TEST(Adopt, KillGroupEndsAnAdoptedProcess) {
  const pid_t pid = grandchild_in_own_group("adopted-long", 60);
  ASSERT_GT(pid, 0);
  auto adopted = adopt(pid);
  ASSERT_TRUE(adopted) << adopted.error().message;
  kill_group(*adopted);  // waits until it has ended
  EXPECT_EQ(adopted->pid, -1);
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string ignored, comm, state;
  EXPECT_TRUE(!(stat >> ignored >> comm >> state) || state == "Z");
}

TEST(Adopt, NamesAProcessThatIsGone) {
  auto child = spawn({{"true"}, {}, -1, ""});
  ASSERT_TRUE(child);
  const pid_t pid = child->pid;
  wait_exit(*child);
  EXPECT_FALSE(adopt(pid));
}

TEST(DescribeWaitStatus, NamesSignals) {
  auto child = spawn({{"sh", "-c", "kill -SEGV $$"}, {}, -1, ""});
  ASSERT_TRUE(child);
  EXPECT_EQ(describe_wait_status(wait_exit(*child)).rfind("signal 11", 0), 0u);
}

bool gone_within(const std::filesystem::path& p, double seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    if (!std::filesystem::exists(p)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::filesystem::path filled_dir(const std::string& name) {
  const std::filesystem::path dir = ::testing::TempDir() + "/tritium-process-test-" + name;
  std::filesystem::create_directories(dir / "a" / "b");
  std::ofstream(dir / "a" / "b" / "file") << "data";
  return dir;
}

TEST(DirectoryGuard, RemovesItsDirectoryWhenReleased) {
  const auto dir = filled_dir("guarded_released");
  auto guard = guard_directory(dir.string(), -1);
  ASSERT_TRUE(guard) << guard.error().message;
  EXPECT_TRUE(std::filesystem::exists(dir));  // nothing happens while the owner lives
  release(*guard);
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(guard->pid, -1);
}

TEST(DirectoryGuard, RemovesItsDirectoryWhenItsOwnerIsKilled) {
  const auto dir = filled_dir("guarded_killed");
  const pid_t owner = fork();
  if (owner == 0) {
    if (!guard_directory(dir.string(), -1)) _exit(1);
    pause();  // until SIGKILL
    _exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(std::filesystem::exists(dir));
  kill(owner, SIGKILL);
  waitpid(owner, nullptr, 0);
  EXPECT_TRUE(gone_within(dir, 10));
}

TEST(RemoveTree, RemovesWhatWasMadeUnwritable) {
  const auto dir = filled_dir("unwritable");
  chmod((dir / "a" / "b").c_str(), 0);
  chmod((dir / "a").c_str(), 0500);
  EXPECT_TRUE(remove_tree(dir.string()));
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace tritium::process
