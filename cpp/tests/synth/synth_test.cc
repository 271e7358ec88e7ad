#include "tritium/synth.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "../../src/synth/graph.h"
#include "../fixtures.h"
#include "tritium/verify.h"

namespace tritium::synth {
namespace {

using Role = ShapeProblem::Role;
const ShapeProblem::Accept kAny = [](const std::vector<std::int64_t>&) { return true; };

TEST(ShapeProblem, EqualityMergesFreeVariablesIntoTheIntersectionOfTheirDomains) {
  ShapeProblem p;
  const int a = p.free(1, 10, Role::features), b = p.free(5, 20, Role::features);
  p.equal(a, b);
  Rng rng(1);
  for (int i = 0; i < 200; ++i) {
    const auto v = p.solve(rng, kAny, 1);
    ASSERT_TRUE(v);
    EXPECT_EQ((*v)[a], (*v)[b]);
    EXPECT_GE((*v)[a], 5);
    EXPECT_LE((*v)[a], 10);
  }
}

TEST(ShapeProblem, ResizeRewritesTheDomainsAndTheBoundsAMergeLeft) {
  // A free variable equal to a product leaves its domain as a bound on the product: resizing the
  // problem for a bigger profile must move that bound too, or no twin would ever pass it.
  ShapeProblem p;
  const int a = p.free(1, 4, Role::batch), b = p.free(2, 8, Role::rows), c = p.free(1, 32, Role::features);
  p.equal(c, p.product({a, b}));
  const int k = p.free(1, 3, Role::attribute);
  p.resize([](Role role, std::int64_t lo, std::int64_t hi) -> std::pair<std::int64_t, std::int64_t> {
    if (role == Role::batch) return {4, 4};
    if (role == Role::rows) return {10, 20};
    if (role == Role::features) return {1, 100};  // the old bound, 32, is below every product now
    return {lo, hi};
  });
  Rng rng(3);
  for (int i = 0; i < 100; ++i) {
    const auto v = p.solve(rng, kAny, 100);
    ASSERT_TRUE(v);
    const auto& x = *v;
    EXPECT_EQ(x[a], 4);
    EXPECT_GE(x[b], 10);
    EXPECT_LE(x[b], 20);
    EXPECT_EQ(x[c], x[a] * x[b]);
    EXPECT_GE(x[k], 1);
    EXPECT_LE(x[k], 3);
  }
}

TEST(ShapeProblem, ConvOutputsDivisibilityAndOrderHold) {
  ShapeProblem p;
  const int in = p.free(1, 40, Role::spatial), k = p.free(1, 5, Role::attribute), s = p.free(1, 2, Role::attribute);
  const int pad = p.free(0, 2, Role::attribute), d = p.constant(1);
  const int out = p.conv_out(in, k, s, pad, d);
  const int c = p.free(1, 32, Role::channels), g = p.free(1, 4, Role::attribute);
  p.divisible(c, g);
  p.at_most(pad, k, 2, 1);
  Rng rng(2);
  for (int i = 0; i < 300; ++i) {
    const auto v = p.solve(rng, kAny, 1000);
    ASSERT_TRUE(v);
    const auto& x = *v;
    EXPECT_EQ(x[out], (x[in] + 2 * x[pad] - (x[k] - 1) - 1) / x[s] + 1);
    EXPECT_GE(x[out], 1);
    EXPECT_EQ(x[c] % x[g], 0);
    EXPECT_LE(2 * x[pad], x[k]);
  }
}

TEST(ShapeProblem, AFreeVariableEqualToAnExpressionOfItselfDoesNotLoop) {
  ShapeProblem p;
  const int a = p.free(1, 8, Role::features), b = p.free(1, 8, Role::features);
  const int sum = p.sum(a, b);
  p.equal(a, sum);  // a == a + b has no solution with b >= 1
  Rng rng(3);
  EXPECT_FALSE(p.solve(rng, kAny, 50));
}

TEST(ShapeProblem, DrawsAreUniformOverTheFeasibleSet) {
  ShapeProblem p;  // x in [1, 12] with x % 3 == 0: 3, 6, 9, 12 equally often
  const int x = p.free(1, 12, Role::features), three = p.constant(3);
  p.divisible(x, three);
  Rng rng(4);
  std::map<std::int64_t, int> seen;
  for (int i = 0; i < 4000; ++i) ++seen[(*p.solve(rng, kAny, 1000))[x]];
  ASSERT_EQ(seen.size(), 4u);
  for (const auto& [value, n] : seen) {
    EXPECT_EQ(value % 3, 0);
    EXPECT_NEAR(n, 1000, 120) << value;
  }
}

TEST(Catalog, HasTheIssuesCategoriesAndAtLeast60Operators) {
  EXPECT_GE(catalog().size(), 60u);
  std::set<Category> categories;
  std::set<std::string_view> names;
  for (const auto& op : catalog()) {
    categories.insert(op.category);
    EXPECT_TRUE(names.insert(op.name).second) << "duplicate " << op.name;
    EXPECT_FALSE(op.code.empty()) << op.name;
    EXPECT_LE(op.min_rank, op.max_rank) << op.name;
  }
  EXPECT_EQ(categories.size(), 12u);
  EXPECT_TRUE(find_op("conv_transpose3d"));
  EXPECT_FALSE(find_op("no_such_op"));
}

SynthOptions options(std::size_t count, int lo, int hi, std::uint64_t seed = 7) {
  SynthOptions o;
  o.count = count;
  o.min_difficulty = lo;
  o.max_difficulty = hi;
  o.seed = seed;
  return o;
}

TEST(Synthesize, IsDeterministicPerSeedWhateverTheThreadCount) {
  auto o = options(700, 1, 6);
  const auto one = synthesize(o);
  o.threads = 3;
  const auto three = synthesize(o);
  ASSERT_TRUE(one && three);
  ASSERT_EQ(one->size(), 700u);
  ASSERT_EQ(three->size(), 700u);
  for (std::size_t i = 0; i < one->size(); ++i) EXPECT_EQ((*one)[i].task.source, (*three)[i].task.source) << i;
  o.seed = 8;
  const auto other = synthesize(o);
  ASSERT_TRUE(other);
  EXPECT_NE((*one)[0].task.source, (*other)[0].task.source);
}

TEST(Synthesize, GivesDistinctTasksInTheDifficultyRangeWithTheirMeta) {
  const auto tasks = synthesize(options(500, 3, 5));
  ASSERT_TRUE(tasks);
  std::set<std::uint64_t> hashes;
  for (const auto& t : *tasks) {
    EXPECT_TRUE(hashes.insert(t.hash).second);
    const int k = t.task.meta["difficulty"].get<int>();
    EXPECT_GE(k, 3);
    EXPECT_LE(k, 5);
    EXPECT_GE(t.task.meta["ops"].size(), static_cast<std::size_t>(k));
    EXPECT_NE(t.task.source.find("class Model(nn.Module)"), std::string::npos);
    EXPECT_NE(t.task.source.find("def get_inputs()"), std::string::npos);
    EXPECT_NE(t.task.source.find("def get_init_inputs()"), std::string::npos);
    EXPECT_GT(t.task.meta["flops"].get<double>(), 0);
  }
}

// Each profile keeps its tasks inside its band; mid's largest tensor is 16x under gpu's bound.
TEST(Synthesize, EachSizeProfileKeepsItsTasksInItsBand) {
  for (const auto size : {SizeProfile::cpu, SizeProfile::mid, SizeProfile::gpu}) {
    auto o = options(1000, 1, 8);
    o.size = size;
    const auto tasks = synthesize(o);
    ASSERT_TRUE(tasks) << size_name(size);
    const Profile& p = profile(size);
    std::vector<Task> plain;
    for (const auto& t : *tasks) {
      EXPECT_EQ(t.task.meta["size"], size_name(size));
      EXPECT_GE(t.task.meta["est_ms"].get<double>(), p.min_ms);
      EXPECT_LE(t.task.meta["est_ms"].get<double>(), p.max_ms);
      plain.push_back(t.task);
    }
    EXPECT_EQ(coverage_stats(plain)["ops_missing"].get<int>(), 0) << size_name(size);
  }
  EXPECT_EQ(profile(SizeProfile::mid).max_elements * 16, profile(SizeProfile::gpu).max_elements);
  for (const auto size : {SizeProfile::cpu, SizeProfile::mid, SizeProfile::gpu})
    EXPECT_EQ(parse_size(size_name(size)), size);
  EXPECT_FALSE(parse_size("huge"));
}

TEST(Synthesize, DrawsOnlyFromTheSelectedCategories) {
  auto o = options(200, 1, 4);
  o.categories = {Category::reduction, Category::shape};
  const auto tasks = synthesize(o);
  ASSERT_TRUE(tasks);
  for (const auto& t : *tasks)
    for (const auto& name : t.task.meta["ops"]) {
      const auto* op = find_op(name.get<std::string>());
      ASSERT_TRUE(op);
      EXPECT_TRUE(op->category == Category::reduction || op->category == Category::shape) << name;
    }
}

TEST(Synthesize, CoversTheCatalogUniformly) {
  const auto tasks = synthesize(options(10000, 1, 8));
  ASSERT_TRUE(tasks);
  std::vector<Task> plain;
  for (const auto& t : *tasks) plain.push_back(t.task);
  const Json stats = coverage_stats(plain);
  EXPECT_EQ(stats["ops_missing"].get<int>(), 0);
  EXPECT_TRUE(stats["chi_square"]["uniform_at_0.01"].get<bool>()) << stats["chi_square"].dump();
  EXPECT_EQ(stats["ops"].get<std::size_t>(), catalog().size());
}

TEST(Synthesize, EveryTaskOfTheEmittersCategoriesGetsASolutionThatPassesTheVerifier) {
  auto o = options(300, 1, 4, 17);
  o.with_solutions = true;
  o.categories = {Category::unary,     Category::binary,  Category::scalar, Category::select,
                  Category::reduction, Category::softmax, Category::linalg, Category::shape};
  const auto tasks = synthesize(o);
  ASSERT_TRUE(tasks);
  for (const auto& t : *tasks) {
    ASSERT_TRUE(t.task.meta["has_solution"].get<bool>()) << t.task.meta["ops"].dump();
    const std::string code = t.task.meta["solution"].get<std::string>();
    const auto v = verify_code(code, t.task.source);
    EXPECT_EQ(v.status, "valid") << t.task.id << "\n" << to_json(v).dump() << "\n" << code;
    EXPECT_FALSE(t.task.meta["plan"].get<std::string>().empty());
    // A flat kernel's block size is one name for its grid and its launch, so tuning it (search's
    // BLOCK knob) cannot leave elements uncovered: no literal block size at a launch.
    EXPECT_EQ(code.find("cdiv(n, 1024)"), std::string::npos) << code;
    EXPECT_EQ(code.find("BLOCK=1024"), std::string::npos) << code;
  }
}

TEST(Synthesize, ConvolutionsGetNoSolution) {
  auto o = options(20, 1, 2);
  o.with_solutions = true;
  o.categories = {Category::conv};
  const auto tasks = synthesize(o);
  ASSERT_TRUE(tasks);
  for (const auto& t : *tasks) EXPECT_FALSE(t.task.meta["has_solution"].get<bool>());
}

// A hand-built graph for the emitter: every size fixed, every op by catalog name.
struct Handmade {
  Graph g;
  int size(std::int64_t v) { return g.shapes.free(v, v, Role::features); }
  int tensor(std::vector<int> dims, TensorNode::Source source = TensorNode::Source::input) {
    g.tensors.push_back({std::move(dims), source, Domain::any, 0});
    return static_cast<int>(g.tensors.size()) - 1;
  }
  int op(std::string_view name, std::vector<int> operands, std::vector<int> dims,
         std::map<std::string, int> vars = {}) {
    OpNode n;
    n.op = find_op(name);
    n.operands = std::move(operands);
    n.vars = std::move(vars);
    n.out = tensor(std::move(dims), TensorNode::Source::node);
    for (int t : n.operands) ++g.tensors[t].consumers;
    g.nodes.push_back(n);
    return n.out;
  }
  // The solution, after checking it passes the static verifier against its task.
  Solution solve() {
    Rng rng(1);
    const auto values = g.shapes.solve(rng, kAny, 1);
    const auto solution = emit_solution(g, *values, "handmade");
    const Estimate cost = estimate(g, *values, profile(SizeProfile::cpu));
    const Task task = emit_task(g, *values, cost, "handmade", Json::object());
    const auto v = verify_code(solution->code, task.source);
    EXPECT_EQ(v.status, "valid") << to_json(v).dump() << "\n" << solution->code;
    return *solution;
  }
};

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Solutions, ElementwiseConsumersOfAMatmulRunInItsEpilogue) {
  Handmade h;
  const int b = h.size(3), s = h.size(5), k = h.size(7), n = h.size(9);
  const int x = h.tensor({b, s, k}), residual = h.tensor({b, s, n}), scale = h.tensor({n}, TensorNode::Source::param);
  const int y = h.op("linear", {x}, {b, s, n}, {{"k", k}, {"n", n}});
  const int r = h.op("relu", {y}, {b, s, n});
  const int sum = h.op("add", {r, residual}, {b, s, n});
  h.op("mul", {sum, scale}, {b, s, n});
  const Solution sol = h.solve();
  EXPECT_EQ(occurrences(sol.code, "[grid]("), 1u) << sol.code;
  EXPECT_EQ(occurrences(sol.code, "_ew_"), 0u) << sol.code;
  EXPECT_EQ(occurrences(sol.code, "torch.empty_like"), 0u) << sol.code;  // the matmul output is never stored
  EXPECT_NE(sol.plan.find("relu -> add -> mul fused into the epilogue"), std::string::npos) << sol.plan;
}

TEST(Solutions, AMatmulOutputAnotherKernelReadsIsStoredBesideItsEpilogue) {
  Handmade h;
  const int m = h.size(6), k = h.size(4), n = h.size(8);
  const int y = h.op("linear", {h.tensor({m, k})}, {m, n}, {{"k", k}, {"n", n}});
  h.op("tanh", {y}, {m, n});
  h.op("softmax", {y}, {m, n});  // after the epilogue's group: it reads the stored matmul output
  h.g.nodes.back().dim = 1;
  const Solution sol = h.solve();
  EXPECT_EQ(occurrences(sol.code, "torch.empty_like(c)"), 1u) << sol.code;
  EXPECT_EQ(occurrences(sol.code, "_ew_"), 0u) << sol.code;
  EXPECT_NE(sol.plan.find("writes both the matmul output"), std::string::npos) << sol.plan;
}

TEST(Solutions, EpiloguesThatWouldBeIllegalKeepTheirOwnKernel) {
  {  // a reader of the matmul output comes before the group's root: the fused kernel would run too late
    Handmade h;
    const int m = h.size(6), k = h.size(4), n = h.size(8);
    const int y = h.op("linear", {h.tensor({m, k})}, {m, n}, {{"k", k}, {"n", n}});
    const int red = h.op("softmax", {y}, {m, n});
    h.g.nodes.back().dim = 1;
    h.op("add", {y, red}, {m, n});
    const Solution sol = h.solve();
    EXPECT_NE(sol.code.find("_mm_kernel[grid]"), std::string::npos) << sol.code;
    EXPECT_EQ(sol.plan.find("fused into the epilogue"), std::string::npos) << sol.plan;
  }
  {  // the consumer broadcasts the matmul output to a larger shape: a tile of one is not a tile of the other
    Handmade h;
    const int b = h.size(2), one = h.g.shapes.constant(1), s = h.size(5), k = h.size(4), n = h.size(8);
    const int y = h.op("linear", {h.tensor({b, one, k})}, {b, one, n}, {{"k", k}, {"n", n}});
    h.op("add", {y, h.tensor({b, s, n})}, {b, s, n});
    const Solution sol = h.solve();
    EXPECT_NE(sol.code.find("_mm_kernel[grid]"), std::string::npos) << sol.code;
    EXPECT_NE(sol.code.find("_ew_"), std::string::npos) << sol.code;
  }
}

TEST(Synthesize, RejectsBadOptionsWithAMessage) {
  EXPECT_FALSE(synthesize(options(0, 1, 3)));
  EXPECT_FALSE(synthesize(options(5, 4, 2)));
  EXPECT_FALSE(synthesize(options(5, 1, 21)));
  auto o = options(5, 1, 3);
  o.categories = {Category::shape};
  const auto r = synthesize(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("compute"), std::string::npos);
}

// Traced tasks (tests/fixtures/traces: the tracer's output for example tasks).
Json trace_fixture(const std::string& name) {
  return Json::parse(*read_file(testing::fixture("traces/" + name + ".json")));
}

std::string example_task(const std::string& name) {
  return *read_file(testing::source_dir() / "examples" / "tasks" / "level2" / (name + ".py"));
}

TEST(TracedGraphs, TheDefaultEmissionPassesTheVerifierAgainstTheTask) {
  const auto graph = graph_from_trace(trace_fixture("03_linear_relu_sum"));
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_EQ(graph->compute_ops(), 3);
  const Solution sol = emit_fragments(*graph, {}, "03_linear_relu_sum");
  const auto v = verify_code(sol.code, example_task("03_linear_relu_sum"));
  EXPECT_EQ(v.status, "valid") << to_json(v).dump() << "\n" << sol.code;
  EXPECT_NE(sol.code.find("def __init__(self, in_features, out_features):"), std::string::npos) << sol.code;
  EXPECT_NE(sol.code.find("nn.Linear(100, 50)"), std::string::npos) << sol.code;
}

TEST(TracedGraphs, CutsMaterialiseTensorsAndStartNewKernels) {
  const auto graph = graph_from_trace(trace_fixture("07_swish_channel_bias"));  // sigmoid, mul, add
  ASSERT_TRUE(graph) << graph.error().message;
  const Solution fused = emit_fragments(*graph, {}, "t");
  EXPECT_EQ(occurrences(fused.code, "@triton.jit"), 1u) << fused.code;
  EXPECT_EQ(emit_fragments(*graph, {3}, "t").code, fused.code);  // one fragment: the default
  EXPECT_EQ(occurrences(emit_fragments(*graph, {2, 1}, "t").code, "@triton.jit"), 2u);
  EXPECT_EQ(occurrences(emit_fragments(*graph, {1, 1, 1}, "t").code, "@triton.jit"), 3u);
}

TEST(TracedGraphs, ACutKeepsAnElementwiseOpOutOfAMatmulEpilogue) {
  const auto graph = graph_from_trace(trace_fixture("03_linear_relu_sum"));
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_NE(emit_fragments(*graph, {2, 1}, "t").plan.find("fused into the epilogue"), std::string::npos);
  const Solution split = emit_fragments(*graph, {1, 2}, "t");
  EXPECT_EQ(split.plan.find("fused into the epilogue"), std::string::npos) << split.plan;
  EXPECT_NE(split.code.find("_mm_kernel[grid]"), std::string::npos) << split.code;
}

TEST(TracedGraphs, ParametersAreCreatedInTheModelsOrder) {
  // The Model registers its LayerNorm before its Linear, and forward calls them the other way round.
  const auto graph = graph_from_trace(trace_fixture("init_order"));
  ASSERT_TRUE(graph) << graph.error().message;
  const std::string code = emit_fragments(*graph, {}, "t").code;
  const auto param = code.find("nn.Parameter(torch.randn(48))"), norm = code.find("nn.LayerNorm(48)"),
             linear = code.find("nn.Linear(24, 48)");
  ASSERT_NE(linear, std::string::npos) << code;
  EXPECT_LT(param, norm) << code;
  EXPECT_LT(norm, linear) << code;
}

TEST(TracedGraphs, UnmappedNodesAreNamedInTheError) {
  const auto graph = graph_from_trace(trace_fixture("02_conv2d_relu_bias_add"));
  ASSERT_FALSE(graph);
  EXPECT_NE(graph.error().message.find("conv (Conv2d)"), std::string::npos) << graph.error().message;
}

TEST(TracedGraphs, MalformedTracesAreErrors) {
  Json bad = trace_fixture("07_swish_channel_bias");
  bad["nodes"][1]["operands"][1] = {{"node", 7}};
  EXPECT_FALSE(graph_from_trace(bad));
  bad = trace_fixture("07_swish_channel_bias");
  bad["nodes"][0]["op"] = "conv2d";
  EXPECT_FALSE(graph_from_trace(bad));
  EXPECT_FALSE(graph_from_trace(Json{{"ok", false}, {"error", "no Model"}}));
}

TEST(SynthOptionsFromJson, TakesDifficultyAsKRangeOrPair) {
  for (const Json& d : {Json("2-4"), Json::array({2, 4})}) {
    auto o = synth_options_from_json(Json{{"difficulty", d}, {"ops", Json::array({"unary", "reduction"})}});
    ASSERT_TRUE(o) << o.error().message;
    EXPECT_EQ(o->min_difficulty, 2);
    EXPECT_EQ(o->max_difficulty, 4);
    EXPECT_EQ(o->categories.size(), 2u);
  }
  EXPECT_EQ(synth_options_from_json(Json{{"difficulty", 3}})->max_difficulty, 3);
  EXPECT_EQ(synth_options_from_json(Json{{"size", "mid"}})->size, SizeProfile::mid);
  EXPECT_EQ(synth_options_from_json(Json{{"size", "huge"}}).error().message,
            "synth options: \"size\" must be cpu, mid or gpu, not 'huge'");
  EXPECT_EQ(synth_options_from_json(Json{{"difficulty", "3x"}}).error().message,
            "difficulty '3x': expected K or K1-K2, e.g. 3 or 1-8");
  EXPECT_NE(
      synth_options_from_json(Json{{"ops", "unary,nope"}}).error().message.find("unknown operator category 'nope'"),
      std::string::npos);
}

}  // namespace
}  // namespace tritium::synth
