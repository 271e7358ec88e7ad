// The reference check against a real runner (python -m tritium.runner with torch), on the broken
// task fixtures: each kind of breakage is reported with its stage, and the rest still runs.
#include <gtest/gtest.h>

#include <map>

#include "../fixtures.h"
#include "tritium/exec.h"

namespace tritium {
namespace {

using testing::fixture;

class BrokenSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto suite = load_suite(fixture("broken_tasks"));
    ASSERT_TRUE(suite);
    RunnerOptions options;
    options.timeout_s = 4;
    auto check = check_suite(*suite, options);
    ASSERT_TRUE(check) << check.error().message;
    for (auto& t : check->tasks) results_[t.task_id] = t;
    check_ = new SuiteCheck(std::move(*check));
  }
  static void TearDownTestSuite() { delete check_; }

  const TaskCheck& result(const std::string& id) {
    EXPECT_TRUE(results_.count(id)) << id;
    return results_[id];
  }
  static bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }

  static inline std::map<std::string, TaskCheck> results_;
  static inline SuiteCheck* check_ = nullptr;
};

TEST_F(BrokenSuite, ChecksEveryTaskAndCountsTheBrokenOnes) {
  ASSERT_NE(check_, nullptr);
  EXPECT_EQ(check_->tasks.size(), 8u);
  EXPECT_EQ(check_->failed(), 6u);
}

TEST_F(BrokenSuite, SyntaxErrorNamesFileAndLine) {
  const auto& r = result("syntax_error");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stage, "load");
  EXPECT_TRUE(contains(r.error, "syntax_error.py:6: does not parse: SyntaxError")) << r.error;
}

TEST_F(BrokenSuite, MissingGetInputsIsNamed) {
  const auto& r = result("missing_get_inputs");
  EXPECT_EQ(r.stage, "load");
  EXPECT_TRUE(contains(r.error, "missing_get_inputs.py: missing get_inputs()")) << r.error;
}

TEST_F(BrokenSuite, ExceptionInForwardNamesTheLine) {
  const auto& r = result("raises_in_forward");
  EXPECT_EQ(r.stage, "forward");
  EXPECT_TRUE(contains(r.error, "raises_in_forward.py:8: forward raised: RuntimeError")) << r.error;
}

TEST_F(BrokenSuite, NonTensorOutputIsNamed) {
  const auto& r = result("non_tensor_output");
  EXPECT_EQ(r.stage, "output");
  EXPECT_TRUE(contains(r.error, "forward returned float; expected a tensor")) << r.error;
}

TEST_F(BrokenSuite, HangIsKilledAtTheTimeout) {
  const auto& r = result("hangs");
  EXPECT_EQ(r.stage, "timeout");
  EXPECT_TRUE(contains(r.error, "timed out")) << r.error;
  EXPECT_GE(r.wall_ms, 4000);
  EXPECT_LT(r.wall_ms, 30000);
}

TEST_F(BrokenSuite, AProcessThatExitsIsACrashNotTheEndOfTheRun) {
  const auto& r = result("exits_process");
  EXPECT_EQ(r.stage, "crash");
  EXPECT_TRUE(contains(r.error, "exit code 7")) << r.error;
}

TEST_F(BrokenSuite, HealthyTasksRunAndTheirPrintsDoNotBreakTheProtocol) {
  const auto& r = result("ok_square");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(to_string(r.outputs[0]), "float32[4, 8]");
  EXPECT_TRUE(contains(r.output_tail, "noise on stdout")) << r.output_tail;
}

TEST_F(BrokenSuite, TheRunnerRestartsAfterATimeout) {
  const auto& r = result("ok_two_outputs");  // sorted after "hangs"
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.inputs.size(), 2u);
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(to_string(r.outputs[1]), "float32[2, 3]");
}

TEST(CheckSuite, AMissingInterpreterIsOneErrorThatSaysHowToFixIt) {
  Suite suite{"s", {Task{"t", "x = 1", "t.py", std::nullopt, Json::object()}}, {}};
  RunnerOptions options;
  options.python = "/no/such/python3";
  auto check = check_suite(suite, options);
  ASSERT_FALSE(check);
  EXPECT_NE(check.error().message.find("TRITIUM_PYTHON"), std::string::npos) << check.error().message;
}

TEST(CheckSuite, AnInterpreterWithoutTheRunnerIsNamed) {
  Suite suite{"s", {Task{"t", "x = 1", "t.py", std::nullopt, Json::object()}}, {}};
  RunnerOptions options;
  options.python = "/bin/false";
  auto check = check_suite(suite, options);
  ASSERT_FALSE(check);
  EXPECT_NE(check.error().message.find("did not start"), std::string::npos) << check.error().message;
}

TEST(CheckSuite, KeepsTheSuiteProblemsAsFailures) {
  auto suite = load_suite(fixture("suites/mixed.jsonl"));
  ASSERT_TRUE(suite);
  auto check = check_suite(*suite, RunnerOptions{});
  ASSERT_TRUE(check) << check.error().message;
  EXPECT_EQ(check->tasks.size(), 2u);
  EXPECT_EQ(check->failed(), 5u);
  const Json j = to_json(*check);
  EXPECT_EQ(j["summary"]["total"], 7);
  EXPECT_EQ(j["summary"]["ok"], 2);
}

}  // namespace
}  // namespace tritium
