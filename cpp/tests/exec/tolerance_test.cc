#include "../../src/exec/tolerance.h"

#include <gtest/gtest.h>

namespace tritium::exec {
namespace {

TEST(Tolerance, ProfilesFollowKernelBenchAndIntegersAreExact) {
  EXPECT_EQ(profile_names(), (std::vector<std::string>{"kernelbench", "strict", "legacy"}));
  const auto tol = [](const char* profile, const char* dtype) { return tolerance_for(profile, dtype).value().atol; };
  EXPECT_EQ(tol("kernelbench", "float32"), 1e-4);
  EXPECT_EQ(tol("kernelbench", "float64"), 1e-4);
  EXPECT_EQ(tol("kernelbench", "float16"), 1e-2);
  EXPECT_EQ(tol("kernelbench", "bfloat16"), 1e-2);
  EXPECT_EQ(tol("strict", "float32"), 1e-5);
  EXPECT_EQ(tol("strict", "float16"), 1e-3);
  EXPECT_EQ(tol("strict", "bfloat16"), 4e-3);
  EXPECT_EQ(tol("legacy", "float32"), 1e-2);
  EXPECT_EQ(tol("legacy", "bfloat16"), 1e-2);
  EXPECT_EQ(tolerance_for("strict", "bfloat16")->rtol, 4e-3);
  for (const auto& p : profile_names())
    for (const char* dtype : {"int64", "int32", "int16", "int8", "uint8", "bool"}) {
      EXPECT_EQ(tolerance_for(p, dtype)->atol, 0) << p << " " << dtype;
      EXPECT_EQ(tolerance_for(p, dtype)->rtol, 0) << p << " " << dtype;
    }
  EXPECT_FALSE(tolerance_for("loose", "float32"));
  EXPECT_FALSE(tolerance_for("kernelbench", "complex64"));
}

TEST(Tolerance, DtypeSizesAndUnknownDtypes) {
  EXPECT_EQ(dtype_size("float64"), 8u);
  EXPECT_EQ(dtype_size("float32"), 4u);
  EXPECT_EQ(dtype_size("bfloat16"), 2u);
  EXPECT_EQ(dtype_size("bool"), 1u);
  EXPECT_EQ(dtype_size("complex64"), 0u);
}

}  // namespace
}  // namespace tritium::exec
