// SynthOptions from JSON: the face Python, configs and the suite workflow use.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tritium/synth.h"

namespace tritium::synth {

std::string_view size_name(SizeProfile size) {
  switch (size) {
    case SizeProfile::cpu:
      return "cpu";
    case SizeProfile::mid:
      return "mid";
    case SizeProfile::gpu:
      return "gpu";
  }
  return "cpu";
}

std::optional<SizeProfile> parse_size(std::string_view name) {
  for (const auto size : {SizeProfile::cpu, SizeProfile::mid, SizeProfile::gpu})
    if (size_name(size) == name) return size;
  return std::nullopt;
}

std::optional<Error> parse_difficulty(std::string_view text, SynthOptions& o) {
  const std::string s(text);
  const std::size_t dash = s.find('-');
  try {
    std::size_t used = 0;
    o.min_difficulty = std::stoi(s.substr(0, dash), &used);
    o.max_difficulty = dash == std::string::npos ? o.min_difficulty : std::stoi(s.substr(dash + 1));
    if (dash == std::string::npos && used != s.size()) throw std::invalid_argument(s);
  } catch (const std::exception&) {
    return Error{fmt::format("difficulty '{}': expected K or K1-K2, e.g. 3 or 1-8", s)};
  }
  return std::nullopt;
}

Result<SynthOptions> synth_options_from_json(const Json& json) {
  SynthOptions o;
  Json difficulty, ops;
  std::string size = "cpu", twin_size;
  OptionReader r(json, "synth options");
  r.read("count", o.count).read("difficulty", difficulty).read("ops", ops).read("seed", o.seed).read("size", size);
  r.read("threads", o.threads).read("with_solutions", o.with_solutions).read("twin_size", twin_size);
  if (auto e = r.done()) return *e;
  if (difficulty.is_number_integer()) {
    o.min_difficulty = o.max_difficulty = difficulty.get<int>();
  } else if (difficulty.is_array() && difficulty.size() == 2 && difficulty[0].is_number_integer() &&
             difficulty[1].is_number_integer()) {
    o.min_difficulty = difficulty[0].get<int>();
    o.max_difficulty = difficulty[1].get<int>();
  } else if (difficulty.is_string()) {
    if (auto e = parse_difficulty(difficulty.get<std::string>(), o)) return *e;
  } else if (!difficulty.is_null()) {
    return Error{
        fmt::format("synth options: \"difficulty\" must be K, \"K1-K2\" or [K1, K2], not {}", difficulty.dump())};
  }
  std::string list;
  if (ops.is_string())
    list = ops.get<std::string>();
  else if (ops.is_array() && std::all_of(ops.begin(), ops.end(), [](const Json& j) { return j.is_string(); }))
    list = fmt::format("{}", fmt::join(ops.get<std::vector<std::string>>(), ","));
  else if (!ops.is_null())
    return Error{
        fmt::format("synth options: \"ops\" must be a comma list or a list of categories, not {}", ops.dump())};
  auto categories = parse_categories(list);
  if (!categories) return Error{"synth options: ops: " + categories.error().message};
  o.categories = *categories;
  const auto profile = parse_size(size);
  if (!profile) return Error{fmt::format("synth options: \"size\" must be cpu, mid or gpu, not '{}'", size)};
  o.size = *profile;
  if (!twin_size.empty()) {
    o.twin_size = parse_size(twin_size);
    if (!o.twin_size)
      return Error{fmt::format("synth options: \"twin_size\" must be cpu, mid or gpu, not '{}'", twin_size)};
  }
  return o;
}

}  // namespace tritium::synth
