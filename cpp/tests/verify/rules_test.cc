// The verdict's shape and the order of stages, and the rules on the adversarial fixture suite
// (tests/fixtures/verify, also run by python/tests/test_verify_fixtures.py): every cheat raises
// its `# expect:` rules with its `# expect-status:`, every honest candidate has no error.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "../fixtures.h"
#include "tritium/verify.h"

namespace tritium {
namespace {

constexpr const char* kHonest = R"(import torch
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)
        add_one[grid](x, y, x.numel(), BLOCK=1024)
        return y
)";

bool has_rule(const Verification& v, const std::string& rule) {
  for (const auto& f : v.findings)
    if (f.rule == rule) return true;
  return false;
}

TEST(Verify, AnHonestKernelIsValidWithNoFindings) {
  const auto v = verify_code(kHonest);
  EXPECT_EQ(v.status, "valid");
  EXPECT_TRUE(v.findings.empty()) << to_json(v).dump();
}

TEST(Verify, AParseErrorIsInvalidSyntaxWithItsPosition) {
  const auto v = verify_code("class ModelNew(:\n");
  EXPECT_EQ(v.status, "invalid_syntax");
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].rule, "syntax.parse");
  EXPECT_EQ(v.findings[0].line, 1u);
}

TEST(Verify, SyntaxOutranksFunctionalityWhichOutranksHacks) {
  std::string code = kHonest;
  code.replace(code.find("add_one[grid]"), 13, "torch.add");  // no launch; delegation
  code += "import os\n";
  const auto v = verify_code(code);
  EXPECT_EQ(v.status, "invalid_functionality");
  EXPECT_TRUE(has_rule(v, "func.kernel_not_launched"));
  EXPECT_TRUE(has_rule(v, "func.torch_compute:add"));
  EXPECT_TRUE(has_rule(v, "hack.forbidden_module:os"));
  const auto no_model = verify_code("import triton\nimport os\n");
  EXPECT_EQ(no_model.status, "invalid_syntax");
}

TEST(Verify, FindingsComeInLineOrderAndSerialise) {
  std::string code = kHonest;
  code += "import subprocess\nimport socket\n";
  const auto v = verify_code(code);
  ASSERT_GE(v.findings.size(), 2u);
  EXPECT_LE(v.findings[0].line, v.findings[1].line);
  const Json j = to_json(v);
  EXPECT_EQ(j["status"], "hack");
  EXPECT_EQ(j["findings"][0]["severity"], "error");
  EXPECT_TRUE(j["findings"][0].contains("rule"));
}

TEST(Verify, AResponseWithoutCodeIsNoCode) {
  const auto v = verify_response("Sorry, I can't write that kernel.");
  EXPECT_EQ(v.status, "invalid_syntax");
  EXPECT_TRUE(has_rule(v, "syntax.no_code"));
}

TEST(Verify, AResponseIsExtractedThenVerified) {
  const std::string response = std::string("<think>one kernel</think>\n```python\n") + kHonest + "```\n";
  EXPECT_EQ(verify_response(response).status, "valid");
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fixture's `# key: value` header lines, in order.
std::multimap<std::string, std::string> headers(const std::string& code) {
  std::multimap<std::string, std::string> out;
  std::istringstream lines(code);
  for (std::string line; std::getline(lines, line) && line.rfind("# ", 0) == 0;) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    out.emplace(line.substr(2, colon - 2), value);
  }
  return out;
}

std::vector<std::filesystem::path> python_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().extension() == ".py") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::set<std::string> error_rules(const Verification& v) {
  std::set<std::string> out;
  for (const auto& f : v.findings)
    if (f.severity == "error") out.insert(f.rule);
  return out;
}

Verification verify_fixture(const std::string& relative) {
  return verify_code(read_file(testing::fixture("verify/" + relative)));
}

TEST(VerifyFixtures, EveryCheatRaisesItsExpectedRulesAndStatus) {
  const auto files = python_files(testing::fixture("verify/cheats"));
  ASSERT_GE(files.size(), 50u);
  for (const auto& path : files) {
    const std::string code = read_file(path);
    const auto h = headers(code);
    const auto v = verify_code(code);
    const auto errors = error_rules(v);
    for (auto [it, end] = h.equal_range("expect"); it != end; ++it)
      EXPECT_TRUE(errors.count(it->second)) << path.filename() << " misses " << it->second << ": " << to_json(v).dump();
    ASSERT_EQ(h.count("expect-status"), 1u) << path.filename();
    EXPECT_EQ(v.status, h.find("expect-status")->second) << path.filename() << ": " << to_json(v).dump();
  }
}

TEST(VerifyFixtures, EveryHonestCandidateIsValidWithNoErrorAgainstItsTask) {
  auto files = python_files(testing::fixture("verify/honest"));
  const auto solutions = python_files(testing::source_dir() / "examples" / "solutions");
  files.insert(files.end(), solutions.begin(), solutions.end());
  ASSERT_GE(files.size(), 30u);
  for (const auto& path : files) {
    const std::string code = read_file(path);
    const auto h = headers(code);
    const std::string task =
        h.count("task") ? h.find("task")->second : path.parent_path().filename().string() + "/" + path.stem().string();
    const auto v = verify_code(code, read_file(testing::source_dir() / "examples" / "tasks" / (task + ".py")));
    EXPECT_EQ(v.status, "valid") << path.filename() << ": " << to_json(v).dump();
    EXPECT_TRUE(error_rules(v).empty()) << path.filename() << ": " << to_json(v).dump();
  }
}

// hack.output_cache: launch configurations may be kept, outputs may not.

