// EngineOptions: their checks, and their JSON both ways (the face Python, configs and workflows use).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tolerance.h"
#include "tritium/exec.h"

namespace tritium {

std::optional<std::string> device_error(std::string_view device) {
  if (device == "cpu" || device == "cuda" || device == "auto") return std::nullopt;
  if (device.starts_with("cuda:") && device.size() > 5 &&
      std::all_of(device.begin() + 5, device.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return fmt::format("device '{}' is none of cpu, cuda, cuda:N (N a GPU's index) or auto", device);
}

std::optional<std::string> engine_options_error(const EngineOptions& options) {
  if (auto error = device_error(options.device)) return error;
  if (options.jobs < 0) return fmt::format("jobs {} is negative; give a count, or 0 for the default", options.jobs);
  if (!exec::tolerance_for(options.profile, "float32"))
    return fmt::format("unknown profile {}; use one of: {}", options.profile, fmt::join(exec::profile_names(), ", "));
  if (options.trials < 5) return fmt::format("trials {} is too few; the protocol needs at least 5", options.trials);
  if (!(options.timeout_s > 0)) return fmt::format("timeout {} s: it must be positive", options.timeout_s);
  if (!(options.device_memory_gb >= 0))
    return fmt::format("device_memory_gb {}: it must be at least 0 (0: most of the free memory)",
                       options.device_memory_gb);
  // No bound beside the timeout: a timer never gathers past its own wait for the lock (timing.py).
  if (!(options.timer_gather_s >= 0))
    return fmt::format("timer_gather_s {} s: it must be at least 0", options.timer_gather_s);
  return std::nullopt;
}

Result<EngineOptions> engine_options_from_json(const Json& json) {
  EngineOptions o;
  OptionReader r(json, "engine options");
  r.read("python", o.python).read("device", o.device).read("profile", o.profile).read("trials", o.trials);
  r.read("jobs", o.jobs).read("timeout_s", o.timeout_s).read("seed", o.seed).read("static_check", o.static_check);
  r.read("timing", o.timing).read("cache", o.cache).read("work_dir", o.work_dir).read("memory_gb", o.memory_gb);
  r.read("reference_cache_gb", o.reference_cache_gb).read("keep_files", o.keep_files);
  r.read("device_memory_gb", o.device_memory_gb);
  r.read("unsafe_sandbox", o.unsafe_sandbox).read("timer_gather_s", o.timer_gather_s);
  r.read("lazy_reference_timing", o.lazy_reference_timing).read("fork_comparers", o.fork_comparers);
  if (auto e = r.done()) return *e;
  if (auto error = engine_options_error(o)) return Error{"engine options: " + *error};
  return o;
}

Json to_json(const EngineOptions& o) {
  return {{"python", o.python},
          {"device", o.device},
          {"profile", o.profile},
          {"trials", o.trials},
          {"jobs", o.jobs},
          {"timeout_s", o.timeout_s},
          {"seed", o.seed ? Json(*o.seed) : Json(nullptr)},
          {"static_check", o.static_check},
          {"timing", o.timing},
          {"cache", o.cache},
          {"work_dir", o.work_dir},
          {"memory_gb", o.memory_gb},
          {"device_memory_gb", o.device_memory_gb},
          {"reference_cache_gb", o.reference_cache_gb},
          {"keep_files", o.keep_files},
          {"unsafe_sandbox", o.unsafe_sandbox},
          {"timer_gather_s", o.timer_gather_s},
          {"lazy_reference_timing", o.lazy_reference_timing},
          {"fork_comparers", o.fork_comparers}};
}

}  // namespace tritium
