#include "../../src/exec/judge.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tritium::exec
