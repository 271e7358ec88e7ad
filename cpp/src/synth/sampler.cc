// The DAG sampler: operators drawn for coverage, wired into chains, branches and merges, every
// dimension a shape variable with the constraints its operator implies.
#include <algorithm>
#include <cmath>

#include "graph.h"

namespace tritium::synth {
namespace {

using Role = ShapeProblem::Role;
using Source = TensorNode::Source;

bool chance(Rng& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
int uniform(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// A broadcasting op with a domain constrains its second operand (the divisor), not its first.
bool divides(const OpSpec& op) { return op.shape == ShapeRule::broadcast && op.domain != Domain::any; }

bool satisfies(Domain have, Domain need) {
  return need == Domain::any || have == Domain::positive || (need == Domain::nonneg && have == Domain::nonneg);
}

class Builder {
 public:
  Builder(const Profile& p, Rng& rng) : p_(p), rng_(rng) {}

  // Adds `op` to the graph, or returns false (and leaves the graph as it was) when it does not fit.
  bool add(const OpSpec& op) {
    Graph saved = g_;
    if (try_add(op)) return true;
    g_ = std::move(saved);
    return false;
  }
  Graph take() { return std::move(g_); }

 private:
  ShapeProblem& s() { return g_.shapes; }

  int free(Role role) {
    switch (role) {
      case Role::batch:
        return s().free(1, p_.batch_hi, role);
      case Role::rows:
        return s().free(p_.rows_lo, p_.rows_hi, role);
      case Role::features:
        return s().free(p_.features_lo, p_.features_hi, role);
      case Role::channels:
        return s().free(p_.channels_lo, p_.channels_hi, role);
      default:
        return s().free(p_.spatial_lo, p_.spatial_hi, role);
    }
  }

  int new_tensor(std::vector<int> dims, Source source, Domain sign) {
    g_.tensors.push_back({std::move(dims), source, sign, 0});
    return static_cast<int>(g_.tensors.size()) - 1;
  }

  // A model input of rank r, laid out like the tensors such ops take.
  int new_input(int rank, bool positive, bool image_like) {
    std::vector<int> dims;
    if (rank == 1) {
      dims = {free(Role::features)};
    } else if (rank == 2) {
      dims = {free(Role::batch), free(Role::features)};
    } else if (rank == 3 && !image_like) {
      dims = {free(Role::batch), free(Role::rows), free(Role::features)};
    } else {
      dims = {free(Role::batch), free(Role::channels)};
      const std::int64_t hi = rank == 5 ? p_.spatial3_hi : p_.spatial_hi;
      for (int i = 2; i < rank; ++i) dims.push_back(s().free(std::min(p_.spatial_lo, hi), hi, Role::spatial));
    }
    return new_tensor(std::move(dims), positive ? Source::positive_input : Source::input,
                      positive ? Domain::positive : Domain::any);
  }

  // The first operand: most often the newest unconsumed tensor (chains), sometimes any that fits
  // (branches), else a new input.
  std::optional<int> first_operand(const OpSpec& op) {
    std::vector<int> fits;
    for (int t = 0; t < static_cast<int>(g_.tensors.size()); ++t) {
      const auto& x = g_.tensors[t];
      const int rank = static_cast<int>(x.dims.size());
      if (x.source == Source::param || rank < op.min_rank || rank > op.max_rank) continue;
      if (!divides(op) && !satisfies(x.sign, op.domain)) continue;
      fits.push_back(t);
    }
    if (!fits.empty()) {
      for (auto it = fits.rbegin(); it != fits.rend(); ++it)
        if (g_.tensors[*it].consumers == 0 && chance(rng_, 0.85)) return *it;
      if (chance(rng_, 0.7)) return fits[uniform(rng_, 0, static_cast<int>(fits.size()) - 1)];
    }
    if (!g_.tensors.empty() && chance(rng_, 0.85)) return std::nullopt;  // rather another op than a new input
    const bool image_like = op.spatial > 0 || op.shape == ShapeRule::group_norm || op.shape == ShapeRule::batch_norm;
    const int lo = image_like && op.spatial > 0 ? op.spatial + 2 : op.min_rank;
    const int rank = uniform(rng_, lo, std::min(op.max_rank, image_like ? 5 : 3));
    return new_input(rank, op.domain != Domain::any && !divides(op), image_like);
  }

  // The second operand of a broadcasting op: another tensor of the graph (a merge), a new input or
  // a parameter, of a shape that broadcasts against `a`.
  int broadcast_operand(const OpSpec& op, int a) {
    const bool positive = divides(op);
    const auto dims_a = g_.tensors[a].dims;
    std::vector<int> merges;
    for (int t = 0; t < static_cast<int>(g_.tensors.size()); ++t) {
      const auto& x = g_.tensors[t];
      if (t != a && x.source == Source::node && x.dims.size() == dims_a.size() &&
          (!positive || x.sign == Domain::positive))
        merges.push_back(t);
    }
    if (!merges.empty() && chance(rng_, 0.5)) {
      const int b = merges[uniform(rng_, 0, static_cast<int>(merges.size()) - 1)];
      for (std::size_t i = 0; i < dims_a.size(); ++i) s().equal(dims_a[i], g_.tensors[b].dims[i]);
      return b;
    }
    const int rank = uniform(rng_, 1, static_cast<int>(dims_a.size()));
    std::vector<int> dims;
    for (std::size_t i = dims_a.size() - rank; i < dims_a.size(); ++i)
      dims.push_back(chance(rng_, 0.7) ? dims_a[i] : s().constant(1));
    if (positive) return new_tensor(std::move(dims), Source::positive_input, Domain::positive);
    return new_tensor(std::move(dims), chance(rng_, 0.5) ? Source::param : Source::input, Domain::any);
  }

  double hundredths(double lo, double hi) {
    return std::round(std::uniform_real_distribution<double>(lo, hi)(rng_) * 100) / 100;
  }

  int attribute(std::int64_t lo, std::int64_t hi) { return s().free(lo, hi, Role::attribute); }

  std::vector<int> windowed(OpNode& n, const std::vector<int>& in, bool transposed, bool pool) {
    const int k = attribute(1, p_.kernel_hi), st = attribute(1, 2), pad = attribute(0, 2);
    const int dil = pool ? s().constant(1) : attribute(1, 2);
    n.vars.insert({{"k", k}, {"s", st}, {"p", pad}, {"d", dil}});
    if (pool) s().at_most(pad, k, 2, 1);  // PyTorch: padding at most half the window
    std::vector<int> out = {in[0], in[1]};
    for (std::size_t i = 2; i < in.size(); ++i) {
      if (pool) s().at_most(k, in[i]);  // PyTorch: the window fits in the unpadded input

      out.push_back(transposed ? s().conv_transpose_out(in[i], k, st, pad, dil) : s().conv_out(in[i], k, st, pad, dil));
    }
    return out;
  }

  bool try_add(const OpSpec& op) {
    const auto first = first_operand(op);
    if (!first) return false;
    OpNode n;
    n.op = &op;
    n.operands = {*first};
    const std::vector<int> in = g_.tensors[*first].dims;
    const int rank = static_cast<int>(in.size());
    std::vector<int> out = in;
    Domain sign = op.result;
    switch (op.shape) {
      case ShapeRule::same:  // the attributes its code names
        n.scalar =
            hundredths(op.category == Category::scalar ? 0.25 : 0.01, op.category == Category::scalar ? 3.0 : 0.3);
        n.power = uniform(rng_, 2, 3);
        n.lo = -hundredths(0.1, 1.0);
        n.hi = hundredths(0.1, 1.0);
        break;
      case ShapeRule::broadcast: {
        const int b = broadcast_operand(op, *first);
        n.operands.push_back(b);
        const auto& db = g_.tensors[b].dims;
        for (std::size_t i = 0; i < db.size(); ++i) {  // right-aligned: a 1 in `a` takes b's size
          const std::size_t j = in.size() - db.size() + i;
          if (s().is_constant_one(in[j])) out[j] = db[i];
        }
        break;
      }
      case ShapeRule::reduce:
        n.dim = uniform(rng_, 0, rank - 1);
        n.keepdim = rank == 1 || chance(rng_, 0.5);
        s().at_least(in[n.dim], 2);
        if (n.keepdim)
          out[n.dim] = s().constant(1);
        else
          out.erase(out.begin() + n.dim);
        break;
      case ShapeRule::along:
      case ShapeRule::along_short:
        n.dim = uniform(rng_, 0, rank - 1);
        s().at_least(in[n.dim], 2);
        if (op.shape == ShapeRule::along_short) s().at_most(in[n.dim], s().constant(16));
        break;
      case ShapeRule::layer_norm:
      case ShapeRule::rms_norm:
        n.vars["n"] = in.back();
        s().at_least(in.back(), 2);
        break;
      case ShapeRule::group_norm: {
        const int groups = attribute(1, 4);
        s().divisible(in[1], groups);
        s().at_least(in[1], 2);
        n.vars.insert({{"groups", groups}, {"c", in[1]}});
        break;
      }
      case ShapeRule::batch_norm:
        n.vars["c"] = in[1];
        break;
      case ShapeRule::matmul:
      case ShapeRule::linear:
      case ShapeRule::addmm:
        n.vars.insert({{"k", in.back()}, {"n", free(Role::features)}});
        out.back() = n.vars["n"];
        break;
      case ShapeRule::bmm: {
        std::vector<int> others;
        for (int t = 0; t < static_cast<int>(g_.tensors.size()); ++t)
          if (t != *first && g_.tensors[t].source == Source::node && g_.tensors[t].dims.size() == 3)
            others.push_back(t);
        int b;
        if (!others.empty() && chance(rng_, 0.5)) {
          b = others[uniform(rng_, 0, static_cast<int>(others.size()) - 1)];
          s().equal(in[0], g_.tensors[b].dims[0]);
          s().equal(in[2], g_.tensors[b].dims[1]);
        } else {
          b = new_tensor({in[0], in[2], free(Role::features)}, Source::input, Domain::any);
        }
        n.operands.push_back(b);
        out = {in[0], in[1], g_.tensors[b].dims[2]};
        break;
      }
      case ShapeRule::conv:
      case ShapeRule::conv_transpose: {
        const int cout = free(Role::channels), groups = attribute(1, 4);
        s().divisible(in[1], groups);
        s().divisible(cout, groups);
        n.vars.insert({{"cin", in[1]}, {"cout", cout}, {"groups", groups}});
        out = windowed(n, in, op.shape == ShapeRule::conv_transpose, false);
        out[1] = cout;
        break;
      }
      case ShapeRule::pool:
        out = windowed(n, in, false, true);
        break;
      case ShapeRule::adaptive_pool: {
        const int o = attribute(1, 8);
        for (int i = 2; i < rank; ++i) {
          s().at_most(o, in[i]);
          out[i] = o;
        }
        n.vars["o"] = o;
        break;
      }
      case ShapeRule::transpose:
        n.dim = uniform(rng_, 0, rank - 2);
        n.dim2 = uniform(rng_, n.dim + 1, rank - 1);
        std::swap(out[n.dim], out[n.dim2]);
        sign = g_.tensors[*first].sign;
        break;
      case ShapeRule::permute: {
        n.perm.resize(rank);
        for (int i = 0; i < rank; ++i) n.perm[i] = i;
        while (std::is_sorted(n.perm.begin(), n.perm.end())) std::shuffle(n.perm.begin(), n.perm.end(), rng_);
        for (int i = 0; i < rank; ++i) out[i] = in[n.perm[i]];
        sign = g_.tensors[*first].sign;
        break;
      }
      case ShapeRule::flatten:
        out = {in[0], s().product(std::vector<int>(in.begin() + 1, in.end()))};
        sign = g_.tensors[*first].sign;
        break;
      case ShapeRule::reshape: {
        const int a = s().free(2, 8, Role::attribute);
        s().divisible(in.back(), a);
        const int b = s().quotient(in.back(), a);
        n.vars.insert({{"a", a}, {"b", b}});
        out.back() = a;
        out.push_back(b);
        sign = g_.tensors[*first].sign;
        break;
      }
      case ShapeRule::cat: {
        n.dim = uniform(rng_, 0, rank - 1);
        std::vector<int> dims = in;
        Role role = s().role(in[n.dim]);
        if (role == Role::derived || role == Role::attribute) role = Role::features;
        dims[n.dim] = free(role);
        const int b = new_tensor(std::move(dims), Source::input, Domain::any);
        n.operands.push_back(b);
        out[n.dim] = s().sum(in[n.dim], g_.tensors[b].dims[n.dim]);
        break;
      }
    }
    for (int t : n.operands) ++g_.tensors[t].consumers;
    n.out = new_tensor(std::move(out), Source::node, sign);
    g_.nodes.push_back(std::move(n));
    if (op.compute) ++g_.compute;
    return true;
  }

  const Profile& p_;
  Rng& rng_;
  Graph g_;
};

}  // namespace

const Profile& profile(SizeProfile size) {
  // cpu: each task's reference well under 50 ms on one core; gpu: an H200 band (docs/synth.md);
  // mid: the H200 band cut to 16M-element tensors (64 MiB in float32) and at least 30 us, so an
  // eager reference times above the engine's 20-us floor while a batch of rollouts is judged in
  // seconds, not the tens of seconds GB-size tasks take.
  static const Profile kCpu{SizeProfile::cpu, 16, 1, 64, 2, 256, 1, 16, 4, 24, 10, 3, 1 << 19, 0.0, 20.0};
  static const Profile kMid{SizeProfile::mid, 64, 16, 512, 16, 2048, 3, 64, 8, 64, 16, 5, 1 << 24, 0.03, 2.0};
  static const Profile kGpu{SizeProfile::gpu, 128, 16, 1024, 16, 4096, 3, 128, 8, 128, 32, 5, 1 << 28, 0.02, 20.0};
  return size == SizeProfile::cpu ? kCpu : size == SizeProfile::mid ? kMid : kGpu;
}

OpPicker::OpPicker(const std::vector<const OpSpec*>& allowed) : allowed_(allowed), counts_(allowed.size(), 0) {}

const OpSpec* OpPicker::pick(Rng& rng) const {
  const std::int64_t least = *std::min_element(counts_.begin(), counts_.end());
  std::vector<double> weights(counts_.size());
  for (std::size_t i = 0; i < counts_.size(); ++i)
    weights[i] = std::ldexp(1.0, -static_cast<int>(std::min<std::int64_t>(counts_[i] - least, 60)));
  return allowed_[std::discrete_distribution<std::size_t>(weights.begin(), weights.end())(rng)];
}

void OpPicker::count(const Graph& g) {
  for (const auto& n : g.nodes)
    for (std::size_t i = 0; i < allowed_.size(); ++i)
      if (allowed_[i] == n.op) ++counts_[i];
}

std::optional<Graph> sample_graph(int difficulty, const Profile& p, const OpPicker& picker, Rng& rng) {
  Builder b(p, rng);
  int compute = 0, tries = 0;
  while (compute < difficulty && tries++ < 40 * difficulty) {
    const OpSpec* op = picker.pick(rng);
    if (b.add(*op) && op->compute) ++compute;
  }
  if (compute < difficulty) return std::nullopt;
  return b.take();
}

}  // namespace tritium::synth
