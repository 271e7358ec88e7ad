#include <gtest/gtest.h>

#include "tritium/core.h"

namespace tritium {
namespace {

TEST(Result, HoldsAValue) {
  Result<int> r = 42;
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 42);
}

TEST(Result, HoldsAnError) {
  Result<int> r = Error{"bad.py: broken; fix it"};
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "bad.py: broken; fix it");
}

TEST(Version, MatchesTheProjectVersion) { EXPECT_STREQ(version(), TRITIUM_VERSION); }

}  // namespace
}  // namespace tritium
