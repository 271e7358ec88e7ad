// Private to exec: the tolerance profiles and the dtypes outputs may have. The comparison itself
// runs on the device, in the trusted comparer (python/tritium/runner/compare.py), with the
// tolerances the engine sends it from here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tritium::exec {

/// Bytes per element of a dtype name ("float32", "bfloat16", "bool", ...); 0 when unknown.
std::size_t dtype_size(std::string_view dtype);

struct Tolerance {
  double atol = 0, rtol = 0;
};

/// The tolerance of a profile ("kernelbench", "strict", "legacy") for a dtype; integer and bool
/// dtypes are exact in every profile. nullopt for an unknown profile or dtype.
std::optional<Tolerance> tolerance_for(std::string_view profile, std::string_view dtype);
const std::vector<std::string>& profile_names();

}  // namespace tritium::exec
