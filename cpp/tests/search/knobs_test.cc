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
  std::vector<std::string> names;
  for (const auto& k : knobs) names.push_back(k.name);
  // BLOCK_SIZE=n is not a literal, helper(...) is no launch, and 0x40 is left alone.
  EXPECT_EQ(names, (std::vector<std::string>{"BLOCK_ROWS", "BLOCK_SIZE", "num_warps", "num_stages", "num_stages",
                                             "num_warps"}));
  EXPECT_EQ(knobs[0].value, 64);
  EXPECT_EQ(knobs[1].value, 1024);
  for (const auto& k : knobs)
    if (k.length) EXPECT_EQ(kCode.substr(k.offset, k.length), std::to_string(k.value));
  EXPECT_EQ(knobs[3].length, 0u);  // the first launch has no num_stages: setting it inserts one
  EXPECT_EQ(knobs[3].value, 3);
  EXPECT_EQ(kCode[knobs[3].offset], ')');
}

TEST(Knobs, ReplacingOrInsertingAValueKeepsValidPython) {
  for (std::size_t i = 0; i < find_knobs(kCode).size(); ++i) {
    const auto knobs = find_knobs(kCode);
    std::string code = kCode;
    code.replace(knobs[i].offset, knobs[i].length, knobs[i].with(knob_values(knobs[i]).back()));
    EXPECT_TRUE(pyast::parse(code).ok()) << code;
    const auto after = find_knobs(code);
    ASSERT_EQ(after.size(), knobs.size()) << code;  // an inserted value becomes a literal knob
    EXPECT_EQ(after[i].value, knob_values(knobs[i]).back());
  }
  EXPECT_EQ(find_knobs("k[g]()\n")[0].with(8), "num_warps=8");
  EXPECT_EQ(find_knobs("k[g](x,\n)\n")[0].with(8), "num_warps=8");
  EXPECT_EQ(find_knobs("k[g](x)\n")[0].with(8), ", num_warps=8");
}

TEST(Knobs, ABlockSizeRepeatedInTheLaunchGridChangesWithIt) {
  // kCode's first launch: grid = (triton.cdiv(n, 1024),) assigned above it, BLOCK_SIZE=1024.
  const auto knobs = find_knobs(kCode);
  ASSERT_EQ(knobs[1].tied.size(), 1u);
  const std::string code = knobs[1].apply(kCode, 2048);
  EXPECT_NE(code.find("grid = (triton.cdiv(n, 2048),)"), std::string::npos) << code;
  EXPECT_NE(code.find("BLOCK_SIZE=2048"), std::string::npos) << code;
  EXPECT_TRUE(knobs[0].tied.empty());  // BLOCK_ROWS = 64 is an assignment, not a launch

  // An inline grid; a literal that only looks the same elsewhere (the 1024 in x[1024]) stays.
  const std::string inline_grid = "y = x[1024]\nk[(triton.cdiv(n, 1024), 1024)](x, n, BLOCK=1024)\n";
  const auto found = find_knobs(inline_grid);
  ASSERT_EQ(found[0].name, "BLOCK");
  EXPECT_EQ(found[0].apply(inline_grid, 512), "y = x[1024]\nk[(triton.cdiv(n, 512), 512)](x, n, BLOCK=512)\n");

  // A grid from a lambda or a name assigned after the launch is left alone, as is a different value.
  for (const char* untied : {"k[lambda m: (triton.cdiv(n, m['BLOCK']),)](x, BLOCK=256)\n",
                             "k[g](x, BLOCK=256)\ng = (triton.cdiv(n, 256),)\n", "k[(cdiv(n, 128),)](x, BLOCK=256)\n"})
    EXPECT_TRUE(find_knobs(untied)[0].tied.empty()) << untied;
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
