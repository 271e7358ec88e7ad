// Runners started side by side (Runner::start_together, how the engine warms a slot's runners):
// real `python -m tritium.runner` processes, each of which answers afterwards; one that cannot
// start keeps none of the others from starting and reports its error at its first use.
#include "../../src/exec/runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace tritium::exec {
namespace {

bool answers(Runner& runner) {
  const Reply reply = runner.call({{"op", "no_such_op"}}, 60);
  return reply.kind == Reply::Kind::ok &&
         reply.body.value("error", std::string()).find("not served") != std::string::npos;
}

TEST(RunnerStart, RunnersStartedTogetherEachAnswer) {
  Runner a{RunnerOptions{}}, b{RunnerOptions{}};
  Runner::start_together({&a, &b});
  EXPECT_TRUE(a.hello().value("ok", false));
  EXPECT_TRUE(b.hello().value("ok", false));
  EXPECT_TRUE(answers(a));
  EXPECT_TRUE(answers(b));
  EXPECT_FALSE(a.ensure_started()) << "already running: nothing to start";
  EXPECT_TRUE(answers(a));
}

TEST(RunnerStart, OneThatCannotStartLeavesTheOthersRunningAndSaysWhyLater) {
  RunnerOptions broken;
  broken.python = "/bin/false";
  Runner bad{broken}, good{RunnerOptions{}};
  Runner::start_together({&bad, &good});
  EXPECT_TRUE(answers(good));
  const auto error = bad.ensure_started();
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("did not start"), std::string::npos) << error->message;
}

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

TEST(RunnerEnvironment, AGpuRunnerGetsOneWorkQueueUnlessTheCallerChoseACount) {
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  EXPECT_TRUE(has(runner_environment("cuda"), "CUDA_DEVICE_MAX_CONNECTIONS=1"));
  EXPECT_FALSE(has(runner_environment("cpu"), "CUDA_DEVICE_MAX_CONNECTIONS=1"));
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 1);
  const auto env = runner_environment("cuda");
  EXPECT_TRUE(has(env, "CUDA_DEVICE_MAX_CONNECTIONS=8"));
  EXPECT_FALSE(has(env, "CUDA_DEVICE_MAX_CONNECTIONS=1"));
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}

}  // namespace
}  // namespace tritium::exec
