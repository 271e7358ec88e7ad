#include "tolerance.h"

#include <algorithm>
#include <iterator>

namespace tritium::exec {
namespace {

struct DtypeInfo {
  std::string_view name;
  std::size_t size;
  bool floating;
};

constexpr DtypeInfo kDtypes[] = {
    {"float64", 8, true}, {"float32", 4, true}, {"float16", 2, true}, {"bfloat16", 2, true}, {"int64", 8, false},
    {"int32", 4, false},  {"int16", 2, false},  {"int8", 1, false},   {"uint8", 1, false},   {"bool", 1, false}};

const DtypeInfo* find(std::string_view name) {
  const auto d = std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](auto& x) { return x.name == name; });
  return d == std::end(kDtypes) ? nullptr : d;
}

struct Profile {
  std::string_view name;
  double f64, f32, f16, bf16;  // atol = rtol
};

constexpr Profile kProfiles[] = {
    {"kernelbench", 1e-4, 1e-4, 1e-2, 1e-2},  // KernelBench's eval
    {"strict", 1e-5, 1e-5, 1e-3, 4e-3},
    {"legacy", 1e-2, 1e-2, 1e-2, 1e-2},  // older KernelBench: 1e-2 for every float dtype
};

}  // namespace

std::size_t dtype_size(std::string_view dtype) {
  const DtypeInfo* d = find(dtype);
  return d ? d->size : 0;
}

std::optional<Tolerance> tolerance_for(std::string_view profile, std::string_view dtype) {
  const auto p = std::find_if(std::begin(kProfiles), std::end(kProfiles), [&](auto& x) { return x.name == profile; });
  const DtypeInfo* d = find(dtype);
  if (p == std::end(kProfiles) || !d) return std::nullopt;
  if (!d->floating) return Tolerance{0, 0};
  const double t = dtype == "float64" ? p->f64 : dtype == "float32" ? p->f32 : dtype == "float16" ? p->f16 : p->bf16;
  return Tolerance{t, t};
}

const std::vector<std::string>& profile_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& p : kProfiles) v.emplace_back(p.name);
    return v;
  }();
  return names;
}

}  // namespace tritium::exec