TEST(OutputCache, AGridDictKeyedByShapeAndReadOnlyAsTheGridIsNotACache) {
  EXPECT_EQ(verify_fixture("honest/l1_01_relu_grid_cache_by_shape.py").status, "valid");
  EXPECT_EQ(verify_fixture("honest/l1_07_softmax_config_cache_kwargs.py").status, "valid");
  EXPECT_EQ(verify_fixture("honest/l1_09_matmul_lambda_grid_setdefault.py").status, "valid");
}

TEST(OutputCache, ACacheHoldingATensorThatForwardReturnsIsFlagged) {
  for (const char* f :
       {"cheats/cache_07_shape_dict_holds_grid_and_output.py",
        "cheats/cache_08_shape_cache_buffer_passed_then_returned.py", "cheats/cache_11_update_with_output.py"})
    EXPECT_TRUE(has_rule(verify_fixture(f), "hack.output_cache")) << f;
}

TEST(OutputCache, IntsThatCountCallsOrAFillThatGatesTheLaunchAreFlagged) {
  EXPECT_TRUE(has_rule(verify_fixture("cheats/cache_09_per_shape_call_counter_kernel_arg.py"), "hack.output_cache"));
  EXPECT_TRUE(has_rule(verify_fixture("cheats/cache_10_grid_cache_gates_the_launch.py"), "hack.output_cache"));
}

TEST(OutputCache, AConfigValueComputedFromTensorDataIsFlagged) {
  std::string code = read_file(testing::fixture("verify/honest/l1_01_relu_grid_cache_by_shape.py"));
  const std::string grid = "(triton.cdiv(n, BLOCK),)";
  ASSERT_NE(code.find(grid), std::string::npos);
  EXPECT_EQ(verify_code(code).status, "valid");
  // A grid from the input's values (x.sum().item()) is data kept across calls.
  code.replace(code.find(grid), grid.size(), "(int(x.max().item()),)");
  EXPECT_TRUE(has_rule(verify_code(code), "hack.output_cache")) << to_json(verify_code(code)).dump();
}

TEST(OutputCache, AGridReadAnywhereElseThanALaunchIsFlagged) {
  std::string code = read_file(testing::fixture("verify/honest/l1_01_relu_grid_cache_by_shape.py"));
  const std::string ret = "        return out\n";
  ASSERT_NE(code.find(ret), std::string::npos);
  code.replace(code.find(ret), ret.size(), "        return out, self._grids[key]\n");
  EXPECT_TRUE(has_rule(verify_code(code), "hack.output_cache"));
}

// Kernels defined below the top level.

TEST(NestedKernels, AKernelInForwardUnderAnIfOrFromAFactoryCountsAndItsLaunchesReachForward) {
  for (const char* f : {"honest/l1_01_relu_kernel_defined_in_forward.py", "honest/l1_02_leaky_relu_kernel_under_if.py",
                        "honest/l1_03_gelu_tanh_kernel_factory.py"}) {
    const auto v = verify_fixture(f);
    EXPECT_EQ(v.status, "valid") << f << ": " << to_json(v).dump();
    EXPECT_FALSE(has_rule(v, "syntax.no_kernel")) << f;
    EXPECT_FALSE(has_rule(v, "func.kernel_not_launched")) << f;
  }
}

TEST(NestedKernels, ANestedKernelThatIsNeverLaunchedIsStillADecoy) {
  for (const char* f :
       {"cheats/decoy_09_kernel_in_forward_never_launched.py", "cheats/decoy_10_nested_launcher_never_called.py",
        "cheats/decoy_11_factory_kernel_built_not_launched.py"}) {
    const auto v = verify_fixture(f);
    EXPECT_TRUE(has_rule(v, "func.kernel_not_launched")) << f << ": " << to_json(v).dump();
    EXPECT_FALSE(has_rule(v, "syntax.no_kernel")) << f;
  }
}

TEST(NestedKernels, AKernelAsAClassAttributeIsStillNoModuleKernel) {
  EXPECT_TRUE(has_rule(verify_fixture("cheats/syntax_03_kernel_nested_in_class.py"), "syntax.no_kernel"));
}

TEST(NestedKernels, ANestedKernelsBodyIsTritonNotHostCode) {
  // tl.sum inside a kernel defined in forward is not PyTorch compute, and its locals are no state.
  std::string code = read_file(testing::fixture("verify/honest/l1_01_relu_kernel_defined_in_forward.py"));
  EXPECT_TRUE(verify_code(code).findings.empty()) << to_json(verify_code(code)).dump();
  EXPECT_TRUE(has_rule(verify_fixture("cheats/syntax_11_nested_kernel_without_tl.py"), "syntax.kernel_without_tl"));
}

}  // namespace
}  // namespace tritium

namespace tritium {
namespace {

// One rule for an item, whichever face asks: exactly one of "code" or "response", a string.
TEST(VerifyItem, TakesExactlyOneOfCodeOrResponse) {
  const std::string code = "import torch\n";
  EXPECT_EQ(verify_item(Json{{"code", code}})->status, verify_code(code).status);
  EXPECT_EQ(verify_item(Json{{"response", "no code here"}})->findings.at(0).rule, "syntax.no_code");
  const std::string expected = "expected exactly one of \"code\" or \"response\", a string";
  EXPECT_EQ(verify_item(Json{{"code", code}, {"response", code}}).error().message, expected);
  EXPECT_EQ(verify_item(Json::object()).error().message, expected);
  EXPECT_EQ(verify_item(Json{{"code", 3}}).error().message, expected);
  EXPECT_EQ(verify_item(Json("text")).error().message, expected);
}

}  // namespace
}  // namespace tritium
