#include <gtest/gtest.h>

#include "tritium/search.h"

namespace tritium::search {
namespace {

Confirmation reruns(std::vector<double> first_ms, std::vector<double> best_ms, bool always_correct = true) {
  Confirmation c{0, 5, std::move(first_ms), std::move(best_ms), always_correct};
  return c;
}

TEST(Confirmation, TheMediansDecideNotTheFastestRun) {
  // The best's one lucky run (0.01) does not count: its median is slower than the first's.
  const auto c = reruns({0.050, 0.052, 0.049}, {0.010, 0.060, 0.061});
  EXPECT_FALSE(c.best_holds());
  EXPECT_NEAR(c.speedup(), 0.050 / 0.060, 1e-12);
}

TEST(Confirmation, AFasterBestHoldsWithItsMedianSpeedup) {
  const auto c = reruns({0.30, 0.26, 0.28, 0.27}, {0.10, 0.08, 0.09, 0.50});
  EXPECT_TRUE(c.best_holds());
  EXPECT_NEAR(c.speedup(), 0.275 / 0.095, 1e-12);
}

TEST(Confirmation, ABestThatFailsOnceGivesWay) {
  EXPECT_FALSE(reruns({0.30, 0.30}, {0.10, 0.10}, false).best_holds());
  EXPECT_FALSE(reruns({0.30}, {}).best_holds());  // never timed again: nothing holds
  EXPECT_EQ(reruns({0.30}, {}).speedup(), 0);
}

TEST(Confirmation, ATieKeepsTheFirst) { EXPECT_FALSE(reruns({0.1, 0.1}, {0.1, 0.1}).best_holds()); }

}  // namespace
}  // namespace tritium::search
