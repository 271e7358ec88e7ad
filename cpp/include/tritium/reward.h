// tritium/reward.h: verdicts become learning signals (docs/rewards.md).
//
// Pure functions, no I/O. A verdict gives each sample its reward components (TritonRL's
// R_correct and R_speedup, Hierarchical Reward Decomposition's plan and code rewards, the blended
// reward, DRTriton's speed weights among a group's correct samples); a prompt group's rewards give
// advantages (GRPO, RLOO); a sample's plan and code spans give per-token advantages, so the
// trainer can reinforce plan tokens for speed and code tokens for correctness.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tritium/core.h"
#include "tritium/verdict.h"
#include "tritium/verify.h"

namespace tritium {

/// Which reward the scalar (and the tokens, without HRD) carries.
enum class RewardScheme {
  correct,   // R_correct = valid * correct
  speedup,   // R_speedup = valid * correct * f(speedup)
  blended,   // beta * R_correct + (1 - beta) * R_speedup, on every token
  hrd,       // plan tokens <- R_speedup (weight alpha), code tokens <- R_correct (TritonRL)
  drtriton,  // correct samples weighted by softmax(log(speedup) / lambda) within the group
};

/// f(speedup) in R_speedup.
enum class SpeedupShape {
  ratio,      // min(speedup, clip)
  log,        // log(min(speedup, clip))
  indicator,  // 1 when speedup > threshold, else 0
};

/// How a group's rewards become advantages.
enum class AdvantageMethod {
  grpo,  // (r - mean) / (std + eps), std with n - 1 (as TRL)
  rloo,  // r - mean of the others
  none,  // the reward itself
};

/// Everything configurable about rewards; the defaults are TritonRL's (docs/rewards.md).
struct RewardConfig {
  RewardScheme scheme = RewardScheme::hrd;
  SpeedupShape shape = SpeedupShape::ratio;
  double clip = 3.0;               // ratio and log: speedups above it count as it; <= 0: no clip
  double threshold = 1.0;          // indicator: the p in "faster than p x"
  std::string baseline = "eager";  // speedup against "eager" or "compile"
  double alpha = 0.1;              // HRD: weight of the plan tokens' advantage
  double beta = 0.5;               // blended: weight of R_correct
  double lambda = 0.1;             // DRTriton: softmax temperature over log speedups
  double incorrect = -1.0;         // DRTriton: the reward of a sample that is not correct
  double coverage_weight = 0.0;    // adds weight * coverage * correct, when the verdict has coverage
  // A status listed here gets this reward in every component instead of what it would earn
  // (defaults: a hack costs 1; invalid answers earn 0 as in TritonRL).
  std::map<std::string, double> penalties = {{"hack", -1.0}};
  AdvantageMethod advantage = AdvantageMethod::grpo;
  double eps = 1e-6;  // GRPO: added to the standard deviation
};

/// Reads a config from JSON; absent keys keep their defaults, unknown keys and bad values are
/// errors that name the key and the accepted values.
Result<RewardConfig> reward_config_from_json(const Json& json);
Json to_json(const RewardConfig& config);

/// One sample's reward components.
struct Reward {
  bool valid = false;  // passed the static and functional checks (compiled and ran)
  bool correct = false;
  std::optional<double> speedup;       // against the configured baseline; unset when not timed
  double r_correct = 0;                // valid * correct
  double r_speedup = 0;                // valid * correct * f(speedup); f(1) when not timed
  double coverage = 0;                 // the coverage term (0 unless configured and measured)
  double plan = 0;                     // what the plan tokens are reinforced with
  double code = 0;                     // what the code tokens are reinforced with
  double scalar = 0;                   // one number, for frameworks that take one per sample
  std::optional<std::string> penalty;  // the status whose penalty replaced the components
};

/// The rewards of one prompt group's samples (one sample is a group of one). Only DRTriton looks
/// across the group; every other scheme scores each sample alone.
std::vector<Reward> group_rewards(std::span<const Verdict> group, const RewardConfig& config);

/// Advantages of one group's rewards; non-finite rewards get 0 and stay out of the statistics;
/// all-equal groups and single samples get 0.
std::vector<double> group_advantages(std::span<const double> rewards, AdvantageMethod method, double eps = 1e-6);

/// A sample's advantages per segment: plan tokens get `plan`, every other token gets `code`.
struct SegmentAdvantage {
  double plan = 0, code = 0;
};

/// Segment advantages for a group: with HRD, plan = alpha * A(plan rewards) and code =
/// A(code rewards); with any other scheme both are A(scalar rewards).
std::vector<SegmentAdvantage> segment_advantages(std::span<const Reward> rewards, const RewardConfig& config);

/// Per-token advantages from each response token's offsets (in the same unit as `plan`): a token
/// that starts inside `plan` gets `advantage.plan`, every other token `advantage.code`.
std::vector<double> token_advantages(std::span<const TextSpan> tokens, TextSpan plan, SegmentAdvantage advantage);

/// Tokens of a raw response: the plan span comes from extract_response. `tokens` are character
/// (code point) offsets, as tokenizers give them; extraction's spans are bytes of the UTF-8 text.
std::vector<double> response_token_advantages(std::string_view response, std::span<const TextSpan> tokens,
                                              SegmentAdvantage advantage);

/// Character (code point) offsets into UTF-8 text as byte offsets; offsets past the end clamp.
std::vector<TextSpan> byte_offsets(std::string_view utf8, std::span<const TextSpan> characters);

/// A sample's reward and its advantages within its group.
struct Scored {
  Reward reward;
  SegmentAdvantage advantage;
};

/// Rewards and advantages of a batch: verdicts whose `meta.group` is equal form a prompt group
/// (a verdict without a group is a group of one); results keep the batch's order.
std::vector<Scored> score_batch(std::span<const Verdict> verdicts, const RewardConfig& config);

Json to_json(const Reward& reward);
Json to_json(const Scored& scored);               // {reward: {...}, advantage: {plan, code}}
Json to_json(const SegmentAdvantage& advantage);  // {plan, code}

}  // namespace tritium
