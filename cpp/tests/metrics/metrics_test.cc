// Metrics and reports against hand-computed values and the exact pass@k formula.
#include "tritium/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

namespace tritium {
namespace {

// C(n, k) exactly in floating point for small n.
double choose(int n, int k) {
  if (k < 0 || k > n) return 0;
  double r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

Verdict verdict(const std::string& task, const std::string& status, std::optional<double> eager = std::nullopt,
                std::optional<double> compile = std::nullopt) {
  Verdict v;
  v.task_id = task;
  v.status = status;
  v.correct = status == "correct";
  v.speedup_eager = eager;
  v.speedup_compile = compile;
  return v;
}

TEST(PassAtK, MatchesTheCombinatorialFormula) {
  for (int n = 1; n <= 20; ++n)
    for (int c = 0; c <= n; ++c)
      for (int k = 1; k <= n; ++k)
        EXPECT_NEAR(pass_at_k(n, c, k), 1.0 - choose(n - c, k) / choose(n, k), 1e-12) << n << " " << c << " " << k;
  EXPECT_EQ(pass_at_k(10, 0, 5), 0.0);
  EXPECT_EQ(pass_at_k(10, 10, 1), 1.0);
  EXPECT_DOUBLE_EQ(pass_at_k(10, 3, 1), 0.3);
  EXPECT_NEAR(pass_at_k(200, 7, 100), 1.0 - choose(193, 100) / choose(200, 100), 1e-9);  // no overflow
}

TEST(Metrics, PassFastAndSpeedupsByHand) {
  // Task a: 2 samples, both correct (2x, 0.5x). Task b: 2 samples, one correct (4x), one incorrect.
  std::vector<Verdict> vs{verdict("a", "correct", 2.0, 1.0), verdict("a", "correct", 0.5, 0.25),
                          verdict("b", "correct", 4.0, 2.0), verdict("b", "incorrect")};
  MetricsOptions o;
  o.ks = {1, 2, 5};
  o.ps = {0.0, 1.0};
  const Metrics m = compute_metrics(vs, o);
  const Summary& s = m.overall;
  EXPECT_EQ(s.samples, 4u);
  ASSERT_EQ(s.tasks.size(), 2u);
  ASSERT_EQ(s.pass.size(), 3u);
  EXPECT_DOUBLE_EQ(*s.pass[0].value, (1.0 + 0.5) / 2);  // pass@1
  EXPECT_DOUBLE_EQ(*s.pass[1].value, 1.0);              // pass@2: b has a correct one
  EXPECT_FALSE(s.pass[2].value);                        // pass@5: no task has 5 samples
  // fast_1@1 (eager): a 1 of 2, b 1 of 2 -> 0.5; fast_1@2: both tasks -> 1.
  auto at = [](const std::vector<AtK>& l, double p, int k) {
    for (const auto& a : l)
      if (a.p == p && a.k == k) return a.value;
    return std::optional<double>();
  };
  EXPECT_DOUBLE_EQ(*at(s.fast_eager, 1.0, 1), 0.5);
  EXPECT_DOUBLE_EQ(*at(s.fast_eager, 1.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(*at(s.fast_eager, 0.0, 1), 0.75);  // fast_0 = correct (and timed)
  // compile: a 0 of 2 faster than 1x (1.0 is not > 1), b 1 of 2.
  EXPECT_DOUBLE_EQ(*at(s.fast_compile, 1.0, 1), (0.0 + 0.5) / 2);
  // Speedups over correct: 2, 0.5, 4 -> geomean 4^(1/3)... = (2*0.5*4)^(1/3) = 4^(1/3).
  EXPECT_NEAR(*s.correct_eager.geomean, std::cbrt(4.0), 1e-12);
  EXPECT_NEAR(*s.correct_eager.mean, 6.5 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(*s.correct_eager.median, 2.0);
  // Over all, the incorrect sample counts as 1x.
  EXPECT_NEAR(*s.all_eager.geomean, std::pow(4.0, 0.25), 1e-12);
  EXPECT_NEAR(*s.all_eager.mean, 7.5 / 4, 1e-12);
  EXPECT_TRUE(s.timed);
}

TEST(Metrics, UntimedRunsHaveNoFastOrSpeedup) {
  std::vector<Verdict> vs{verdict("a", "correct"), verdict("a", "runtime_error")};
  const Summary s = compute_metrics(vs).overall;
  EXPECT_FALSE(s.timed);
  for (const auto& a : s.fast_eager) EXPECT_FALSE(a.value);
  EXPECT_FALSE(s.correct_eager.geomean);
  EXPECT_FALSE(s.all_eager.geomean);
  EXPECT_DOUBLE_EQ(*s.pass[0].value, 0.5);
}

TEST(Metrics, FastPCreditsASpeedupBelowTheTimingFloorWithOneAtMost) {
  // Task a: correct at 2x, but timed below the floor against eager (host-bound: noise), and at 3x
  // against compile above it; a 0.5x below the floor: a slowdown stands. Task b: 1.5x, above it.
  std::vector<Verdict> v{verdict("a", "correct", 2.0, 3.0), verdict("a", "correct", 0.5, 0.5),
                         verdict("b", "correct", 1.5, 1.2)};
  v[0].below_timing_floor = v[1].below_timing_floor = true;
  v[1].compile_below_timing_floor = true;
  MetricsOptions o;
  o.ks = {1};
  o.ps = {0.0, 1.0};
  const Summary s = compute_metrics(v, o).overall;
  auto at = [](const std::vector<AtK>& l, double p) {
    for (const auto& a : l)
      if (a.p == p && a.k == 1) return *a.value;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(at(s.fast_eager, 0.0), 1.0);                  // correct and timed: all of them
  EXPECT_DOUBLE_EQ(at(s.fast_eager, 1.0), (0.0 + 1.0) / 2);      // only b's 1.5x is faster
  EXPECT_DOUBLE_EQ(at(s.fast_compile, 1.0), (0.5 + 1.0) / 2);    // a's 3x against compile stands
  EXPECT_DOUBLE_EQ(*fast_curve(s, {1.0}, false)[0].value, 0.5);  // the curve agrees
  EXPECT_EQ(s.below_floor_eager, 2u);
  EXPECT_EQ(s.below_floor_compile, 1u);
  EXPECT_DOUBLE_EQ(*s.correct_eager.max, 2.0);  // the speedups as measured stay in the summaries
}

TEST(Metrics, StagesStatusesRulesAndLevels) {
  std::vector<Verdict> vs{verdict("level1/1_relu", "invalid_syntax"),
                          verdict("level1/1_relu", "hack"),
                          verdict("level2/3_fused", "invalid_functionality"),
                          verdict("level2/3_fused", "timeout"),
                          verdict("x", "compile_error"),
                          verdict("x", "error")};
  vs[1].findings.push_back({"hack.try_fallback", "error", 3, 0, "m"});
  vs[1].findings.push_back({"hack.try_fallback", "error", 9, 0, "m"});  // one sample counts once
  vs[1].findings.push_back({"style.thing", "warning", 1, 0, "m"});      // warnings do not count
  vs[2].findings.push_back({"func.torch_compute:matmul", "error", 4, 0, "m"});
  vs[2].level = 7;  // an explicit level wins over the path
  const Metrics m = compute_metrics(vs);
  const Summary& s = m.overall;
  EXPECT_EQ(s.stages.at("syntax"), 1u);
  EXPECT_EQ(s.stages.at("functionality"), 2u);  // invalid_functionality and hack
  EXPECT_EQ(s.stages.at("runtime"), 1u);        // timeout
  EXPECT_EQ(s.stages.at("compile"), 1u);
  EXPECT_EQ(s.stages.at("error"), 1u);
  EXPECT_EQ(s.stages.at("correct"), 0u);
  EXPECT_EQ(s.statuses.at("hack"), 1u);
  EXPECT_EQ(s.statuses.at("correct"), 0u);  // every status is listed
  EXPECT_EQ(s.rules.at("hack.try_fallback"), 1u);
  EXPECT_EQ(s.rules.count("style.thing"), 0u);
  ASSERT_EQ(m.levels.size(), 3u);
  EXPECT_EQ(m.levels.at(1).samples, 2u);
  EXPECT_EQ(m.levels.at(2).samples, 1u);
  EXPECT_EQ(m.levels.at(7).samples, 1u);
}

TEST(Metrics, PassCurveIsMonotone) {
  std::vector<Verdict> vs;
  for (int i = 0; i < 8; ++i) vs.push_back(verdict("a", i % 3 == 0 ? "correct" : "incorrect"));
  for (int i = 0; i < 4; ++i) vs.push_back(verdict("b", i == 3 ? "correct" : "incorrect"));
  const auto curve = pass_curve(compute_metrics(vs).overall);
  ASSERT_EQ(curve.size(), 4u);  // up to b's 4 samples, so each point averages both tasks
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(curve[i].tasks, 2u);
  for (std::size_t i = 1; i < 4; ++i) EXPECT_GE(*curve[i].value, *curve[i - 1].value);
  EXPECT_DOUBLE_EQ(*curve[3].value, (pass_at_k(8, 3, 4) + 1.0) / 2);
  EXPECT_DOUBLE_EQ(*curve[0].value, (3.0 / 8 + 1.0 / 4) / 2);
}

TEST(Metrics, FastCurveIsTheShareOfEachTasksSamplesPastEachThreshold) {
  // Task a: 3 samples, correct at 1.5x and 3x (compile 0.5x, 2x); task b: 1 sample, correct at 0.8x.
  const std::vector<Verdict> v{verdict("a", "correct", 1.5, 0.5), verdict("a", "correct", 3.0, 2.0),
                               verdict("a", "incorrect"), verdict("b", "correct", 0.8, 0.9)};
  const Summary s = compute_metrics(v).overall;
  const auto eager = fast_curve(s, {0, 1, 2, 4}, false), compile = fast_curve(s, {0, 1, 2, 4}, true);
  EXPECT_DOUBLE_EQ(*eager[0].value, (2.0 / 3 + 1) / 2);  // p = 0: the correct share per task
  EXPECT_DOUBLE_EQ(*eager[1].value, (2.0 / 3 + 0) / 2);
  EXPECT_DOUBLE_EQ(*eager[2].value, (1.0 / 3 + 0) / 2);
  EXPECT_DOUBLE_EQ(*eager[3].value, 0.0);
  EXPECT_DOUBLE_EQ(*compile[1].value, (1.0 / 3) / 2);
  EXPECT_DOUBLE_EQ(eager[2].p, 2.0);
  // fast_p@1 at the configured thresholds is the same number.
  for (const auto& a : s.fast_eager)
    if (a.k == 1 && a.p == 1.0) EXPECT_DOUBLE_EQ(*a.value, *eager[1].value);
  const std::vector<Verdict> untimed{verdict("a", "correct")};
  EXPECT_FALSE(fast_curve(compute_metrics(untimed).overall, {1.0}, false)[0].value);
}

TEST(Bootstrap, IntervalOfAMeanOverTasks) {
  EXPECT_FALSE(bootstrap_mean(std::vector<double>{}));
  const auto flat = bootstrap_mean(std::vector<double>(30, 0.25));
  ASSERT_TRUE(flat);
  EXPECT_DOUBLE_EQ(flat->low, 0.25);
  EXPECT_DOUBLE_EQ(flat->high, 0.25);
  // Seeded: the same values give the same interval; another seed, another draw.
  const std::vector<double> xs{0, 1, 0, 0, 1, 1, 0, 0.5, 0.25, 1};
  EXPECT_EQ(bootstrap_mean(xs)->low, bootstrap_mean(xs)->low);
  EXPECT_EQ(bootstrap_mean(xs)->high, bootstrap_mean(xs)->high);
  EXPECT_LE(bootstrap_mean(xs)->low, 0.475);
  EXPECT_GE(bootstrap_mean(xs)->high, 0.475);
  // Coverage: over 300 sets of 100 tasks drawn with a true pass@1 of 0.3, the 95% interval holds
  // the truth about 95% of the time (binomial spread of 300 draws: about +-2.5%).
  std::mt19937_64 rng(7);
  int held = 0;
  double width_100 = 0;
  for (int set = 0; set < 300; ++set) {
    std::vector<double> tasks(100);
    for (double& t : tasks) t = (rng() % 1000) < 300 ? 1.0 : 0.0;
    const auto i = bootstrap_mean(tasks, 1000, set);
    held += i->low <= 0.3 && 0.3 <= i->high;
    width_100 += (i->high - i->low) / 300;
  }
  EXPECT_GE(held, 270);
  EXPECT_LE(held, 297);
  EXPECT_NEAR(width_100, 2 * 1.96 * std::sqrt(0.3 * 0.7 / 100), 0.02);  // the normal approximation's width
}

TEST(Bootstrap, PairedChangeOnCommonTasks) {
  // 40 tasks of 4 samples: before, task i has i % 4 correct; after, one more where it had 0 to 2.
  std::vector<Verdict> before, after;
  for (int i = 0; i < 40; ++i) {
    const std::string id = "t" + std::to_string(i);
    const int c = i % 4, c_after = c < 3 ? c + 1 : c;
    for (int j = 0; j < 4; ++j) {
      before.push_back(verdict(id, j < c ? "correct" : "incorrect", j < c ? std::optional(2.0) : std::nullopt));
      after.push_back(
          verdict(id, j < c_after ? "correct" : "incorrect", j < c_after ? std::optional(2.0) : std::nullopt));
    }
  }
  after.push_back(verdict("only-after", "correct", 2.0));  // not in both runs: left out
  MetricsOptions o;
  o.ks = {1, 8};
  o.ps = {1.0};
  const auto changes = compare_runs(compute_metrics(before, o).overall, compute_metrics(after, o).overall, o);
  ASSERT_EQ(changes.size(), 3u);  // pass@1, pass@8, fast_1@1 (eager)
  EXPECT_EQ(changes[0].metric, "pass@1");
  EXPECT_EQ(changes[0].tasks, 40u);
  EXPECT_DOUBLE_EQ(changes[0].before, 1.5 / 4);
  EXPECT_DOUBLE_EQ(changes[0].delta, 0.75 / 4);  // three of every four tasks gained a quarter
  EXPECT_TRUE(changes[0].beyond());
  EXPECT_GT(changes[0].interval->low, 0);
  EXPECT_EQ(changes[1].tasks, 0u);  // no task has 8 samples
  EXPECT_FALSE(changes[1].interval);
  EXPECT_FALSE(changes[1].beyond());
  EXPECT_EQ(changes[2].metric, "fast_1@1 (eager)");
  EXPECT_DOUBLE_EQ(changes[2].delta, 0.75 / 4);
  // The same run against itself: no change, an interval of [0, 0], not beyond it.
  const auto same = compare_runs(compute_metrics(before, o).overall, compute_metrics(before, o).overall, o);
  EXPECT_DOUBLE_EQ(same[0].delta, 0);
  EXPECT_FALSE(same[0].beyond());
  // A change on a few tasks, against noise: one task of 40 gains, the interval reaches 0.
  auto one = before;
  for (int j = 0; j < 4; ++j) one[j] = verdict("t0", "correct");
  const auto small = compare_runs(compute_metrics(before, o).overall, compute_metrics(one, o).overall, o);
  EXPECT_GT(small[0].delta, 0);
  EXPECT_FALSE(small[0].beyond());
  // An untimed run: pass@k only.
  std::vector<Verdict> cpu{verdict("t0", "correct")};
  EXPECT_EQ(compare_runs(compute_metrics(before, o).overall, compute_metrics(cpu, o).overall, o).size(), 2u);
}

TEST(Report, ThreeFormsOfTwoRuns) {
  std::vector<Verdict> a{verdict("level1/1_relu", "correct", 1.5), verdict("level1/1_relu", "incorrect"),
                         verdict("level1/2_x", "incorrect"), verdict("level1/2_x", "correct", 3.0)};
  std::vector<Verdict> b{verdict("level1/1_relu", "hack"), verdict("level1/1_relu", "hack"),
                         verdict("level1/2_x", "correct", 0.9), verdict("level1/2_x", "correct", 1.1)};
  b[0].findings.push_back({"hack.monkeypatch", "error", 1, 0, "m"});
  std::vector<RunReport> runs{{"base<&>", "a.jsonl", compute_metrics(a)}, {"tuned", "b.jsonl", compute_metrics(b)}};
  const std::string md = report_markdown(runs);
  EXPECT_NE(md.find("| metric | base<&> | tuned |"), std::string::npos);
  EXPECT_NE(md.find("| pass@1 | 50.0% | 50.0% |"), std::string::npos);
  EXPECT_NE(md.find("## Level 1"), std::string::npos);
  EXPECT_NE(md.find("| hack.monkeypatch | 0 | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| fast_1@1 (eager) | 50.0% | 25.0% |"), std::string::npos);
  EXPECT_NE(md.find("| pass@1, 95% interval over tasks | [50.0%, 50.0%] | [0.0%, 100.0%] |"), std::string::npos);
  EXPECT_NE(md.find("## Change from the run before"), std::string::npos);
  EXPECT_NE(md.find("| tuned | base<&> | pass@1 | 2 | 50.0% | 50.0% | +0.0 pts |"), std::string::npos);
  const Json j = report_json(runs);
  EXPECT_EQ(j["changes"][0]["run"], "tuned");
  EXPECT_EQ(j["changes"][0]["against"], "base<&>");
  EXPECT_EQ(j["changes"][0]["change"]["metric"], "pass@1");
  EXPECT_EQ(j["changes"][0]["change"]["tasks"], 2);
  EXPECT_EQ(j["runs"][0]["metrics"]["overall"]["intervals"]["pass"]["pass@1"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["metrics"]["overall"]["stages"]["functionality"], 2);
  EXPECT_EQ(j["runs"][0]["metrics"]["overall"]["pass"]["pass@1"], 0.5);
  EXPECT_TRUE(j["runs"][0]["metrics"]["overall"]["pass"]["pass@5"].is_null());
  const std::string html = report_html(runs);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // self-contained, no scripts
  EXPECT_EQ(html.find("base<&>"), std::string::npos);  // names are escaped
  EXPECT_NE(html.find("base&lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"status breakdown\""), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"pass@k\""), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"speedups vs eager\""), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"fast_p\""), std::string::npos);
  EXPECT_NE(html.find("k (samples per task)"), std::string::npos);  // labelled axes
  EXPECT_NE(html.find(">samples</text>"), std::string::npos);
  EXPECT_NE(html.find("<h2>Per task</h2>"), std::string::npos);
  EXPECT_NE(html.find("<h2>Change from the run before</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td>tuned</td><td>base&lt;&amp;&gt;</td><td>pass@1</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>level1/2_x</td><td class=n>2</td><td class=n>1</td><td class=n>3.000x</td>"),
            std::string::npos);
  EXPECT_NE(md.find("| tuned | level1/2_x | 2 | 2 | 1.100x | - |"), std::string::npos);
  // Each stacked segment wide enough for it carries its count: base's 2 correct of 4.
  EXPECT_NE(html.find("style=\"fill:#fff\">2</text>"), std::string::npos);
  // One sample per task: no curve to draw, and no speedups on a CPU run.
  std::vector<Verdict> cpu{verdict("t", "correct")};
  std::vector<RunReport> one{{"cpu", "c.jsonl", compute_metrics(cpu)}};
  const std::string plain = report_html(one);
  EXPECT_NE(plain.find("only pass@1"), std::string::npos);
  EXPECT_NE(plain.find("speedups are measured on a GPU only"), std::string::npos);
  EXPECT_EQ(report_markdown(one).find("fast_"), std::string::npos);  // untimed: no speed rows
}

// The report workflow: runs named by file stem, by folder where two share one; a missing or empty
// file is an error naming it.
TEST(MakeReport, NamesRunsByStemThenFolderAndWritesTheThreeFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "tritium-make-report-test";
  std::filesystem::remove_all(dir);
  for (const char* run : {"sft", "rl"}) {
    std::filesystem::create_directories(dir / run);
    std::ofstream(dir / run / "verdicts.jsonl") << to_json(verdict("a", "correct")).dump() << "\n"
                                                << to_json(verdict("b", "incorrect")).dump() << "\n{torn\n";
  }
  auto o = report_options_from_json(
      Json{{"verdicts", {(dir / "sft/verdicts.jsonl").string(), (dir / "rl/verdicts.jsonl").string()}},
           {"out", (dir / "report").string()},
           {"ks", {1}}});
  ASSERT_TRUE(o) << o.error().message;
  std::vector<std::string> warnings;
  auto runs = make_report(*o, [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_TRUE(runs) << runs.error().message;
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].name, "sft/verdicts");
  EXPECT_EQ((*runs)[1].name, "rl/verdicts");
  EXPECT_EQ((*runs)[0].problems, 1u);
  EXPECT_EQ(warnings.size(), 2u);
  for (const char* file : {"report.md", "report.json", "report.html"})
    EXPECT_TRUE(std::filesystem::exists(dir / "report" / file));
  std::ofstream(dir / "empty.jsonl") << "";
  o->verdicts = {(dir / "empty.jsonl").string()};
  EXPECT_NE(make_report(*o).error().message.find("empty.jsonl: no verdicts"), std::string::npos);
  EXPECT_EQ(report_options_from_json(Json{{"out", "x"}}).error().message, "report options: \"verdicts\" names no file");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tritium
