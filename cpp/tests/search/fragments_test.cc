// Fragment partitions: contiguous runs of at most five compute operators, in a fixed preference order.
#include <gtest/gtest.h>

#include <set>

#include "tritium/search.h"

namespace tritium::search {
namespace {

using Partitions = std::vector<std::vector<int>>;

TEST(FragmentPartitions, ThreeOpsHaveFourMostFusedAndFullySplitFirst) {
  EXPECT_EQ(fragment_partitions(3, 5, 100), (Partitions{{3}, {1, 1, 1}, {2, 1}, {1, 2}}));
}

TEST(FragmentPartitions, CountTheCompositionsWithPartsOfAtMostFive) {
  // Compositions of n with parts <= 5: 2^(n-1) up to n = 5, then a five-term recurrence.
  const std::vector<std::size_t> expected = {1, 2, 4, 8, 16, 31, 61, 120};
  for (int n = 1; n <= 8; ++n) {
    const auto parts = fragment_partitions(n, 5, 1000);
    EXPECT_EQ(parts.size(), expected[n - 1]) << n;
    EXPECT_EQ(std::set<std::vector<int>>(parts.begin(), parts.end()).size(), parts.size()) << n;  // no repeats
    for (const auto& p : parts) {
      int sum = 0;
      for (int s : p) {
        EXPECT_GE(s, 1);
        EXPECT_LE(s, 5);
        sum += s;
      }
      EXPECT_EQ(sum, n);
    }
  }
}

TEST(FragmentPartitions, TheCapKeepsTheMostFusedAndTheFullySplit) {
  EXPECT_EQ(fragment_partitions(12, 5, 2), (Partitions{{5, 5, 2}, std::vector<int>(12, 1)}));
  EXPECT_EQ(fragment_partitions(40, 5, 16).size(), 16u);
  EXPECT_EQ(fragment_partitions(4, 5, 1), (Partitions{{4}}));
  const auto capped = fragment_partitions(7, 5, 5);
  EXPECT_EQ(capped, (Partitions{{5, 2}, std::vector<int>(7, 1), {4, 3}, {3, 4}, {2, 5}}));
}

TEST(FragmentPartitions, NothingForNoOps) {
  EXPECT_TRUE(fragment_partitions(0, 5, 16).empty());
  EXPECT_TRUE(fragment_partitions(3, 5, 0).empty());
}

}  // namespace
}  // namespace tritium::search
