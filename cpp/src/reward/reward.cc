// Rewards from verdicts (docs/rewards.md): the per-sample components, and DRTriton's weights.
#include "tritium/reward.h"

#include <algorithm>
#include <cmath>

namespace tritium {
namespace {

bool is_valid(const std::string& status) {
  return status != "invalid_syntax" && status != "invalid_functionality" && status != "hack" && status != "error";
}

// A speedup measured below the timing floor is noise, so it earns no gain: it counts as at most
// the reference's speed. A slowdown measured there stands: were the sample counted as untimed, a slow
// kernel would earn the reference's speed by making itself host-bound (a sleep in its forward), and
// on mid-size tasks every correct kernel of a 135M model was host-bound at 0.15-0.55x (H100, 2026-12-05).
std::optional<double> speedup_of(const Verdict& v, const RewardConfig& config) {
  const bool compile = config.baseline == "compile";
  const auto& s = compile ? v.speedup_compile : v.speedup_eager;
  if (!s || !std::isfinite(*s) || *s <= 0) return std::nullopt;
  if (v.below_timing_floor || (compile && v.compile_below_timing_floor)) return std::min(*s, 1.0);
  return s;
}

double clipped(double speedup, double clip) { return clip > 0 ? std::min(speedup, clip) : speedup; }

// f(speedup); an untimed sample counts as exactly as fast as the reference.
double shaped(std::optional<double> speedup, const RewardConfig& config) {
  const double s = speedup.value_or(1.0);
  switch (config.shape) {
    case SpeedupShape::ratio:
      return clipped(s, config.clip);
    case SpeedupShape::log:
      return std::log(clipped(s, config.clip));
    case SpeedupShape::indicator:
      return s > config.threshold ? 1.0 : 0.0;
  }
  return 0;
}

// The scheme's scalar for one sample alone (DRTriton's needs the group: see group_rewards).
double scalar_of(const Reward& r, const RewardConfig& config) {
  switch (config.scheme) {
    case RewardScheme::correct:
      return r.r_correct + r.coverage;
    case RewardScheme::speedup:
      return r.r_speedup + r.coverage;
    case RewardScheme::blended:
      return config.beta * r.r_correct + (1 - config.beta) * r.r_speedup + r.coverage;
    case RewardScheme::hrd:
      return r.r_correct + config.alpha * r.r_speedup + r.coverage;
    case RewardScheme::drtriton:
      return r.correct ? 1.0 + r.coverage : config.incorrect;
  }
  return 0;
}

Reward sample_reward(const Verdict& v, const RewardConfig& config) {
  Reward r;
  r.valid = is_valid(v.status);
  r.correct = r.valid && v.status == "correct";
  r.speedup = speedup_of(v, config);
  r.r_correct = r.correct ? 1.0 : 0.0;
  r.r_speedup = r.correct ? shaped(r.speedup, config) : 0.0;
  if (r.correct && v.coverage && std::isfinite(*v.coverage))
    r.coverage = config.coverage_weight * std::clamp(*v.coverage, 0.0, 1.0);
  r.scalar = scalar_of(r, config);
  if (config.scheme == RewardScheme::hrd) {
    r.plan = r.r_speedup;
    r.code = r.r_correct + r.coverage;
  } else {
    r.plan = r.code = r.scalar;
  }
  if (auto p = config.penalties.find(v.status); p != config.penalties.end()) {
    r.penalty = v.status;
    r.plan = r.code = r.scalar = p->second;
  }
  return r;
}

// DRTriton: the group's correct samples share weights softmax(log(speedup) / lambda), scaled by
// their count so that equally fast samples earn 1 each, as under R_correct.
void weight_by_speed(std::vector<Reward>& rewards, const RewardConfig& config) {
  std::vector<std::size_t> correct;
  for (std::size_t i = 0; i < rewards.size(); ++i)
    if (rewards[i].correct && !rewards[i].penalty) correct.push_back(i);
  if (correct.empty()) return;
  const double lambda = config.lambda > 0 ? config.lambda : 1.0;
  std::vector<double> logits;
  for (auto i : correct) logits.push_back(std::log(clipped(rewards[i].speedup.value_or(1.0), config.clip)) / lambda);
  const double top = *std::max_element(logits.begin(), logits.end());
  double total = 0;
  for (double& l : logits) total += (l = std::exp(l - top));
  for (std::size_t k = 0; k < correct.size(); ++k) {
    Reward& r = rewards[correct[k]];
    r.scalar = static_cast<double>(correct.size()) * logits[k] / total + r.coverage;
    r.plan = r.code = r.scalar;
  }
}

}  // namespace

std::vector<Reward> group_rewards(std::span<const Verdict> group, const RewardConfig& config) {
  std::vector<Reward> rewards;
  rewards.reserve(group.size());
  for (const auto& v : group) rewards.push_back(sample_reward(v, config));
  if (config.scheme == RewardScheme::drtriton) weight_by_speed(rewards, config);
  return rewards;
}

Json to_json(const Reward& r) {
  return {{"valid", r.valid},
          {"correct", r.correct},
          {"speedup", r.speedup ? Json(*r.speedup) : Json(nullptr)},
          {"r_correct", r.r_correct},
          {"r_speedup", r.r_speedup},
          {"coverage", r.coverage},
          {"plan", r.plan},
          {"code", r.code},
          {"scalar", r.scalar},
          {"penalty", r.penalty ? Json(*r.penalty) : Json(nullptr)}};
}

}  // namespace tritium
