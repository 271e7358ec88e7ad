// OptionReader: the JSON faces' options read by type, with errors naming the key and a typo refused.
#include <gtest/gtest.h>

#include "tritium/core.h"

namespace tritium {
namespace {

struct Options {
  std::string name = "x";
  int count = 1;
  unsigned seed = 0;
  double rate = 0.5;
  bool on = false;
  std::optional<std::uint64_t> limit;
  std::vector<int> ks = {1};
};

std::optional<Error> read(const Json& j, Options& o) {
  OptionReader r(j, "test options");
  r.read("name", o.name).read("count", o.count).read("seed", o.seed).read("rate", o.rate).read("on", o.on);
  r.read("limit", o.limit).read("ks", o.ks);
  return r.done();
}

TEST(OptionReader, TakesPresentKeysAndLeavesTheRestAtTheirDefaults) {
  Options o;
  EXPECT_FALSE(read(Json::parse(R"({"count": 3, "rate": 2, "limit": 7, "ks": [1, 5]})"), o));
  EXPECT_EQ(o.name, "x");
  EXPECT_EQ(o.count, 3);
  EXPECT_DOUBLE_EQ(o.rate, 2.0);  // an integer is a number
  EXPECT_EQ(o.limit, 7u);
  EXPECT_EQ(o.ks, (std::vector<int>{1, 5}));
  EXPECT_FALSE(read(Json::parse(R"({"limit": null})"), o));
  EXPECT_FALSE(o.limit);
  EXPECT_FALSE(read(Json(), o));  // null: all defaults
}

TEST(OptionReader, NamesTheKeyAndTheTypeItWanted) {
  Options o;
  auto e = read(Json::parse(R"({"count": "3"})"), o);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, R"(test options: "count" must be a whole number, not "3")");
  EXPECT_TRUE(read(Json::parse(R"({"count": 2.5})"), o));
  EXPECT_TRUE(read(Json::parse(R"({"seed": -1})"), o));  // unsigned
  EXPECT_TRUE(read(Json::parse(R"({"on": 1})"), o));
  EXPECT_TRUE(read(Json::parse(R"({"ks": [1, "5"]})"), o));
  EXPECT_TRUE(read(Json::parse("[1]"), o));
}

TEST(OptionReader, RefusesAMisspeltKeyListingTheKnownOnes) {
  Options o;
  auto e = read(Json::parse(R"({"cuont": 3})"), o);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, R"(test options: unknown option "cuont" (known: name, count, seed, rate, on, limit, ks))");
}

TEST(OptionReader, HandsTheUnreadKeysToALowerLayer) {
  std::string name;
  OptionReader r(Json::parse(R"({"name": "a", "count": 3})"), "outer");
  r.read("name", name);
  EXPECT_EQ(r.rest(), Json::parse(R"({"count": 3})"));
}

}  // namespace
}  // namespace tritium
