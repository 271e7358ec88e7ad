// Advantages: a group's rewards centred (GRPO, RLOO), then spread over a response's tokens.
#include <cmath>
#include <map>

#include "tritium/reward.h"

namespace tritium {

std::vector<double> group_advantages(std::span<const double> rewards, AdvantageMethod method, double eps) {
  std::vector<double> out(rewards.size(), 0.0);
  double sum = 0;
  std::size_t n = 0;
  for (double r : rewards)
    if (std::isfinite(r)) sum += r, ++n;
  if (method == AdvantageMethod::none) {
    for (std::size_t i = 0; i < rewards.size(); ++i)
      if (std::isfinite(rewards[i])) out[i] = rewards[i];
    return out;
  }
  if (n < 2) return out;  // a lone sample has nothing to be better than
  const double mean = sum / static_cast<double>(n);
  double squares = 0;
  for (double r : rewards)
    if (std::isfinite(r)) squares += (r - mean) * (r - mean);
  const double sd = std::sqrt(squares / static_cast<double>(n - 1));
  for (std::size_t i = 0; i < rewards.size(); ++i) {
    const double r = rewards[i];
    if (!std::isfinite(r)) continue;
    if (method == AdvantageMethod::grpo) {
      out[i] = sd > 0 ? (r - mean) / (sd + eps) : 0.0;
    } else {  // RLOO: the mean of the n - 1 others is the baseline
      out[i] = r - (sum - r) / static_cast<double>(n - 1);
    }
  }
  return out;
}

std::vector<SegmentAdvantage> segment_advantages(std::span<const Reward> rewards, const RewardConfig& config) {
  std::vector<double> plan, code;
  for (const auto& r : rewards) {
    plan.push_back(r.plan);
    code.push_back(r.code);
  }
  const bool hrd = config.scheme == RewardScheme::hrd;
  const auto a_plan = group_advantages(plan, config.advantage, config.eps);
  const auto a_code = group_advantages(code, config.advantage, config.eps);
  std::vector<SegmentAdvantage> out;
  for (std::size_t i = 0; i < rewards.size(); ++i)
    out.push_back(hrd ? SegmentAdvantage{config.alpha * a_plan[i], a_code[i]} : SegmentAdvantage{a_code[i], a_code[i]});
  return out;
}

std::vector<double> token_advantages(std::span<const TextSpan> tokens, TextSpan plan, SegmentAdvantage advantage) {
  std::vector<double> out;
  out.reserve(tokens.size());
  for (const auto& t : tokens)
    out.push_back(t.begin >= plan.begin && t.begin < plan.end ? advantage.plan : advantage.code);
  return out;
}

std::vector<TextSpan> byte_offsets(std::string_view utf8, std::span<const TextSpan> characters) {
  std::vector<std::size_t> byte_at;  // byte offset of each code point, then the end
  for (std::size_t i = 0; i < utf8.size(); ++i)
    if ((static_cast<unsigned char>(utf8[i]) & 0xC0) != 0x80) byte_at.push_back(i);  // not a continuation byte
  byte_at.push_back(utf8.size());
  auto at = [&](std::size_t c) { return byte_at[std::min(c, byte_at.size() - 1)]; };
  std::vector<TextSpan> out;
  out.reserve(characters.size());
  for (const auto& t : characters) out.push_back({at(t.begin), at(t.end)});
  return out;
}

std::vector<double> response_token_advantages(std::string_view response, std::span<const TextSpan> tokens,
                                              SegmentAdvantage advantage) {
  return token_advantages(byte_offsets(response, tokens), extract_response(response).plan_span, advantage);
}

std::vector<Scored> score_batch(std::span<const Verdict> verdicts, const RewardConfig& config) {
  std::map<std::string, std::vector<std::size_t>> groups;
  std::vector<std::vector<std::size_t>> alone;
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const Json& meta = verdicts[i].meta;
    if (meta.is_object() && meta.contains("group") && !meta["group"].is_null())
      groups[meta["group"].dump()].push_back(i);
    else
      alone.push_back({i});
  }
  std::vector<Scored> out(verdicts.size());
  auto score = [&](const std::vector<std::size_t>& members) {
    std::vector<Verdict> group;
    for (auto i : members) group.push_back(verdicts[i]);
    const auto rewards = group_rewards(group, config);
    const auto advantages = segment_advantages(rewards, config);
    for (std::size_t k = 0; k < members.size(); ++k) out[members[k]] = {rewards[k], advantages[k]};
  };
  for (const auto& [key, members] : groups) score(members);
  for (const auto& members : alone) score(members);
  return out;
}

Json to_json(const Scored& s) { return {{"reward", to_json(s.reward)}, {"advantage", to_json(s.advantage)}}; }

Json to_json(const SegmentAdvantage& a) { return {{"plan", a.plan}, {"code", a.code}}; }

}  // namespace tritium
