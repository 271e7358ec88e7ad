// The operator catalog: one row per PyTorch operator (docs/synth.md lists the columns).
#include <algorithm>
#include <array>
#include <string>

#include "tritium/synth.h"

namespace tritium::synth {
namespace {

using C = Category;
using S = ShapeRule;
using D = Domain;
using K = Cost;

// clang-format off
constexpr OpSpec kCatalog[] = {
  // name              category       ar rank   shape             sp domain      result      cost          flops code                                             module                                            params                                   compute triton (an expression, row, matmul, view, or none)
  // ---- elementwise unary
  {"relu",             C::unary,      1, 1, 5, S::same,           0, D::any,      D::nonneg,  K::elementwise, 1, "torch.relu({0})",                               "", "", true, "tl.maximum({0}, 0.0)"},
  {"leaky_relu",       C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 2, "F.leaky_relu({0}, negative_slope={scalar})",    "", "", true, "tl.where({0} >= 0, {0}, {0} * {scalar})"},
  {"elu",              C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 4, "F.elu({0})",                                    "", "", true, "tl.where({0} > 0, {0}, tl.exp(tl.minimum({0}, 0.0)) - 1.0)"},
  {"gelu",             C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 8, "F.gelu({0})",                                   "", "", true, "0.5 * {0} * (1.0 + tl.math.erf({0} * 0.7071067811865476))"},
  {"gelu_tanh",        C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 8, "F.gelu({0}, approximate=\"tanh\")",             "", "", true, "0.5 * {0} * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * (0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0})))) - 1.0))"},
  {"silu",             C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 4, "F.silu({0})",                                   "", "", true, "{0} / (1.0 + tl.exp(-{0}))"},
  {"mish",             C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 8, "F.mish({0})",                                   "", "", true, "{0} * (2.0 / (1.0 + tl.exp(-2.0 * ((tl.maximum({0}, 0.0) + tl.log(1.0 + tl.exp(-tl.abs({0}))))))) - 1.0)"},
  {"sigmoid",          C::unary,      1, 1, 5, S::same,           0, D::any,      D::positive, K::elementwise, 4, "torch.sigmoid({0})",                           "", "", true, "1.0 / (1.0 + tl.exp(-{0}))"},
  {"tanh",             C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 4, "torch.tanh({0})",                               "", "", true, "(2.0 / (1.0 + tl.exp(-2.0 * ({0}))) - 1.0)"},
  {"softplus",         C::unary,      1, 1, 5, S::same,           0, D::any,      D::positive, K::elementwise, 4, "F.softplus({0})",                              "", "", true, "tl.where({0} > 20.0, {0}, (tl.maximum({0}, 0.0) + tl.log(1.0 + tl.exp(-tl.abs({0})))))"},
  {"hardtanh",         C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 2, "F.hardtanh({0})",                               "", "", true, "tl.minimum(tl.maximum({0}, -1.0), 1.0)"},
  {"hardsigmoid",      C::unary,      1, 1, 5, S::same,           0, D::any,      D::nonneg,  K::elementwise, 3, "F.hardsigmoid({0})",                            "", "", true, "tl.minimum(tl.maximum({0} / 6.0 + 0.5, 0.0), 1.0)"},
  {"hardswish",        C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 4, "F.hardswish({0})",                              "", "", true, "{0} * tl.minimum(tl.maximum({0} + 3.0, 0.0), 6.0) / 6.0"},
  {"abs",              C::unary,      1, 1, 5, S::same,           0, D::any,      D::nonneg,  K::elementwise, 1, "torch.abs({0})",                                "", "", true, "tl.abs({0})"},
  {"neg",              C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 1, "torch.neg({0})",                                "", "", true, "-{0}"},
  {"exp",              C::unary,      1, 1, 5, S::same,           0, D::any,      D::positive, K::elementwise, 4, "torch.exp({0})",                               "", "", true, "tl.exp({0})"},
  {"log",              C::unary,      1, 1, 5, S::same,           0, D::positive, D::any,     K::elementwise, 4, "torch.log({0})",                                "", "", true, "tl.log({0})"},
  {"sqrt",             C::unary,      1, 1, 5, S::same,           0, D::nonneg,   D::nonneg,  K::elementwise, 4, "torch.sqrt({0})",                               "", "", true, "tl.sqrt({0})"},
  {"rsqrt",            C::unary,      1, 1, 5, S::same,           0, D::positive, D::positive, K::elementwise, 4, "torch.rsqrt({0})",                             "", "", true, "1.0 / tl.sqrt({0})"},
  {"square",           C::unary,      1, 1, 5, S::same,           0, D::any,      D::nonneg,  K::elementwise, 1, "torch.square({0})",                             "", "", true, "{0} * {0}"},
  {"sin",              C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 4, "torch.sin({0})",                                "", "", true, "tl.sin({0})"},
  {"cos",              C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 4, "torch.cos({0})",                                "", "", true, "tl.cos({0})"},
  {"erf",              C::unary,      1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 6, "torch.erf({0})",                                "", "", true, "tl.math.erf({0})"},
  // ---- binary with broadcasting (the second operand: another tensor of the graph, an input or a parameter)
  {"add",              C::binary,     2, 1, 5, S::broadcast,      0, D::any,      D::any,     K::elementwise, 1, "{0} + {1}",                                     "", "", true, "{0} + {1}"},
  {"sub",              C::binary,     2, 1, 5, S::broadcast,      0, D::any,      D::any,     K::elementwise, 1, "{0} - {1}",                                     "", "", true, "{0} - {1}"},
  {"mul",              C::binary,     2, 1, 5, S::broadcast,      0, D::any,      D::any,     K::elementwise, 1, "{0} * {1}",                                     "", "", true, "{0} * {1}"},
  {"div",              C::binary,     2, 1, 5, S::broadcast,      0, D::positive, D::any,     K::elementwise, 1, "{0} / {1}",                                     "", "", true, "{0} / {1}"},
  {"maximum",          C::binary,     2, 1, 5, S::broadcast,      0, D::any,      D::any,     K::elementwise, 1, "torch.maximum({0}, {1})",                       "", "", true, "tl.maximum({0}, {1})"},
  {"minimum",          C::binary,     2, 1, 5, S::broadcast,      0, D::any,      D::any,     K::elementwise, 1, "torch.minimum({0}, {1})",                       "", "", true, "tl.minimum({0}, {1})"},
  // ---- with a scalar
  {"add_scalar",       C::scalar,     1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 1, "{0} + {scalar}",                                "", "", true, "{0} + {scalar}"},
  {"mul_scalar",       C::scalar,     1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 1, "{0} * {scalar}",                                "", "", true, "{0} * {scalar}"},
  {"div_scalar",       C::scalar,     1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 1, "{0} / {scalar}",                                "", "", true, "{0} / {scalar}"},
  {"pow_scalar",       C::scalar,     1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 2, "torch.pow({0}, {power})",                       "", "", true, "{powered}"},
  // ---- clamp and where
  {"clamp",            C::select,     1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 2, "torch.clamp({0}, min={lo}, max={hi})",          "", "", true, "tl.minimum(tl.maximum({0}, {lo}), {hi})"},
  {"where_positive",   C::select,     2, 1, 5, S::broadcast,      0, D::any,      D::any,     K::elementwise, 2, "torch.where({0} > 0, {0}, {1})",                "", "", true, "tl.where({0} > 0, {0}, {1})"},
  {"masked_fill",      C::select,     1, 1, 5, S::same,           0, D::any,      D::any,     K::elementwise, 2, "{0}.masked_fill({0} < {lo}, 0.0)",              "", "", true, "tl.where({0} < {lo}, 0.0, {0})"},
  // ---- reductions over one dim
  {"sum",              C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::any,     K::per_input,   1, "torch.sum({0}, dim={dim}, keepdim={keepdim})",  "", "", true, "row"},
  {"mean",             C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::any,     K::per_input,   1, "torch.mean({0}, dim={dim}, keepdim={keepdim})", "", "", true, "row"},
  {"max",              C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::any,     K::per_input,   1, "torch.max({0}, dim={dim}, keepdim={keepdim}).values", "", "", true, "row"},
  {"min",              C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::any,     K::per_input,   1, "torch.min({0}, dim={dim}, keepdim={keepdim}).values", "", "", true, "row"},
  {"amax",             C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::any,     K::per_input,   1, "torch.amax({0}, dim={dim}, keepdim={keepdim})", "", "", true, "row"},
  {"amin",             C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::any,     K::per_input,   1, "torch.amin({0}, dim={dim}, keepdim={keepdim})", "", "", true, "row"},
  {"var",              C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::nonneg,  K::per_input,   3, "torch.var({0}, dim={dim}, keepdim={keepdim})",  "", "", true, "row"},
  {"std",              C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::nonneg,  K::per_input,   3, "torch.std({0}, dim={dim}, keepdim={keepdim})",  "", "", true, "row"},
  {"logsumexp",        C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::any,     K::per_input,   5, "torch.logsumexp({0}, dim={dim}, keepdim={keepdim})", "", "", true, "row"},
  {"norm",             C::reduction,  1, 1, 5, S::reduce,         0, D::any,      D::nonneg,  K::per_input,   2, "torch.linalg.vector_norm({0}, dim={dim}, keepdim={keepdim})", "", "", true, "row"},
  // ---- softmax
  {"softmax",          C::softmax,    1, 1, 5, S::along,          0, D::any,      D::positive, K::per_input,  5, "torch.softmax({0}, dim={dim})",                 "", "", true, "row"},
  {"log_softmax",      C::softmax,    1, 1, 5, S::along,          0, D::any,      D::any,     K::per_input,   5, "torch.log_softmax({0}, dim={dim})",             "", "", true, "row"},
  // ---- normalisations
  {"layer_norm",       C::norm,       1, 2, 5, S::layer_norm,     0, D::any,      D::any,     K::per_input,   8, "{m}({0})",                                      "nn.LayerNorm({n})",                              "weight ones, bias zeros (PyTorch default)", true, "row"},
  {"rms_norm",         C::norm,       1, 2, 5, S::rms_norm,       0, D::any,      D::any,     K::per_input,   6, "{m}({0})",                                      "nn.RMSNorm({n}, eps=1e-6)",                      "weight ones (PyTorch default)",                 true, "row"},
  {"group_norm",       C::norm,       1, 3, 5, S::group_norm,     0, D::any,      D::any,     K::per_input,   8, "{m}({0})",                                      "nn.GroupNorm({groups}, {c})",                    "weight ones, bias zeros (PyTorch default)", true, ""},
  {"batch_norm",       C::norm,       1, 2, 5, S::batch_norm,     0, D::any,      D::any,     K::per_input,   4, "F.batch_norm({0}, {m}.running_mean, {m}.running_var, {m}.weight, {m}.bias, training=False)", "nn.BatchNorm{bn}d({c})", "running mean 0, var 1, weight ones, bias zeros (PyTorch default)", true, ""},
  // ---- linear algebra
  {"matmul",           C::linalg,     1, 2, 3, S::matmul,         0, D::any,      D::any,     K::matmul,      2, "torch.matmul({0}, {m}.weight.t())",              "nn.Linear({k}, {n}, bias=False)",                "PyTorch default (Kaiming uniform)",                            true, "matmul"},
  {"bmm",              C::linalg,     2, 3, 3, S::bmm,            0, D::any,      D::any,     K::matmul,      2, "torch.bmm({0}, {1})",                            "", "", true, "matmul"},
  {"linear",           C::linalg,     1, 1, 4, S::linear,         0, D::any,      D::any,     K::matmul,      2, "{m}({0})",                                       "nn.Linear({k}, {n})",                            "PyTorch default (Kaiming uniform)",     true, "matmul"},
  {"addmm",            C::linalg,     1, 2, 2, S::addmm,          0, D::any,      D::any,     K::matmul,      2, "torch.addmm({m}.bias, {0}, {m}.weight.t())",    "nn.Linear({k}, {n})",                            "PyTorch default (Kaiming uniform)",       true, "matmul"},
  // ---- convolutions
  {"conv1d",           C::conv,       1, 3, 3, S::conv,           1, D::any,      D::any,     K::conv,        2, "{m}({0})",                                       "nn.Conv1d({cin}, {cout}, {k}, stride={s}, padding={p}, dilation={d}, groups={groups})", "PyTorch default", true, ""},
  {"conv2d",           C::conv,       1, 4, 4, S::conv,           2, D::any,      D::any,     K::conv,        2, "{m}({0})",                                       "nn.Conv2d({cin}, {cout}, {k}, stride={s}, padding={p}, dilation={d}, groups={groups})", "PyTorch default", true, ""},
  {"conv3d",           C::conv,       1, 5, 5, S::conv,           3, D::any,      D::any,     K::conv,        2, "{m}({0})",                                       "nn.Conv3d({cin}, {cout}, {k}, stride={s}, padding={p}, dilation={d}, groups={groups})", "PyTorch default", true, ""},
  {"conv_transpose1d", C::conv,       1, 3, 3, S::conv_transpose, 1, D::any,      D::any,     K::conv_transpose, 2, "{m}({0})",                                    "nn.ConvTranspose1d({cin}, {cout}, {k}, stride={s}, padding={p}, dilation={d}, groups={groups})", "PyTorch default", true, ""},
  {"conv_transpose2d", C::conv,       1, 4, 4, S::conv_transpose, 2, D::any,      D::any,     K::conv_transpose, 2, "{m}({0})",                                    "nn.ConvTranspose2d({cin}, {cout}, {k}, stride={s}, padding={p}, dilation={d}, groups={groups})", "PyTorch default", true, ""},
  {"conv_transpose3d", C::conv,       1, 5, 5, S::conv_transpose, 3, D::any,      D::any,     K::conv_transpose, 2, "{m}({0})",                                    "nn.ConvTranspose3d({cin}, {cout}, {k}, stride={s}, padding={p}, dilation={d}, groups={groups})", "PyTorch default", true, ""},
  // ---- pooling
  {"max_pool1d",       C::pool,       1, 3, 3, S::pool,           1, D::any,      D::any,     K::window,      1, "F.max_pool1d({0}, {k}, stride={s}, padding={p})", "", "", true, ""},
  {"max_pool2d",       C::pool,       1, 4, 4, S::pool,           2, D::any,      D::any,     K::window,      1, "F.max_pool2d({0}, {k}, stride={s}, padding={p})", "", "", true, ""},
  {"max_pool3d",       C::pool,       1, 5, 5, S::pool,           3, D::any,      D::any,     K::window,      1, "F.max_pool3d({0}, {k}, stride={s}, padding={p})", "", "", true, ""},
  {"avg_pool1d",       C::pool,       1, 3, 3, S::pool,           1, D::any,      D::any,     K::window,      1, "F.avg_pool1d({0}, {k}, stride={s}, padding={p})", "", "", true, ""},
  {"avg_pool2d",       C::pool,       1, 4, 4, S::pool,           2, D::any,      D::any,     K::window,      1, "F.avg_pool2d({0}, {k}, stride={s}, padding={p})", "", "", true, ""},
  {"avg_pool3d",       C::pool,       1, 5, 5, S::pool,           3, D::any,      D::any,     K::window,      1, "F.avg_pool3d({0}, {k}, stride={s}, padding={p})", "", "", true, ""},
  {"adaptive_avg_pool1d", C::pool,    1, 3, 3, S::adaptive_pool,  1, D::any,      D::any,     K::per_input,   1, "F.adaptive_avg_pool1d({0}, {o})",                "", "", true, ""},
  {"adaptive_avg_pool2d", C::pool,    1, 4, 4, S::adaptive_pool,  2, D::any,      D::any,     K::per_input,   1, "F.adaptive_avg_pool2d({0}, {o})",                "", "", true, ""},
  {"adaptive_max_pool2d", C::pool,    1, 4, 4, S::adaptive_pool,  2, D::any,      D::any,     K::per_input,   1, "F.adaptive_max_pool2d({0}, {o})",                "", "", true, ""},
  // ---- shape (views and copies; they do not count toward difficulty)
  {"transpose",        C::shape,      1, 2, 5, S::transpose,      0, D::any,      D::any,     K::none,        0, "{0}.transpose({dim}, {dim2})",                   "", "", false, "view"},
  {"permute",          C::shape,      1, 3, 5, S::permute,        0, D::any,      D::any,     K::none,        0, "{0}.permute({dims})",                            "", "", false, "view"},
  {"flatten",          C::shape,      1, 3, 5, S::flatten,        0, D::any,      D::any,     K::none,        0, "torch.flatten({0}, 1)",                          "", "", false, "view"},
  {"reshape",          C::shape,      1, 1, 4, S::reshape,        0, D::any,      D::any,     K::none,        0, "{0}.reshape(*{0}.shape[:-1], {a}, {b})",         "", "", false, "view"},
  {"cat",              C::shape,      2, 1, 5, S::cat,            0, D::any,      D::any,     K::none,        0, "torch.cat([{0}, {1}], dim={dim})",               "", "", false, "view"},
  // ---- cumulative
  {"cumsum",           C::cumulative, 1, 1, 5, S::along,          0, D::any,      D::any,     K::per_input,   1, "torch.cumsum({0}, dim={dim})",                   "", "", true, ""},
  {"cumprod",          C::cumulative, 1, 1, 5, S::along_short,    0, D::any,      D::any,     K::per_input,   1, "torch.cumprod({0}, dim={dim})",                  "", "", true, ""},
  {"cummax",           C::cumulative, 1, 1, 5, S::along,          0, D::any,      D::any,     K::per_input,   1, "torch.cummax({0}, dim={dim}).values",            "", "", true, ""},
  {"cummin",           C::cumulative, 1, 1, 5, S::along,          0, D::any,      D::any,     K::per_input,   1, "torch.cummin({0}, dim={dim}).values",            "", "", true, ""},
  {"logcumsumexp",     C::cumulative, 1, 1, 5, S::along,          0, D::any,      D::any,     K::per_input,   5, "torch.logcumsumexp({0}, dim={dim})",             "", "", true, ""},
};
// clang-format on

constexpr std::array<std::string_view, 12> kCategoryNames = {"unary",     "binary",  "scalar", "select",
                                                             "reduction", "softmax", "norm",   "linalg",
                                                             "conv",      "pool",    "shape",  "cumulative"};

}  // namespace

std::string_view to_string(Category c) { return kCategoryNames[static_cast<int>(c)]; }

std::optional<Category> category_from_string(std::string_view name) {
  const auto it = std::find(kCategoryNames.begin(), kCategoryNames.end(), name);
  if (it == kCategoryNames.end()) return std::nullopt;
  return static_cast<Category>(it - kCategoryNames.begin());
}

Result<std::vector<Category>> parse_categories(std::string_view list) {
  std::vector<Category> out;
  std::size_t start = 0;
  while (start < list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view name = list.substr(start, comma - start);
    const auto c = category_from_string(name);
    if (!c) {
      std::string known;
      for (auto k : kCategoryNames) known += (known.empty() ? "" : ", ") + std::string(k);
      return Error{"unknown operator category '" + std::string(name) + "'; known: " + known};
    }
    out.push_back(*c);
    start = comma + 1;
  }
  return out;
}

std::span<const OpSpec> catalog() { return kCatalog; }

const OpSpec* find_op(std::string_view name) {
  for (const auto& op : kCatalog)
    if (op.name == name) return &op;
  return nullptr;
}

}  // namespace tritium::synth
