// Rewards and advantages against values computed by hand (docs/rewards.md).
#include "tritium/reward.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tritium {
namespace {

Verdict verdict(const std::string& status, std::optional<double> eager = std::nullopt,
                std::optional<double> compile = std::nullopt) {
  Verdict v;
  v.status = status;
  v.correct = status == "correct";
  v.speedup_eager = eager;
  v.speedup_compile = compile;
  return v;
}

Reward one(const Verdict& v, const RewardConfig& c) { return group_rewards(std::span(&v, 1), c).front(); }

TEST(Reward, CorrectAndSpeedupComponents) {
  RewardConfig c;  // hrd, ratio clipped at 3, eager
  Reward r = one(verdict("correct", 2.0), c);
  EXPECT_TRUE(r.valid);
  EXPECT_TRUE(r.correct);
  EXPECT_DOUBLE_EQ(r.r_correct, 1.0);
  EXPECT_DOUBLE_EQ(r.r_speedup, 2.0);
  EXPECT_DOUBLE_EQ(r.plan, 2.0);  // HRD: plan <- speedup
  EXPECT_DOUBLE_EQ(r.code, 1.0);  // HRD: code <- correctness
  EXPECT_DOUBLE_EQ(r.scalar, 1.0 + 0.1 * 2.0);
  EXPECT_DOUBLE_EQ(one(verdict("correct", 7.5), c).r_speedup, 3.0);  // clipped at 3
}

TEST(Reward, InvalidAndFailedSamplesEarnNothing) {
  RewardConfig c;
  for (const char* status :
       {"invalid_syntax", "invalid_functionality", "compile_error", "runtime_error", "timeout", "incorrect", "error"}) {
    Reward r = one(verdict(status, 2.0), c);
    EXPECT_EQ(r.r_correct, 0.0) << status;
    EXPECT_EQ(r.r_speedup, 0.0) << status;
    EXPECT_EQ(r.scalar, 0.0) << status;
    EXPECT_FALSE(r.penalty) << status;
  }
  EXPECT_TRUE(one(verdict("compile_error"), c).valid);
  EXPECT_FALSE(one(verdict("invalid_functionality"), c).valid);
}

TEST(Reward, HackPenaltyReplacesEveryComponent) {
  RewardConfig c;
  Reward r = one(verdict("hack"), c);
  EXPECT_EQ(r.penalty, "hack");
  EXPECT_EQ(r.plan, -1.0);
  EXPECT_EQ(r.code, -1.0);
  EXPECT_EQ(r.scalar, -1.0);
  c.penalties = {{"invalid_syntax", -0.5}};
  EXPECT_EQ(one(verdict("invalid_syntax"), c).scalar, -0.5);
  EXPECT_EQ(one(verdict("hack"), c).scalar, 0.0);  // no longer listed
}

TEST(Reward, SpeedupShapes) {
  RewardConfig c;
  c.scheme = RewardScheme::speedup;
  c.shape = SpeedupShape::log;
  EXPECT_NEAR(one(verdict("correct", 2.0), c).scalar, std::log(2.0), 1e-12);
  EXPECT_NEAR(one(verdict("correct", 0.5), c).scalar, std::log(0.5), 1e-12);
  EXPECT_NEAR(one(verdict("correct", 100.0), c).scalar, std::log(3.0), 1e-12);
  c.shape = SpeedupShape::indicator;
  c.threshold = 1.5;
  EXPECT_EQ(one(verdict("correct", 1.6), c).scalar, 1.0);
  EXPECT_EQ(one(verdict("correct", 1.5), c).scalar, 0.0);  // strictly faster than p
  c.shape = SpeedupShape::ratio;
  c.clip = 0;  // no clip
  EXPECT_EQ(one(verdict("correct", 100.0), c).scalar, 100.0);
}

TEST(Reward, UntimedSampleCountsAsReferenceSpeed) {
  RewardConfig c;
  c.scheme = RewardScheme::speedup;
  Reward r = one(verdict("correct"), c);
  EXPECT_FALSE(r.speedup);
  EXPECT_EQ(r.r_speedup, 1.0);
  c.shape = SpeedupShape::log;
  EXPECT_EQ(one(verdict("correct"), c).r_speedup, 0.0);
  // A non-finite or non-positive measured speedup is treated as not measured.
  EXPECT_FALSE(one(verdict("correct", std::numeric_limits<double>::quiet_NaN()), c).speedup);
  EXPECT_FALSE(one(verdict("correct", -2.0), c).speedup);
}

TEST(Reward, CompileBaseline) {
  RewardConfig c;
  c.scheme = RewardScheme::speedup;
  c.baseline = "compile";
  EXPECT_EQ(one(verdict("correct", 2.0, 0.8), c).scalar, 0.8);
}

// A verdict as the engine wrote it for a launch-bound sigmoid whose timed calls mostly waited on
// the host (tests/fixtures/verdicts/below_timing_floor.json): its speedup of 0.24 is noise, which
// earns no gain; a slowdown stands, so that a slow kernel cannot earn the reference's speed by
// making itself host-bound.
TEST(Reward, SpeedupBelowTheTimingFloorEarnsNoGain) {
  const auto text = read_file(TRITIUM_SOURCE_DIR "/tests/fixtures/verdicts/below_timing_floor.json");
  ASSERT_TRUE(text);
  const Verdict v = verdict_from_json(Json::parse(*text));
  ASSERT_TRUE(v.below_timing_floor);
  ASSERT_TRUE(v.speedup_eager);
  RewardConfig c;  // hrd
  Verdict timed = v;
  timed.below_timing_floor = false;
  EXPECT_EQ(one(v, c).r_speedup, one(timed, c).r_speedup);  // a slowdown below the floor is no better
  EXPECT_DOUBLE_EQ(one(v, c).r_speedup, *v.speedup_eager);
  Verdict fast = v;  // a gain measured below the floor counts as the reference's speed
  fast.speedup_eager = 3.0;
  const Reward r = one(fast, c);
  EXPECT_EQ(r.speedup, 1.0);
  EXPECT_EQ(r.r_speedup, 1.0);
  EXPECT_EQ(r.plan, 1.0);
  EXPECT_EQ(r.code, 1.0);
  c.scheme = RewardScheme::drtriton;  // the noise does not win the group's weights either
  std::vector<Verdict> g{fast, verdict("correct", 1.0)};
  for (const auto& x : group_rewards(g, c)) EXPECT_NEAR(x.scalar, 1.0, 1e-12);
  c.scheme = RewardScheme::speedup;  // the compile baseline's own floor counts for it alone
  c.baseline = "compile";
  Verdict compile_only = verdict("correct", 2.0, 2.0);
  compile_only.compile_below_timing_floor = true;
  EXPECT_EQ(one(compile_only, c).r_speedup, 1.0);
  c.baseline = "eager";
  EXPECT_EQ(one(compile_only, c).r_speedup, 2.0);
}

TEST(Reward, Blended) {
  RewardConfig c;
  c.scheme = RewardScheme::blended;
  c.beta = 0.25;
  Reward r = one(verdict("correct", 2.0), c);
  EXPECT_DOUBLE_EQ(r.scalar, 0.25 * 1 + 0.75 * 2.0);
  EXPECT_EQ(r.plan, r.scalar);
  EXPECT_EQ(r.code, r.scalar);
}

TEST(Reward, CoverageTerm) {
  RewardConfig c;
  c.scheme = RewardScheme::correct;
  c.coverage_weight = 0.5;
  Verdict v = verdict("correct", 1.0);
  v.coverage = 0.8;
  EXPECT_DOUBLE_EQ(one(v, c).scalar, 1.0 + 0.4);
  v.status = "incorrect";
  EXPECT_EQ(one(v, c).scalar, 0.0);  // only correct samples earn coverage
  Verdict no_profile = verdict("correct", 1.0);
  EXPECT_EQ(one(no_profile, c).scalar, 1.0);
}

TEST(Reward, DrTritonWeightsCorrectSamplesBySpeed) {
  RewardConfig c;
  c.scheme = RewardScheme::drtriton;
  c.lambda = 0.5;
  std::vector<Verdict> g{verdict("correct", 1.0), verdict("correct", 2.0), verdict("incorrect"), verdict("hack")};
  auto r = group_rewards(g, c);
  // logits log(1)/0.5 = 0 and log(2)/0.5: weights 1/(1+4) and 4/(1+4), times 2 correct samples.
  EXPECT_NEAR(r[0].scalar, 2 * 1.0 / 5, 1e-12);
  EXPECT_NEAR(r[1].scalar, 2 * 4.0 / 5, 1e-12);
  EXPECT_EQ(r[2].scalar, -1.0);  // incorrect
  EXPECT_EQ(r[3].scalar, -1.0);  // hack penalty
  // Equally fast samples earn 1 each, as under R_correct; one correct sample earns 1.
  std::vector<Verdict> same{verdict("correct", 1.5), verdict("correct", 1.5)};
  for (const auto& x : group_rewards(same, c)) EXPECT_NEAR(x.scalar, 1.0, 1e-12);
  std::vector<Verdict> lone{verdict("correct", 1.5)};
  EXPECT_NEAR(group_rewards(lone, c)[0].scalar, 1.0, 1e-12);
}

TEST(Reward, DrTritonIsStableForExtremeSpeedups) {
  RewardConfig c;
  c.scheme = RewardScheme::drtriton;
  c.lambda = 0.001;
  c.clip = 0;
  std::vector<Verdict> g{verdict("correct", 1e6), verdict("correct", 1e-6)};
  auto r = group_rewards(g, c);
  EXPECT_TRUE(std::isfinite(r[0].scalar));
  EXPECT_NEAR(r[0].scalar, 2.0, 1e-9);
  EXPECT_NEAR(r[1].scalar, 0.0, 1e-9);
}

TEST(Advantage, GrpoByHand) {
  std::vector<double> r{1, 0, 0, 1};  // mean 0.5, sample std sqrt(1/3)
  auto a = group_advantages(r, AdvantageMethod::grpo, 0);
  const double sd = std::sqrt(1.0 / 3.0);
  EXPECT_NEAR(a[0], 0.5 / sd, 1e-12);
  EXPECT_NEAR(a[1], -0.5 / sd, 1e-12);
}

TEST(Advantage, RlooByHand) {
  std::vector<double> r{3, 1, 2};
  auto a = group_advantages(r, AdvantageMethod::rloo);
  EXPECT_DOUBLE_EQ(a[0], 3 - 1.5);
  EXPECT_DOUBLE_EQ(a[1], 1 - 2.5);
  EXPECT_DOUBLE_EQ(a[2], 2 - 2.0);
}

TEST(Advantage, EdgeCases) {
  for (auto m : {AdvantageMethod::grpo, AdvantageMethod::rloo}) {
    EXPECT_EQ(group_advantages(std::vector<double>{1, 1, 1}, m), (std::vector<double>{0, 0, 0}));
    EXPECT_EQ(group_advantages(std::vector<double>{5}, m), (std::vector<double>{0}));
    EXPECT_TRUE(group_advantages(std::vector<double>{}, m).empty());
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto a = group_advantages(std::vector<double>{1, nan, 0}, AdvantageMethod::rloo);
  EXPECT_EQ(a[1], 0.0);  // NaN gets 0 and stays out of the others' baseline
  EXPECT_DOUBLE_EQ(a[0], 1.0);
  EXPECT_DOUBLE_EQ(a[2], -1.0);
  auto g =
      group_advantages(std::vector<double>{nan, std::numeric_limits<double>::infinity(), 2}, AdvantageMethod::grpo);
  EXPECT_EQ(g, (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(group_advantages(std::vector<double>{2, nan}, AdvantageMethod::none), (std::vector<double>{2, 0}));
}

TEST(Advantage, HrdSegmentsAndTokens) {
  RewardConfig c;  // hrd, alpha 0.1, rloo for easy numbers
  c.advantage = AdvantageMethod::rloo;
  std::vector<Verdict> g{verdict("correct", 3.0), verdict("correct", 1.0), verdict("incorrect")};
  auto rewards = group_rewards(g, c);
  auto seg = segment_advantages(rewards, c);
  // plan rewards 3, 1, 0 -> rloo 2.5, -0.5, -2; code rewards 1, 1, 0 -> 0.5, 0.5, -1.
  EXPECT_DOUBLE_EQ(seg[0].plan, 0.1 * 2.5);
  EXPECT_DOUBLE_EQ(seg[1].plan, 0.1 * -0.5);
  EXPECT_DOUBLE_EQ(seg[2].plan, 0.1 * -2.0);
  EXPECT_DOUBLE_EQ(seg[0].code, 0.5);
  EXPECT_DOUBLE_EQ(seg[2].code, -1.0);
  // Tokens: [0,5) [5,9) in the plan [0,9); [9,12) fence, [12,20) code.
  std::vector<TextSpan> tokens{{0, 5}, {5, 9}, {9, 12}, {12, 20}};
  auto t = token_advantages(tokens, {0, 9}, seg[0]);
  EXPECT_EQ(t, (std::vector<double>{0.25, 0.25, 0.5, 0.5}));
  // An empty plan: every token is code.
  EXPECT_EQ(token_advantages(tokens, {0, 0}, seg[0]), (std::vector<double>{0.5, 0.5, 0.5, 0.5}));
}

TEST(Advantage, NonHrdSchemesGiveEveryTokenTheSameAdvantage) {
  RewardConfig c;
  c.scheme = RewardScheme::blended;
  c.advantage = AdvantageMethod::rloo;
  std::vector<Verdict> g{verdict("correct", 2.0), verdict("incorrect")};
  auto seg = segment_advantages(group_rewards(g, c), c);
  EXPECT_EQ(seg[0].plan, seg[0].code);
  EXPECT_DOUBLE_EQ(seg[0].code, 0.5 * 1 + 0.5 * 2.0);
}

TEST(Advantage, ScoreBatchGroupsByMeta) {
  RewardConfig c;
  c.scheme = RewardScheme::correct;
  c.advantage = AdvantageMethod::rloo;
  std::vector<Verdict> batch{verdict("correct"), verdict("incorrect"), verdict("correct"), verdict("incorrect")};
  batch[0].meta = {{"group", "p1"}};
  batch[1].meta = {{"group", 7}};
  batch[2].meta = {{"group", "p1"}};
  batch[3].meta = {{"group", 7}, {"sample", 1}};
  batch.push_back(verdict("correct"));  // no group: alone
  auto scored = score_batch(batch, c);
  ASSERT_EQ(scored.size(), 5u);
  EXPECT_EQ(scored[0].advantage.code, 0.0);  // p1: both correct
  EXPECT_EQ(scored[2].advantage.code, 0.0);
  EXPECT_EQ(scored[1].advantage.code, 0.0);  // group 7: both incorrect
  EXPECT_EQ(scored[4].advantage.code, 0.0);  // alone
  EXPECT_EQ(scored[4].reward.scalar, 1.0);
  batch[2].status = "incorrect";
  scored = score_batch(batch, c);
  EXPECT_EQ(scored[0].advantage.code, 1.0);
  EXPECT_EQ(scored[2].advantage.code, -1.0);
}

TEST(Advantage, ResponseTokensFollowTheExtractedPlan) {
  const std::string response = "<think>use one pass</think>\n```python\nx = 1\n```\n";
  const std::size_t code_at = response.find("x = 1");
  std::vector<TextSpan> tokens{{0, 7}, {7, 11}, {11, 27}, {27, 39}, {code_at, code_at + 5}};
  auto t = response_token_advantages(response, tokens, {0.1, 1.0});
  EXPECT_EQ(t, (std::vector<double>{1.0, 0.1, 0.1, 1.0, 1.0}));  // "<think>" itself is not plan text
}

TEST(Advantage, CharacterOffsetsBecomeByteOffsets) {
  const std::string text =
      "a\xC3\xA9"
      "b\xE2\x82\xAC";  // split: a hex escape would swallow the b  // a, e-acute (2 bytes), b, euro sign (3 bytes)
  std::vector<TextSpan> chars{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 9}};
  auto bytes = byte_offsets(text, chars);
  EXPECT_EQ(bytes[1].begin, 1u);
  EXPECT_EQ(bytes[1].end, 3u);
  EXPECT_EQ(bytes[3].begin, 4u);
  EXPECT_EQ(bytes[3].end, 7u);
  EXPECT_EQ(bytes[4].begin, 7u);  // past the end clamps
  EXPECT_EQ(bytes[4].end, 7u);
  // A plan with non-ASCII text: a code token after it is still a code token.
  const std::string response = "<think>\xC3\xA9\xC3\xA9\xC3\xA9</think>\n```python\nx\n```\n";
  std::vector<TextSpan> tokens{{7, 10}, {10, 18}};  // the plan's three characters, then "</think>"
  EXPECT_EQ(response_token_advantages(response, tokens, {0.1, 1.0}), (std::vector<double>{0.1, 1.0}));
}

TEST(RewardConfig, JsonRoundTripAndErrors) {
  auto c = reward_config_from_json(
      Json::parse(R"({"scheme":"blended","beta":0.3,"penalties":{"hack":-2},"advantage":"rloo"})"));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->scheme, RewardScheme::blended);
  EXPECT_EQ(c->beta, 0.3);
  EXPECT_EQ(c->penalties.at("hack"), -2.0);
  auto back = reward_config_from_json(to_json(*c));
  ASSERT_TRUE(back);
  EXPECT_EQ(to_json(*back), to_json(*c));
  EXPECT_TRUE(reward_config_from_json(Json()));  // null: defaults
  auto bad = reward_config_from_json(Json::parse(R"({"scheme":"fast"})"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("correct, speedup, blended, hrd, drtriton"), std::string::npos);
  EXPECT_FALSE(reward_config_from_json(Json::parse(R"({"alpha":"0.1"})")));
  EXPECT_FALSE(reward_config_from_json(Json::parse(R"({"alhpa":0.1})")));
  EXPECT_FALSE(reward_config_from_json(Json::parse(R"({"penalties":{"hacked":-1}})")));
  EXPECT_FALSE(reward_config_from_json(Json::parse(R"({"baseline":"inductor"})")));
  EXPECT_FALSE(reward_config_from_json(Json::parse(R"([1])")));
}

}  // namespace
}  // namespace tritium
