#include "../../src/exec/judge.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tritium::exec {
namespace {

Json timing(double eager_ms, double compile_ms) {
  return {{"eager", {{"median_ms", eager_ms}}},
          {"compile", {{"median_ms", compile_ms}}},
          {"phases_ms", {{"compile", 5200.0}, {"lock_wait", 900.0}, {"exclusive", 1500.0}}}};
}

TEST(ApplyReferenceTiming, FillsSpeedupsAndTheTimingsPhasesBesideTheJobs) {
  Verdict v;
  v.runtime_ms = 2.0;
  v.phases_ms = {{"checked", 100.0}};
  apply_reference_timing(timing(3.0, 1.0), v);
  ASSERT_TRUE(v.speedup_eager && v.speedup_compile);
  EXPECT_DOUBLE_EQ(*v.speedup_eager, 1.5);
  EXPECT_DOUBLE_EQ(*v.speedup_compile, 0.5);
  EXPECT_DOUBLE_EQ(v.phases_ms["checked"].get<double>(), 100.0);  // the job's own phases stay
  EXPECT_DOUBLE_EQ(v.phases_ms["reference_timing.exclusive"].get<double>(), 1500.0);
  EXPECT_DOUBLE_EQ(v.phases_ms["reference_timing.lock_wait"].get<double>(), 900.0);
  EXPECT_DOUBLE_EQ(v.phases_ms["reference_timing.compile"].get<double>(), 5200.0);
}

TEST(ApplyReferenceTiming, LeavesAnUntimedVerdictAlone) {
  Verdict v;
  apply_reference_timing(timing(3.0, 1.0), v);
  EXPECT_FALSE(v.speedup_eager);
  EXPECT_TRUE(v.phases_ms.is_null() || v.phases_ms.empty());
}

// A worker's answer and its comparer's for a two-trial plan with one spot set.
struct Judged {
  Json plan = {{"trials", Json::array({{{"index", 0}, {"mode", "train"}}, {{"index", 1}, {"mode", "eval"}}})},
               {"spots", 1}};
  Json trial(int i, const std::string& mode) const {
    return {{"index", i}, {"mode", mode}, {"launches", Json::array({{{"kernel", "k"}}})}};
  }
  Verdict run(const Json& timed, bool second_matches, bool spot_shipped) const {
    const Json worker = {
        {"ok", true}, {"trials", Json::array({trial(0, "train"), trial(1, "eval")})}, {"timed", timed}};
    Json sets = Json::array({{{"kind", "trial"}, {"index", 0}, {"match", true}},
                             {{"kind", "trial"}, {"index", 1}, {"match", second_matches}, {"message", "off by 1"}}});
    if (spot_shipped) sets.push_back({{"kind", "spot"}, {"index", 0}, {"match", true}});
    Verdict v;
    judge(Reply{Reply::Kind::ok, worker, ""}, Reply{Reply::Kind::ok, {{"ok", true}, {"sets", sets}}, ""}, plan, v);
    return v;
  }
};

std::set<std::string> rules(const Verdict& v) {
  std::set<std::string> out;
  for (const auto& f : v.findings) out.insert(f.rule);
  return out;
}

TEST(Judge, AWorkerWhoseCheckedTrialFailedMaySkipItsTimedCalls) {
  const Verdict v = Judged().run({{"skipped", "trial 1: wrong outputs"}}, false, false);
  EXPECT_EQ(v.status, "incorrect");
  EXPECT_EQ(rules(v), std::set<std::string>{"eval.mismatch"});  // no finding for the unshipped spot set
  EXPECT_EQ(v.timing_note, "not timed: the candidate is not correct");
}

TEST(Judge, ASkipClaimedAfterCorrectTrialsLeavesTheSpotSetsMissing) {
  const Verdict v = Judged().run({{"skipped", "trial 1: wrong outputs"}}, true, false);
  EXPECT_EQ(v.status, "incorrect");
  EXPECT_EQ(rules(v), std::set<std::string>{"eval.output"});
}

TEST(Judge, ACorrectCandidateIsJudgedOnItsSpotSetsToo) {
  EXPECT_EQ(Judged().run({{"spot_positions", {7}}}, true, true).status, "correct");
  EXPECT_EQ(rules(Judged().run({{"spot_positions", {7}}}, true, false)), std::set<std::string>{"eval.output"});
}

}  // namespace
}  // namespace tritium::exec
