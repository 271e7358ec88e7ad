#include "../../src/exec/frame.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace tritium::exec {
namespace {

using Clock = std::chrono::steady_clock;

struct SocketPair : ::testing::Test {
  int fds[2] = {-1, -1};
  void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
  void TearDown() override {
    for (int fd : fds)
      if (fd >= 0) close(fd);
  }
  Clock::time_point soon() { return Clock::now() + std::chrono::milliseconds(200); }
};

TEST_F(SocketPair, RoundTripsAFrame) {
  ASSERT_TRUE(write_frame(fds[0], R"({"op":"x"})"));
  std::string payload;
  ASSERT_EQ(read_frame(fds[1], soon(), payload), ReadStatus::ok);
  EXPECT_EQ(payload, R"({"op":"x"})");
}

TEST_F(SocketPair, RoundTripsAnEmptyAndALargeFrame) {
  const std::string big(3 << 20, 'x');
  std::string payload;
  ASSERT_TRUE(write_frame(fds[0], ""));
  ASSERT_EQ(read_frame(fds[1], soon(), payload), ReadStatus::ok);
  EXPECT_EQ(payload, "");
  std::thread writer([&] { write_frame(fds[0], big); });
  EXPECT_EQ(read_frame(fds[1], Clock::now() + std::chrono::seconds(5), payload), ReadStatus::ok);
  writer.join();
  EXPECT_EQ(payload, big);
}

TEST_F(SocketPair, TimesOutWhenNothingArrives) {
  std::string payload;
  EXPECT_EQ(read_frame(fds[1], soon(), payload), ReadStatus::timeout);
}

TEST_F(SocketPair, TimesOutOnAHalfSentFrame) {
  const char half[] = {5, 0, 0, 0, 'a', 'b'};  // promises 5 bytes, sends 2
  ASSERT_EQ(write(fds[0], half, sizeof half), 6);
  std::string payload;
  EXPECT_EQ(read_frame(fds[1], soon(), payload), ReadStatus::timeout);
}

TEST_F(SocketPair, ReportsAClosedPeer) {
  close(fds[0]);
  fds[0] = -1;
  std::string payload;
  EXPECT_EQ(read_frame(fds[1], soon(), payload), ReadStatus::closed);
}

TEST_F(SocketPair, RefusesAnOversizedLengthBeforeAllocating) {
  ASSERT_EQ(write(fds[0], "\xff\xff\xff\x7f", 4), 4);
  std::string payload;
  EXPECT_EQ(read_frame(fds[1], soon(), payload), ReadStatus::bad_frame);
}

TEST_F(SocketPair, WritingToAClosedPeerFailsWithoutSigpipe) {
  close(fds[1]);
  fds[1] = -1;
  EXPECT_FALSE(write_frame(fds[0], std::string(1 << 20, 'x')));
}

}  // namespace
}  // namespace tritium::exec
