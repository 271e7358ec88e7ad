// The workflows as library calls: a suite written and read back, SFT data from its reference
// solutions, a sampling run with the emitter that resumes, and their options from JSON.
#include "tritium/workflow.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tritium::workflow {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tritium-workflow-test-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

SuiteOptions small_suite(const fs::path& out) {
  auto o = suite_options_from_json(Json{{"count", 3},
                                        {"difficulty", "1"},
                                        {"ops", "unary"},
                                        {"seed", 4},
                                        {"with_solutions", true},
                                        {"out", out.string()}});
  EXPECT_TRUE(o) << o.error().message;
  return *o;
}

TEST(MakeSuite, WritesWhatLoadSuiteReadsBackInBothLayouts) {
  const fs::path dir = fresh_dir("suite");
  for (const fs::path out : {dir / "tasks.jsonl", dir / "tasks"}) {
    auto run = make_suite(small_suite(out));
    ASSERT_TRUE(run) << run.error().message;
    EXPECT_TRUE(run->ok);
    EXPECT_EQ(run->report["tasks"], 3);
    auto back = load_suite(out);
    ASSERT_TRUE(back);
    ASSERT_EQ(back->tasks.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(back->tasks[i].source, run->tasks[i].source);
      EXPECT_EQ(back->tasks[i].meta, run->tasks[i].meta);
    }
  }
}

TEST(MakeSuite, RefusesBadOptionsBeforeAnyWork) {
  EXPECT_EQ(suite_options_from_json(Json{{"device", "tpu"}}).error().message,
            "suite options: \"device\" must be cpu or cuda, not 'tpu'");
  EXPECT_EQ(suite_options_from_json(Json{{"size", "huge"}}).error().message,
            "synth options: \"size\" must be cpu, mid or gpu, not 'huge'");
  auto o = suite_options_from_json(Json{{"count", 0}});
  ASSERT_TRUE(o);
  EXPECT_EQ(make_suite(*o).error().message, "count must be at least 1");
}

TEST(BuildSftData, KeepsTheVerifiedReferenceTracesAndCountsTheRest) {
  const fs::path dir = fresh_dir("sft");
  ASSERT_TRUE(make_suite(small_suite(dir / "tasks.jsonl")));
  auto o = sft_data_options_from_json(
      Json{{"tasks", (dir / "tasks.jsonl").string()}, {"out", (dir / "sft.jsonl").string()}, {"evaluate", false}});
  ASSERT_TRUE(o) << o.error().message;
  std::vector<std::string> notes;
  auto stats = build_sft_data(*o, {{}, [&](const std::string& line) { notes.push_back(line); }});
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ((*stats)["candidates"].get<int>() + (*stats)["dropped"].value("no_solution", 0), 3);
  EXPECT_GT((*stats)["kept"].get<int>(), 0);
  std::ifstream sft(dir / "sft.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(sft, line)) {
    ++lines;
    // The plan once, in <think>: the solution's docstring that restates it is not in the trace.
    const std::string response = Json::parse(line)["response"].get<std::string>();
    EXPECT_TRUE(response.find("```python\nimport torch\n") != std::string::npos) << response.substr(0, 400);
    EXPECT_EQ(response.find("written by tritium synth"), std::string::npos);
  }
  EXPECT_EQ(lines, (*stats)["kept"].get<int>());
  EXPECT_TRUE(notes.empty());
}

TEST(BuildSftData, AMissingSuiteIsAnInputError) {
  SftDataOptions o;
  o.tasks = "/no/such/suite.jsonl";
  o.out = "/tmp/unused.jsonl";
  auto stats = build_sft_data(o);
  ASSERT_FALSE(stats);
  EXPECT_FALSE(stats.error().environment);
  EXPECT_NE(stats.error().message.find("/no/such/suite.jsonl"), std::string::npos);
}

TEST(SamplingOptions, NeedTheirTasksOutAndModelAndKnowTheEngine) {
  EXPECT_EQ(sampling_options_from_json(Json{{"tasks", "t"}}).error().message,
            "sampling options: \"tasks\", \"out\" and \"model\" are required");
  auto o = sampling_options_from_json(Json{{"tasks", "t"},
                                           {"out", "o"},
                                           {"model", "emitter"},
                                           {"samples", 3},
                                           {"completions", true},
                                           {"model_device", "cpu"},
                                           {"engine", {{"device", "cpu"}, {"trials", 6}}}});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->sample.samples, 3);
  EXPECT_FALSE(o->generator.client.chat);
  EXPECT_EQ(o->generator.server_args, (std::vector<std::string>{"--device", "cpu"}));
  EXPECT_EQ(o->engine.trials, 6);
  EXPECT_EQ(sampling_options_from_json(Json{{"tasks", "t"}, {"out", "o"}, {"model", "m"}, {"engine", {{"trials", 2}}}})
                .error()
                .message,
            "engine options: trials 2 is too few; the protocol needs at least 5");
}

}  // namespace
}  // namespace tritium::workflow
