// The matrix x vector kernel's fusions against the separate dispatches they replace: the
// RMSNorm before it (NORM_X) and the residual add after it (ADD_Y), on vector and scalar input
// paths (widths that are and are not multiples of 4), with teams of several subgroups, and
// the team sizes themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <vector>

#include "common/test_device.h"
#include "kernels/vulkan/vulkan_ops.h"
#include "tensor/quantize.h"
#include "kernel_test_util.h"
#include "vulkan_test_util.h"

namespace hearth::kernels::vulkan {
namespace {

using device::Buffer;
using device::Recorder;

TEST(VulkanMatvec, TeamsGiveEachLaneAboutOneUnit) {
  // A 1B model's matrices on a device with 32-lane subgroups.
  EXPECT_EQ(matvec_team(2048, 3072, 32), 2u);   // Q/K/V: 64 units, 768 row groups
  EXPECT_EQ(matvec_team(8192, 2048, 32), 8u);   // down: 256 units, 512 row groups
  EXPECT_EQ(matvec_team(2048, 16384, 32), 1u);  // gate/up: 4,096 row groups keep the device busy
  EXPECT_EQ(matvec_team(2048, 128256, 32), 1u);  // the output matrix
  EXPECT_EQ(matvec_team(8192, 4096, 32), 4u);   // 1,024 row groups: teams of 4 reach 4,096
  EXPECT_EQ(matvec_team(96, 10, 32), 1u);       // 3 units
  EXPECT_EQ(matvec_team(2016, 10, 32), 1u);     // 63 units: fewer than two subgroups' lanes
  EXPECT_EQ(matvec_team(16384, 10, 32), 8u);    // never more subgroups than a workgroup has
  EXPECT_EQ(matvec_team(8192, 10, 8), 32u);
  EXPECT_EQ(matvec_team(8192, 10, 64), 4u);
}

struct FusedCase {
  DType type;
  int64_t cols;
  int64_t rows;
};

class VulkanMatvecFused : public ::testing::TestWithParam<FusedCase> {};

TEST_P(VulkanMatvecFused, NormBeforeAndAddAfterMatchTheSeparateDispatches) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const FusedCase c = GetParam();
  VulkanOps ops(*ctx);
  if (!ctx->info().subgroup_arithmetic) GTEST_SKIP() << "the matrix x vector kernel needs subgroup arithmetic";
  const size_t row_bytes = *dtype_row_bytes(c.type, c.cols);
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(c.rows));
  const auto wf = kernels::test::random_floats(static_cast<size_t>(c.rows * c.cols), 81);
  for (int64_t r = 0; r < c.rows; ++r) {
    ASSERT_TRUE(quantize_row(c.type, wf.data() + r * c.cols, bytes.data() + r * row_bytes, c.cols).ok());
  }
  const WeightView view{c.type, bytes.data(), c.cols, c.rows, row_bytes, false};
  auto w = ops.upload_weight(view);
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  ASSERT_TRUE(ops.fused_matvec(*w));
  const auto x = kernels::test::random_floats(static_cast<size_t>(c.cols), 82, -3.0f, 3.0f);
  const auto nw = kernels::test::random_floats(static_cast<size_t>(c.cols), 83);
  const auto y0 = kernels::test::random_floats(static_cast<size_t>(c.rows), 84);
  const auto n = static_cast<uint32_t>(c.cols);
  const auto rows = static_cast<uint32_t>(c.rows);
  Buffer xb = upload_floats(*ctx, x), nwb = upload_floats(*ctx, nw), xn = upload_floats(*ctx, std::vector<float>(x.size()));
  Buffer separate = upload_floats(*ctx, std::vector<float>(rows)), fused = upload_floats(*ctx, std::vector<float>(rows));
  Buffer added = upload_floats(*ctx, y0), product = upload_floats(*ctx, std::vector<float>(rows));
  Recorder rec(*ctx);
  const RowsInto into_separate[] = {{&separate, rows}};
  const RowsInto into_fused[] = {{&fused, rows}};
  ASSERT_TRUE(ops.rms_norm(rec, xb, &nwb, xn, n, 1, 1e-5f).ok());
  ASSERT_TRUE(ops.matvec_split(rec, *w, {&xn, 0}, into_separate).ok());
  ASSERT_TRUE(ops.matvec_split(rec, *w, {&xb, 0}, into_fused, &nwb, 1e-5f).ok());
  ASSERT_TRUE(ops.matvec_add(rec, *w, {&xb, 0}, added).ok());
  ASSERT_TRUE(ops.matmul(rec, *w, {&xb, 0}, n, 1, {&product, 0}, rows).ok());
  ASSERT_TRUE(rec.run().ok());
  const auto want = download_floats(*ctx, separate, rows);
  const auto got = download_floats(*ctx, fused, rows);
  const auto prod = download_floats(*ctx, product, rows);
  auto sum = y0;
  for (size_t r = 0; r < sum.size(); ++r) sum[r] += prod[r];
  const auto got_sum = download_floats(*ctx, added, rows);
  double norm = 1.0;
  for (float v : want) norm = std::max(norm, std::fabs(static_cast<double>(v)));
  const double err_norm = max_abs_diff(got, want), err_add = max_abs_diff(got_sum, sum);
  std::cout << "[ max err  ] " << dtype_name(c.type) << " cols=" << c.cols << " rows=" << c.rows
            << ": norm fused " << err_norm << ", add fused " << err_add << " (largest |y| " << norm << ")\n";
  EXPECT_LT(err_norm, 1e-5 * norm);
  EXPECT_LT(err_add, 1e-5 * norm);
  Recorder unused(*ctx);
  EXPECT_EQ(ops.matvec_add(unused, DeviceWeight{}, {&xb, 0}, added).error().kind, ErrorKind::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Shapes, VulkanMatvecFused,
                         ::testing::Values(FusedCase{DType::kQ4_0, 256, 70}, FusedCase{DType::kQ8_0, 2048, 40},
                                           FusedCase{DType::kF16, 70, 33}, FusedCase{DType::kQ6_K, 256, 9}),
                         [](const auto& info) {
                           return std::string(dtype_name(info.param.type)) + "_" + std::to_string(info.param.cols);
                         });

}  // namespace
}  // namespace hearth::kernels::vulkan
