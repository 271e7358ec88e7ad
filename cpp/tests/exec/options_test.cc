// EngineOptions from JSON: the face Python and the workflows use; a typo or a bad value is refused.
#include <gtest/gtest.h>

#include "tritium/exec.h"

namespace tritium {
namespace {

TEST(EngineOptionsFromJson, RoundTripsEveryField) {
  EngineOptions o;
  o.device = "cpu";
  o.trials = 7;
  o.seed = 42;
  o.timing = false;
  o.keep_files = true;
  o.memory_gb = 2.5;
  o.device_memory_gb = 24;
  o.timer_gather_s = 0.25;
  o.lazy_reference_timing = true;
  auto back = engine_options_from_json(to_json(o));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(to_json(*back), to_json(o));
}

TEST(EngineOptionsFromJson, RefusesTyposWrongTypesAndBadValues) {
  EXPECT_EQ(engine_options_from_json(Json{{"trails", 5}}).error().message.substr(0, 42),
            "engine options: unknown option \"trails\" (k");
  EXPECT_EQ(engine_options_from_json(Json{{"jobs", "4"}}).error().message,
            "engine options: \"jobs\" must be a whole number, not \"4\"");
  EXPECT_EQ(engine_options_from_json(Json{{"device", "gpu"}}).error().message,
            "engine options: device 'gpu' is none of cpu, cuda, cuda:N (N a GPU's index) or auto");
  EXPECT_TRUE(engine_options_from_json(Json{{"seed", nullptr}}));  // null: drawn afresh
  EXPECT_EQ(engine_options_from_json(Json{{"timer_gather_s", -1}}).error().message,
            "engine options: timer_gather_s -1 s: it must be at least 0");
  EXPECT_TRUE(engine_options_from_json(Json{{"timer_gather_s", 0}}));  // close at once
  EXPECT_EQ(engine_options_from_json(Json{{"device_memory_gb", -2}}).error().message,
            "engine options: device_memory_gb -2: it must be at least 0 (0: most of the free memory)");
  // The default beside a short limit (the timer's own wait bounds its gathering).
  EXPECT_TRUE(engine_options_from_json(Json{{"timeout_s", 0.05}}));
}

}  // namespace
}  // namespace tritium
