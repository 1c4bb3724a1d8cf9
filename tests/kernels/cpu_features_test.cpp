// Tests for CPU feature detection, variant names, HEARTH_CPU handling and the dispatch table.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kernels/cpu_features.h"
#include "kernels/kernel_table.h"
#include "kernel_test_util.h"

namespace hearth::kernels {
namespace {

TEST(CpuFeatures, ParsesVariantNames) {
  EXPECT_EQ(*parse_cpu_variant("scalar"), CpuVariant::kScalar);
  EXPECT_EQ(*parse_cpu_variant("AVX2"), CpuVariant::kAvx2);
  EXPECT_EQ(*parse_cpu_variant("avx512"), CpuVariant::kAvx512);
  auto bad = parse_cpu_variant("sse9");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("sse9"), std::string::npos);
}

TEST(CpuFeatures, ScalarAlwaysSupportedAndBestIsSupported) {
  EXPECT_TRUE(cpu_variant_supported(CpuVariant::kScalar));
  EXPECT_TRUE(cpu_variant_supported(best_cpu_variant()));
  const auto all = supported_cpu_variants();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), CpuVariant::kScalar);
  // AVX-512 implies AVX2 in our variant ladder.
  if (cpu_variant_supported(CpuVariant::kAvx512)) {
    EXPECT_TRUE(cpu_variant_supported(CpuVariant::kAvx2));
  }
  const CpuFeatures& f = cpu_features();
  if (cpu_variant_supported(CpuVariant::kAvx2)) {
    EXPECT_TRUE(f.avx2 && f.fma && f.f16c && f.os_saves_ymm);
  }
}

TEST(CpuFeatures, EnvironmentOverride) {
  test::EnvGuard guard("HEARTH_CPU");
  setenv("HEARTH_CPU", "scalar", 1);
  EXPECT_EQ(*cpu_variant_from_env(), CpuVariant::kScalar);
  setenv("HEARTH_CPU", "bogus", 1);
  auto bad = cpu_variant_from_env();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("HEARTH_CPU"), std::string::npos);
  unsetenv("HEARTH_CPU");
  EXPECT_EQ(*cpu_variant_from_env(), best_cpu_variant());
  for (CpuVariant v : {CpuVariant::kAvx2, CpuVariant::kAvx512}) {
    setenv("HEARTH_CPU", std::string(cpu_variant_name(v)).c_str(), 1);
    auto r = cpu_variant_from_env();
    EXPECT_EQ(r.ok(), cpu_variant_supported(v));
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("not supported"), std::string::npos);
    }
  }
}

TEST(CpuFeatures, InitHonoursEnvironment) {
  test::EnvGuard guard("HEARTH_CPU");
  const CpuVariant saved = active_cpu_variant();
  setenv("HEARTH_CPU", "scalar", 1);
  ASSERT_TRUE(init_cpu_variant().ok());
  EXPECT_EQ(active_cpu_variant(), CpuVariant::kScalar);
  EXPECT_EQ(active_kernels().variant, CpuVariant::kScalar);
  setenv("HEARTH_CPU", "neon", 1);
  auto bad = init_cpu_variant();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(active_cpu_variant(), CpuVariant::kScalar);  // a bad request changes nothing
  ASSERT_TRUE(set_cpu_variant_for_testing(saved).ok());
}

TEST(CpuFeatures, SetVariantSwitchesTable) {
  const CpuVariant saved = active_cpu_variant();
  for (CpuVariant v : supported_cpu_variants()) {
    ASSERT_TRUE(set_cpu_variant_for_testing(v).ok());
    EXPECT_EQ(active_cpu_variant(), v);
    EXPECT_EQ(active_kernels().variant, v);
  }
  ASSERT_TRUE(set_cpu_variant_for_testing(saved).ok());
}

TEST(KernelTable, EveryVariantHasEveryEntry) {
  for (CpuVariant v : supported_cpu_variants()) {
    const KernelTable& t = kernels_for(v);
    for (DType w : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                    DType::kQ8_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
      EXPECT_NE(t.vec_dot[static_cast<int>(w)], nullptr) << dtype_name(w);
      if (w != DType::kF32) {
        EXPECT_NE(t.quantize_act[static_cast<int>(activation_type(w))], nullptr);
      }
    }
    EXPECT_NE(t.sum_squares, nullptr);
    EXPECT_NE(t.dot_f16, nullptr);
    EXPECT_NE(t.axpy_f16, nullptr);
    EXPECT_NE(t.axpy_f32, nullptr);
  }
  EXPECT_EQ(activation_type(DType::kQ4_1), DType::kQ8_1);
  EXPECT_EQ(activation_type(DType::kQ5_0), DType::kQ8_0);
  EXPECT_EQ(activation_type(DType::kQ3_K), DType::kQ8_K);
  EXPECT_EQ(activation_type(DType::kBF16), DType::kBF16);
}

}  // namespace
}  // namespace hearth::kernels
