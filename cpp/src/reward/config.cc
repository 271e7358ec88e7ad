// RewardConfig as JSON, both ways, with one-line errors naming the key and the accepted values.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "tritium/reward.h"

namespace tritium {
namespace {

template <class E, std::size_t N>
using Names = std::array<std::pair<E, const char*>, N>;

constexpr Names<RewardScheme, 5> kSchemes{{{RewardScheme::correct, "correct"},
                                           {RewardScheme::speedup, "speedup"},
                                           {RewardScheme::blended, "blended"},
                                           {RewardScheme::hrd, "hrd"},
                                           {RewardScheme::drtriton, "drtriton"}}};
constexpr Names<SpeedupShape, 3> kShapes{
    {{SpeedupShape::ratio, "ratio"}, {SpeedupShape::log, "log"}, {SpeedupShape::indicator, "indicator"}}};
constexpr Names<AdvantageMethod, 3> kMethods{
    {{AdvantageMethod::grpo, "grpo"}, {AdvantageMethod::rloo, "rloo"}, {AdvantageMethod::none, "none"}}};

template <class E, std::size_t N>
const char* name_of(E value, const Names<E, N>& names) {
  for (const auto& [v, n] : names)
    if (v == value) return n;
  return "?";
}

template <class E, std::size_t N>
std::optional<Error> read_enum(const Json& j, const char* key, const Names<E, N>& names, E& out) {
  std::string accepted;
  for (const auto& [v, n] : names) {
    if (j.is_string() && j.get<std::string>() == n) {
      out = v;
      return std::nullopt;
    }
    accepted += accepted.empty() ? n : fmt::format(", {}", n);
  }
  return Error{fmt::format("reward config: \"{}\" must be one of {}, not {}", key, accepted, j.dump())};
}

std::optional<Error> read_number(const Json& j, const char* key, double& out) {
  if (!j.is_number()) return Error{fmt::format("reward config: \"{}\" must be a number, not {}", key, j.dump())};
  out = j.get<double>();
  return std::nullopt;
}

std::optional<Error> read_penalties(const Json& j, std::map<std::string, double>& out) {
  if (!j.is_object())
    return Error{"reward config: \"penalties\" must be an object of status -> reward, e.g. {\"hack\": -1}"};
  out.clear();
  const auto& statuses = verdict_statuses();
  for (const auto& [status, value] : j.items()) {
    if (std::find(statuses.begin(), statuses.end(), status) == statuses.end())
      return Error{fmt::format("reward config: penalties: unknown status \"{}\"", status)};
    if (auto e = read_number(value, "penalties", out[status])) return e;
  }
  return std::nullopt;
}

}  // namespace

Result<RewardConfig> reward_config_from_json(const Json& j) {
  RewardConfig c;
  if (j.is_null()) return c;
  if (!j.is_object()) return Error{"reward config: must be a JSON object"};
  for (const auto& [key, value] : j.items()) {
    std::optional<Error> e;
    if (key == "scheme")
      e = read_enum(value, "scheme", kSchemes, c.scheme);
    else if (key == "shape")
      e = read_enum(value, "shape", kShapes, c.shape);
    else if (key == "advantage")
      e = read_enum(value, "advantage", kMethods, c.advantage);
    else if (key == "clip")
      e = read_number(value, "clip", c.clip);
    else if (key == "threshold")
      e = read_number(value, "threshold", c.threshold);
    else if (key == "alpha")
      e = read_number(value, "alpha", c.alpha);
    else if (key == "beta")
      e = read_number(value, "beta", c.beta);
    else if (key == "lambda")
      e = read_number(value, "lambda", c.lambda);
    else if (key == "incorrect")
      e = read_number(value, "incorrect", c.incorrect);
    else if (key == "coverage_weight")
      e = read_number(value, "coverage_weight", c.coverage_weight);
    else if (key == "eps")
      e = read_number(value, "eps", c.eps);
    else if (key == "penalties")
      e = read_penalties(value, c.penalties);
    else if (key == "baseline") {
      if (value != "eager" && value != "compile")
        e = Error{fmt::format("reward config: \"baseline\" must be \"eager\" or \"compile\", not {}", value.dump())};
      else
        c.baseline = value.get<std::string>();
    } else {
      e = Error{fmt::format("reward config: unknown key \"{}\" (see docs/rewards.md)", key)};
    }
    if (e) return *e;
  }
  if (c.scheme == RewardScheme::drtriton && c.lambda <= 0) return Error{"reward config: \"lambda\" must be > 0"};
  return c;
}

Json to_json(const RewardConfig& c) {
  Json penalties = Json::object();
  for (const auto& [status, value] : c.penalties) penalties[status] = value;
  return {{"scheme", name_of(c.scheme, kSchemes)},
          {"shape", name_of(c.shape, kShapes)},
          {"clip", c.clip},
          {"threshold", c.threshold},
          {"baseline", c.baseline},
          {"alpha", c.alpha},
          {"beta", c.beta},
          {"lambda", c.lambda},
          {"incorrect", c.incorrect},
          {"coverage_weight", c.coverage_weight},
          {"penalties", penalties},
          {"advantage", name_of(c.advantage, kMethods)},
          {"eps", c.eps}};
}

}  // namespace tritium
