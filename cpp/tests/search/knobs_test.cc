// Launch-configuration knobs: which literals tuning may change, and to what.
#include <gtest/gtest.h>

#include "tritium/pyast.h"
#include "tritium/search.h"

namespace tritium::search {
namespace {

const std::string kCode = R"(import triton
BLOCK_ROWS = 64
HEX_BLOCK = 0x40

def forward(x, out, n):
    grid = (triton.cdiv(n, 1024),)
    kernel[grid](x, out, n, BLOCK_SIZE=1024, num_warps=4, eps=1)
    helper(x, BLOCK=32)
    kernel[grid](x, out, n, BLOCK_SIZE=n, num_stages=3)
)";

TEST(Knobs, FindsLaunchArgumentsAndBlockConstants) {
  const auto knobs = find_knobs(kCode);
  ASSERT_EQ(knobs.size(), 4u);
  EXPECT_EQ(knobs[0].name, "BLOCK_ROWS");
  EXPECT_EQ(knobs[0].value, 64);
  EXPECT_EQ(knobs[1].name, "BLOCK_SIZE");
  EXPECT_EQ(knobs[1].value, 1024);
  EXPECT_EQ(knobs[2].name, "num_warps");
  EXPECT_EQ(knobs[3].name, "num_stages");  // BLOCK_SIZE=n is not a literal; helper(...) is no launch
  for (const auto& k : knobs) EXPECT_EQ(kCode.substr(k.offset, k.length), std::to_string(k.value));
}

TEST(Knobs, ReplacingAValueKeepsValidPython) {
  const auto knobs = find_knobs(kCode);
  std::string code = kCode;
  code.replace(knobs[1].offset, knobs[1].length, "256");
  EXPECT_TRUE(pyast::parse(code).ok());
  EXPECT_EQ(find_knobs(code)[1].value, 256);
}

TEST(Knobs, ValuesArePowersOfTwoNearTheCurrentOne) {
  EXPECT_EQ(knob_values({"BLOCK_SIZE", 0, 0, 1024}), (std::vector<long>{1024, 2048, 512, 4096, 256}));
  EXPECT_EQ(knob_values({"BLOCK", 0, 0, 1000}), (std::vector<long>{512, 1024, 256, 2048, 128}));
  EXPECT_EQ(knob_values({"BLOCK", 0, 0, 16}), (std::vector<long>{16, 32, 64}));
  EXPECT_EQ(knob_values({"num_warps", 0, 0, 4}).size(), 5u);
}

TEST(Knobs, NoneInBrokenCode) { EXPECT_TRUE(find_knobs("def f(:\n").empty()); }

}  // namespace
}  // namespace tritium::search
