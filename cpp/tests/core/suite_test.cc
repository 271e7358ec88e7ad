#include <gtest/gtest.h>

#include "../fixtures.h"
#include "tritium/core.h"

namespace tritium {
namespace {

using testing::fixture;

std::vector<std::string> ids(const Suite& suite) {
  std::vector<std::string> out;
  for (const auto& t : suite.tasks) out.push_back(t.id);
  return out;
}

TEST(DirectorySuite, IsRecursiveSortedAndIdsAreRelativePathsWithoutPy) {
  auto suite = load_suite(fixture("suites/tree"));
  ASSERT_TRUE(suite) << suite.error().message;
  EXPECT_EQ(ids(*suite), (std::vector<std::string>{"level1/a_neg", "level1/b_abs", "level2/nested/c_square"}));
  EXPECT_TRUE(suite->problems.empty());
}

TEST(DirectorySuite, SkipsCachesHiddenEntriesPackageMarkersAndOtherFiles) {
  auto suite = load_suite(fixture("suites/tree"));
  ASSERT_TRUE(suite);
  for (const auto& t : suite->tasks) {
    EXPECT_EQ(t.id.find("__pycache__"), std::string::npos);
    EXPECT_EQ(t.id.find(".hidden"), std::string::npos);
    EXPECT_NE(t.id, "__init__");
  }
}

TEST(DirectorySuite, KeepsSourceAndOrigin) {
  auto suite = load_suite(fixture("suites/tree"));
  ASSERT_TRUE(suite);
  const Task& t = suite->tasks.front();
  EXPECT_NE(t.source.find("class Model"), std::string::npos);
  EXPECT_EQ(std::filesystem::path(t.origin), fixture("suites/tree") / "level1/a_neg.py");
}

TEST(DirectorySuite, TakesLevelFromALevelNComponent) {
  auto suite = load_suite(fixture("suites/tree"));
  ASSERT_TRUE(suite);
  EXPECT_EQ(suite->tasks[0].level, 1);
  EXPECT_EQ(suite->tasks[2].level, 2);
}

TEST(DirectorySuite, TakesLevelFromTheSuiteRootItself) {
  auto suite = load_suite(fixture("suites/tree/level2"));
  ASSERT_TRUE(suite);
  ASSERT_EQ(ids(*suite), (std::vector<std::string>{"nested/c_square"}));
  EXPECT_EQ(suite->tasks[0].level, 2);
}

TEST(FileSuite, IsOneTaskNamedAfterTheFile) {
  auto suite = load_suite(fixture("suites/tree/level1/b_abs.py"));
  ASSERT_TRUE(suite);
  ASSERT_EQ(ids(*suite), (std::vector<std::string>{"b_abs"}));
  EXPECT_EQ(suite->tasks[0].level, 1);
}

TEST(JsonlSuite, KeepsGoodLinesInOrderWithLevelAndMeta) {
  auto suite = load_suite(fixture("suites/mixed.jsonl"));
  ASSERT_TRUE(suite);
  ASSERT_EQ(ids(*suite), (std::vector<std::string>{"neg", "plain"}));
  EXPECT_EQ(suite->tasks[0].level, 1);
  EXPECT_EQ(suite->tasks[0].meta["difficulty"], 1);
  EXPECT_FALSE(suite->tasks[1].level.has_value());
  EXPECT_TRUE(suite->tasks[1].origin.ends_with("mixed.jsonl:8"));
}

TEST(JsonlSuite, ReportsEachBadLineWithItsNumberAndReason) {
  auto suite = load_suite(fixture("suites/mixed.jsonl"));
  ASSERT_TRUE(suite);
  ASSERT_EQ(suite->problems.size(), 5u);
  auto has = [&](const std::string& line, const std::string& words) {
    for (const auto& p : suite->problems)
      if (p.origin.ends_with(":" + line) && p.message.find(words) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("3", "not valid JSON"));
  EXPECT_TRUE(has("4", "missing \"id\""));
  EXPECT_TRUE(has("5", "duplicate id \"neg\""));
  EXPECT_TRUE(has("6", "\"level\" must be an integer"));
  EXPECT_TRUE(has("7", "expected a JSON object"));
}

TEST(JsonlSuite, ParsesFromMemoryWithoutTrailingNewlineOrWithCrlf) {
  auto suite = parse_jsonl_suite("{\"id\":\"a\",\"source\":\"x\"}\r\n{\"id\":\"b\",\"source\":\"y\"}", "mem");
  EXPECT_EQ(ids(suite), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(suite.problems.empty());
}

TEST(LoadSuite, MissingPathNamesThePathAndTheFix) {
  auto suite = load_suite(fixture("does/not/exist"));
  ASSERT_FALSE(suite);
  EXPECT_NE(suite.error().message.find("does/not/exist"), std::string::npos);
  EXPECT_NE(suite.error().message.find("pass a task .py file"), std::string::npos);
}

TEST(LoadSuite, RejectsUnknownFileKinds) {
  auto suite = load_suite(fixture("suites/tree/notes.txt"));
  ASSERT_FALSE(suite);
  EXPECT_NE(suite.error().message.find("unknown suite format"), std::string::npos);
}

TEST(LevelFromPath, ReadsOnlyWholeLevelNComponents) {
  EXPECT_EQ(level_from_path("level3/x.py"), 3);
  EXPECT_EQ(level_from_path("a/level12/b"), 12);
  EXPECT_EQ(level_from_path("levelx/x.py"), std::nullopt);
  EXPECT_EQ(level_from_path("level/x.py"), std::nullopt);
  EXPECT_EQ(level_from_path("mylevel1/x.py"), std::nullopt);
}

TEST(TaskJson, HasIdOriginLevelMetaAndSourceOnRequest) {
  Task t{"a", "src", "a.py", 2, Json{{"k", 1}}};
  const Json j = to_json(t);
  EXPECT_EQ(j["id"], "a");
  EXPECT_EQ(j["level"], 2);
  EXPECT_FALSE(j.contains("source"));
  EXPECT_EQ(to_json(t, true)["source"], "src");
}

}  // namespace
}  // namespace tritium
