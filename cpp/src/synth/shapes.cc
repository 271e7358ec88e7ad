#include "shapes.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace tritium::synth {

int ShapeProblem::add(Var v) {
  vars_.push_back(std::move(v));
  parent_.push_back(static_cast<int>(parent_.size()));
  return static_cast<int>(vars_.size()) - 1;
}

int ShapeProblem::free(std::int64_t lo, std::int64_t hi, Role role) {
  return add({Kind::free, role, lo, std::max(lo, hi), {}});
}
int ShapeProblem::constant(std::int64_t value) { return add({Kind::constant, Role::attribute, value, value, {}}); }
int ShapeProblem::conv_out(int in, int k, int s, int p, int d) {
  return add({Kind::conv, Role::derived, 0, 0, {in, k, s, p, d}});
}
int ShapeProblem::conv_transpose_out(int in, int k, int s, int p, int d) {
  return add({Kind::conv_t, Role::derived, 0, 0, {in, k, s, p, d}});
}
int ShapeProblem::product(std::vector<int> factors) {
  return add({Kind::product, Role::derived, 0, 0, std::move(factors)});
}
int ShapeProblem::sum(int a, int b) { return add({Kind::sum, Role::derived, 0, 0, {a, b}}); }
int ShapeProblem::quotient(int a, int b) { return add({Kind::quotient, Role::derived, 0, 0, {a, b}}); }

int ShapeProblem::find(int v) const {
  while (parent_[v] != v) v = parent_[v];
  return v;
}

bool ShapeProblem::is_constant_one(int v) const {
  const Var& x = vars_[find(v)];
  return x.kind == Kind::constant && x.lo == 1;
}

void ShapeProblem::equal(int a, int b) {
  a = find(a), b = find(b);
  if (a == b) return;
  const bool a_free = vars_[a].kind == Kind::free, b_free = vars_[b].kind == Kind::free;
  if (a_free && b_free) {  // the intersection of the domains, kept by the merged variable
    vars_[b].lo = std::max(vars_[a].lo, vars_[b].lo);
    vars_[b].hi = std::max(vars_[b].lo, std::min(vars_[a].hi, vars_[b].hi));
    if (vars_[a].role == Role::batch) vars_[b].role = Role::batch;
    parent_[a] = b;
  } else if ((a_free || b_free) && !depends_on(a_free ? b : a, a_free ? a : b)) {
    // the free one takes the other's value: check it is in its domain
    const int f = a_free ? a : b, other = a_free ? b : a;
    checks_.push_back({Check::Kind::at_least, other, -1, vars_[f].lo, 1, f});
    checks_.push_back({Check::Kind::at_most, other, -1, 1, vars_[f].hi, f});
    parent_[f] = other;
  } else {
    checks_.push_back({Check::Kind::equal, a, b});
  }
}

void ShapeProblem::resize(const Domain& domain) {
  for (auto& var : vars_)
    if (var.kind == Kind::free) std::tie(var.lo, var.hi) = domain(var.role, var.lo, var.hi);
  for (auto& check : checks_) {
    if (check.domain_of < 0) continue;
    const Var& bound = vars_[check.domain_of];
    if (check.kind == Check::Kind::at_least)
      check.ka = bound.lo;
    else
      check.kb = bound.hi;
  }
}

bool ShapeProblem::depends_on(int v, int target) const {
  v = find(v);
  if (v == target) return true;
  for (int arg : vars_[v].args)
    if (depends_on(arg, target)) return true;
  return false;
}

void ShapeProblem::divisible(int a, int b) { checks_.push_back({Check::Kind::divisible, a, b}); }
void ShapeProblem::at_most(int a, int b, std::int64_t ka, std::int64_t kb) {
  checks_.push_back({Check::Kind::at_most, a, b, ka, kb});
}
void ShapeProblem::at_least(int a, std::int64_t lo) { checks_.push_back({Check::Kind::at_least, a, -1, lo, 1}); }

std::int64_t ShapeProblem::eval(int v, std::vector<std::int64_t>& values, std::vector<char>& done) const {
  if (done[v]) return values[v];
  const int r = find(v);
  std::int64_t x = 0;
  if (r != v) {
    x = eval(r, values, done);
  } else {
    const Var& var = vars_[v];
    auto arg = [&](std::size_t i) { return eval(var.args[i], values, done); };
    switch (var.kind) {
      case Kind::free:  // drawn by solve() before any evaluation
      case Kind::constant:
        x = values[v];
        break;
      case Kind::conv: {
        const std::int64_t span = arg(0) + 2 * arg(3) - arg(4) * (arg(1) - 1) - 1;
        x = span < 0 ? 0 : span / arg(2) + 1;
        break;
      }
      case Kind::conv_t:
        x = (arg(0) - 1) * arg(2) - 2 * arg(3) + arg(4) * (arg(1) - 1) + 1;
        break;
      case Kind::product:
        x = 1;
        for (std::size_t i = 0; i < var.args.size(); ++i) x *= arg(i);
        break;
      case Kind::sum:
        x = arg(0) + arg(1);
        break;
      case Kind::quotient: {
        const std::int64_t d = arg(1);
        x = d > 0 ? arg(0) / d : 0;
        break;
      }
    }
  }
  values[v] = x;
  done[v] = 1;
  return x;
}

bool ShapeProblem::holds(const Check& c, const std::vector<std::int64_t>& values) const {
  const std::int64_t a = values[c.a];
  switch (c.kind) {
    case Check::Kind::equal:
      return a == values[c.b];
    case Check::Kind::divisible:
      return values[c.b] > 0 && a % values[c.b] == 0;
    case Check::Kind::at_most:
      return c.b < 0 ? c.ka * a <= c.kb : c.ka * a <= c.kb * values[c.b];
    case Check::Kind::at_least:
      return a >= c.ka;
  }
  return false;
}

std::optional<std::vector<std::int64_t>> ShapeProblem::solve(Rng& rng, const Accept& accept, int attempts) const {
  const std::size_t n = vars_.size();
  std::vector<std::int64_t> values(n);
  std::vector<char> done(n);
  for (int attempt = 0; attempt < attempts; ++attempt) {
    std::fill(done.begin(), done.end(), 0);
    for (std::size_t v = 0; v < n; ++v) {
      const Var& var = vars_[v];
      if (parent_[v] != static_cast<int>(v)) continue;
      if (var.kind == Kind::free) {
        values[v] = std::uniform_int_distribution<std::int64_t>(var.lo, var.hi)(rng);
        done[v] = 1;
      } else if (var.kind == Kind::constant) {
        values[v] = var.lo;
        done[v] = 1;
      }
    }
    bool ok = true;
    for (std::size_t v = 0; v < n && ok; ++v) {  // a derived dimension must come out positive
      const std::int64_t x = eval(static_cast<int>(v), values, done);
      ok = x >= 1 || vars_[v].kind == Kind::free || vars_[v].kind == Kind::constant;
    }
    for (std::size_t i = 0; ok && i < checks_.size(); ++i) ok = holds(checks_[i], values);
    if (ok && accept(values)) return values;
  }
  return std::nullopt;
}

}  // namespace tritium::synth
