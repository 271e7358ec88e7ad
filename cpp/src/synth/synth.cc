// The driver: tasks in shards of fixed size, each shard its own random stream and coverage
// counts, so the output depends on (options, index) only, not on the thread count; and the
// coverage statistics of a synthesized suite.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>
#include <unordered_set>

#include "graph.h"

namespace tritium::synth {
namespace {

constexpr std::size_t kShard = 256;
constexpr int kGraphsPerTask = 2000;  // draws of a DAG before giving up on a task
constexpr int kShapeDraws = 64;       // shape draws per DAG

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t shard) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + shard + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<const OpSpec*> allowed_ops(const std::vector<Category>& categories) {
  std::vector<const OpSpec*> ops;
  for (const auto& op : catalog())
    if (categories.empty() || std::find(categories.begin(), categories.end(), op.category) != categories.end())
      ops.push_back(&op);
  return ops;
}

// A free dimension's domain under profile `to`, for one drawn under `from`: by its role (a 3-D
// input's spatial dimension by its bound); attributes (kernel sizes, strides, groups) keep theirs.
std::pair<std::int64_t, std::int64_t> domain_in(const Profile& from, const Profile& to, ShapeProblem::Role role,
                                                std::int64_t lo, std::int64_t hi) {
  using Role = ShapeProblem::Role;
  switch (role) {
    case Role::batch:
      return {1, to.batch_hi};
    case Role::rows:
      return {to.rows_lo, to.rows_hi};
    case Role::features:
      return {to.features_lo, to.features_hi};
    case Role::channels:
      return {to.channels_lo, to.channels_hi};
    case Role::spatial: {
      const bool deep = hi == from.spatial3_hi && from.spatial3_hi != from.spatial_hi;
      const std::int64_t top = deep ? to.spatial3_hi : to.spatial_hi;
      return {std::min(to.spatial_lo, top), top};
    }
    default:
      return {lo, hi};
  }
}

// The graph with its shapes solved again under `size`, from a stream of its own (the tasks a seed
// gives do not change): {id, source, meta}, or null where no shapes fit the profile's band.
Json twin(Graph g, const Profile& from, SizeProfile size, std::uint64_t hash, const std::string& id, Json meta) {
  const Profile& to = profile(size);
  g.shapes.resize(
      [&](ShapeProblem::Role role, std::int64_t lo, std::int64_t hi) { return domain_in(from, to, role, lo, hi); });
  Rng rng(stream_seed(hash, static_cast<std::uint64_t>(size)));
  Estimate cost;
  const auto values = g.shapes.solve(
      rng,
      [&](const std::vector<std::int64_t>& v) {
        cost = estimate(g, v, to);
        return cost.max_elements <= to.max_elements && cost.est_ms >= to.min_ms && cost.est_ms <= to.max_ms;
      },
      kShapeDraws * 4);
  if (!values) return nullptr;
  meta["size"] = size_name(size);
  meta["twin_of"] = id;
  const std::string twin_id = fmt::format("{}_{}", id, size_name(size));
  Task task = emit_task(g, *values, cost, twin_id, std::move(meta));
  return {{"id", task.id}, {"source", task.source}, {"meta", task.meta}};
}

struct ShardOut {
  std::vector<SynthTask> tasks;
  std::optional<Error> error;
};

ShardOut run_shard(const SynthOptions& o, std::size_t shard, std::size_t first_index, std::size_t n,
                   const std::vector<const OpSpec*>& ops) {
  ShardOut out;
  Rng rng(stream_seed(o.seed, shard));
  OpPicker picker(ops);
  const Profile& p = profile(o.size);
  std::unordered_set<std::uint64_t> seen;
  for (std::size_t i = 0; i < n; ++i) {
    const int difficulty = std::uniform_int_distribution<int>(o.min_difficulty, o.max_difficulty)(rng);
    bool done = false;
    for (int attempt = 0; attempt < kGraphsPerTask && !done; ++attempt) {
      auto g = sample_graph(difficulty, p, picker, rng);
      if (!g) continue;
      Estimate cost;
      const auto values = g->shapes.solve(
          rng,
          [&](const std::vector<std::int64_t>& v) {
            cost = estimate(*g, v, p);
            return cost.max_elements <= p.max_elements && cost.est_ms >= p.min_ms && cost.est_ms <= p.max_ms;
          },
          kShapeDraws);
      if (!values) continue;
      const std::uint64_t hash = canonical_hash(*g, *values);
      if (!seen.insert(hash).second) continue;
      const std::size_t index = first_index + i;
      Json meta = {{"seed", o.seed}, {"index", index}, {"size", size_name(o.size)}};
      const std::string id = fmt::format("synth_{}_{:06d}", o.seed, index);
      if (o.with_solutions) {
        const auto solution = emit_solution(*g, *values, id);
        meta["has_solution"] = solution.has_value();
        if (solution) {
          meta["solution"] = solution->code;
          meta["plan"] = solution->plan;
        }
      }
      if (o.twin_size) meta["twin"] = twin(*g, p, *o.twin_size, hash, id, {{"seed", o.seed}, {"index", index}});
      out.tasks.push_back({emit_task(*g, *values, cost, id, std::move(meta)), hash});
      picker.count(*g);
      done = true;
    }
    if (!done) {
      out.error =
          Error{fmt::format("could not synthesize a task of difficulty {} from these operators within the "
                            "'{}' size profile after {} tries; widen the difficulty or the ops",
                            difficulty, size_name(o.size), kGraphsPerTask)};
      return out;
    }
  }
  return out;
}

std::optional<Error> check_options(const SynthOptions& o, const std::vector<const OpSpec*>& ops) {
  if (o.count == 0) return Error{"count must be at least 1"};
  if (o.min_difficulty < 1 || o.max_difficulty > 20 || o.min_difficulty > o.max_difficulty)
    return Error{fmt::format("difficulty {}-{} is not a range within 1-20", o.min_difficulty, o.max_difficulty)};
  if (std::none_of(ops.begin(), ops.end(), [](const OpSpec* op) { return op->compute; }))
    return Error{"ops selects no compute operator (shape operators alone have no difficulty)"};
  return std::nullopt;
}

// P(chi2_df >= x), by the Wilson-Hilferty normal approximation (good to ~1e-3 for df >= 10).
double chi_square_p_value(double x, double df) {
  if (df <= 0) return 1.0;
  const double v = 2.0 / (9.0 * df);
  const double z = (std::cbrt(x / df) - (1 - v)) / std::sqrt(v);
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

Json range_of(std::vector<double> xs) {
  if (xs.empty()) return nullptr;
  std::sort(xs.begin(), xs.end());
  return {{"min", xs.front()}, {"median", xs[xs.size() / 2]}, {"max", xs.back()}};
}

}  // namespace

Result<std::vector<SynthTask>> synthesize(const SynthOptions& o, const SynthProgress& progress) {
  const auto ops = allowed_ops(o.categories);
  if (auto e = check_options(o, ops)) return *e;
  const std::size_t shards = (o.count + kShard - 1) / kShard;
  std::vector<ShardOut> outs(shards);
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex progress_mutex;
  auto worker = [&] {
    for (std::size_t s; (s = next++) < shards;) {
      const std::size_t first = s * kShard, n = std::min(kShard, o.count - first);
      outs[s] = run_shard(o, s, first, n, ops);
      done += n;
      if (progress) {
        std::lock_guard lock(progress_mutex);
        progress(done, o.count);
      }
    }
  };
  const int threads = std::max(1, std::min<int>(o.threads, static_cast<int>(shards)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();

  std::vector<SynthTask> tasks;
  std::unordered_set<std::uint64_t> seen;
  for (auto& out : outs) {
    if (out.error) return *out.error;
    for (auto& t : out.tasks)
      if (seen.insert(t.hash).second) tasks.push_back(std::move(t));
  }
  // A task another shard also drew is dropped above; later shards make up the count, in order.
  for (std::size_t s = shards; tasks.size() < o.count; ++s) {
    auto out = run_shard(o, s, s * kShard, kShard, ops);
    if (out.error) return *out.error;
    for (auto& t : out.tasks)
      if (tasks.size() < o.count && seen.insert(t.hash).second) tasks.push_back(std::move(t));
  }
  return tasks;
}

Json coverage_stats(const std::vector<Task>& tasks, const std::vector<Category>& categories) {
  const auto ops = allowed_ops(categories);
  std::map<std::string, std::int64_t> counts;
  for (const auto* op : ops) counts[std::string(op->name)] = 0;
  std::set<std::pair<std::string, std::string>> pairs;
  std::map<int, std::int64_t> difficulties;
  std::vector<double> flops, est_ms;
  std::int64_t draws = 0, outside = 0, with_solution = 0, asked = 0;
  for (const auto& t : tasks) {
    const Json ops_of = t.meta.value("ops", Json::array());
    for (std::size_t i = 0; i < ops_of.size(); ++i) {
      const std::string name = ops_of[i].get<std::string>();
      if (auto it = counts.find(name); it != counts.end()) {
        ++it->second;
        ++draws;
      } else {
        ++outside;
      }
      if (i > 0) pairs.insert({ops_of[i - 1].get<std::string>(), name});
    }
    if (t.meta.contains("difficulty")) ++difficulties[t.meta["difficulty"].get<int>()];
    if (t.meta.contains("has_solution")) {
      ++asked;
      with_solution += t.meta["has_solution"].get<bool>();
    }
    if (t.meta.contains("flops")) flops.push_back(t.meta["flops"].get<double>());
    if (t.meta.contains("est_ms")) est_ms.push_back(t.meta["est_ms"].get<double>());
  }
  const double expected = counts.empty() ? 0 : static_cast<double>(draws) / static_cast<double>(counts.size());
  double chi2 = 0;
  std::int64_t missing = 0;
  Json histogram = Json::object();
  for (const auto& [name, n] : counts) {
    histogram[name] = n;
    if (expected > 0) chi2 += (static_cast<double>(n) - expected) * (static_cast<double>(n) - expected) / expected;
    if (n == 0) ++missing;
  }
  const double df = static_cast<double>(counts.size()) - 1;
  const double p = chi_square_p_value(chi2, df);
  Json diff = Json::object();
  for (const auto& [k, n] : difficulties) diff[std::to_string(k)] = n;
  return {{"tasks", tasks.size()},
          {"ops", counts.size()},
          {"op_draws", draws},
          {"ops_outside_selection", outside},
          {"ops_missing", missing},
          {"histogram", histogram},
          {"chi_square", {{"statistic", chi2}, {"df", df}, {"p_value", p}, {"uniform_at_0.01", p >= 0.01}}},
          {"pairs_covered", pairs.size()},
          {"pairs_possible", counts.size() * counts.size()},
          {"difficulty", diff},
          {"with_solution", asked ? Json{{"tasks", with_solution},
                                         {"share", static_cast<double>(with_solution) / static_cast<double>(asked)}}
                                  : Json()},
          {"flops", range_of(flops)},
          {"est_ms", range_of(est_ms)}};
}

}  // namespace tritium::synth
