// Private to synth: the shape constraint problem. Every dimension (and every integer attribute:
// kernel size, stride, groups) is a variable. Free variables have a domain [lo, hi]; derived ones
// are functions of earlier variables (conv/pool output formulas, products, sums, quotients).
// Equality between a free variable and anything merges the free one away (union-find); equality
// between two derived ones, divisibility and order are checked. solve() draws every remaining free
// variable uniformly from its domain and keeps the first draw that satisfies every constraint and
// the caller's acceptance test (bounds on elements, FLOPs, estimated runtime): rejection sampling,
// so a returned assignment is uniform over the feasible ones.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace tritium::synth {

using Rng = std::mt19937_64;

class ShapeProblem {
 public:
  enum class Role : std::uint8_t { batch, rows, features, channels, spatial, attribute, derived };

  int free(std::int64_t lo, std::int64_t hi, Role role);
  int constant(std::int64_t value);
  // (in + 2p - d(k-1) - 1) / s + 1, floored; (in - 1) s - 2p + d(k-1) + 1 for a transposed conv.
  int conv_out(int in, int k, int s, int p, int d);
  int conv_transpose_out(int in, int k, int s, int p, int d);
  int product(std::vector<int> factors);
  int sum(int a, int b);
  int quotient(int a, int b);  // a / b; pair it with divisible(a, b)

  void equal(int a, int b);
  void divisible(int a, int b);                                          // a % b == 0
  void at_most(int a, int b, std::int64_t ka = 1, std::int64_t kb = 1);  // ka a <= kb b
  void at_least(int a, std::int64_t lo);

  Role role(int v) const { return vars_[find(v)].role; }
  int representative(int v) const { return find(v); }  // equal variables share one
  bool is_constant_one(int v) const;
  std::size_t size() const { return vars_.size(); }

  /// Every free variable's domain rewritten by `domain(role, lo, hi)` -> {lo, hi}, and the bounds
  /// that merging one into a derived variable left in the checks with it: the same graph, ready to
  /// be solved for another size profile.
  using Domain = std::function<std::pair<std::int64_t, std::int64_t>(Role, std::int64_t, std::int64_t)>;
  void resize(const Domain& domain);

  using Accept = std::function<bool(const std::vector<std::int64_t>&)>;
  /// Values of every variable (index = variable id), or nullopt after `attempts` rejected draws.
  std::optional<std::vector<std::int64_t>> solve(Rng& rng, const Accept& accept, int attempts) const;

 private:
  enum class Kind : std::uint8_t { free, constant, conv, conv_t, product, sum, quotient };
  struct Var {
    Kind kind;
    Role role;
    std::int64_t lo = 0, hi = 0;  // free: the domain; constant: lo
    std::vector<int> args;
  };
  struct Check {
    enum class Kind : std::uint8_t { equal, divisible, at_most, at_least } kind;
    int a, b;
    std::int64_t ka = 1, kb = 1;
    int domain_of = -1;  // the free variable whose domain this bound is (equal()), else -1
  };

  int add(Var v);
  int find(int v) const;
  bool depends_on(int v, int target) const;  // whether target is among v's arguments, transitively
  std::int64_t eval(int v, std::vector<std::int64_t>& values, std::vector<char>& done) const;
  bool holds(const Check& c, const std::vector<std::int64_t>& values) const;

  std::vector<Var> vars_;
  std::vector<int> parent_;
  std::vector<Check> checks_;
};

}  // namespace tritium::synth
