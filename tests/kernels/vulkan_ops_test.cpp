// The Vulkan kernels against the CPU ones on the test device (lavapipe in CI), with the
// subgroup reductions and with the shared-memory fallback. Shapes are small: lavapipe is
// slow. Each test prints its largest error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/test_device.h"
#include "kernels/ops.h"
#include "kernels/vulkan/vulkan_ops.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"
#include "util/thread_pool.h"
#include "kernel_test_util.h"
#include "vulkan_test_util.h"

namespace hearth::kernels::vulkan {
namespace {

using device::Buffer;
using device::Context;
using device::Recorder;

struct MatmulCase {
  DType type;
  int64_t cols;
};

class VulkanMatmul : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(VulkanMatmul, MatchesDequantizedWeightsAndTheCpuKernel) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const MatmulCase c = GetParam();
  // Not a multiple of the subgroup kernel's rows per workgroup, and past one 128-row tile of
  // the batch kernel (matmul_tiled.comp) with a tail.
  const int64_t rows = 131;
  const size_t row_bytes = *dtype_row_bytes(c.type, c.cols);
  std::vector<uint8_t> wbytes(row_bytes * rows);
  const auto wf = kernels::test::random_floats(static_cast<size_t>(rows * c.cols), 11);
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_TRUE(quantize_row(c.type, wf.data() + r * c.cols, wbytes.data() + r * row_bytes, c.cols).ok());
  }
  std::vector<float> deq(static_cast<size_t>(rows * c.cols));
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_TRUE(dequantize_row(c.type, wbytes.data() + r * row_bytes, deq.data() + r * c.cols, c.cols).ok());
  }
  WeightView w{c.type, wbytes.data(), c.cols, rows, row_bytes, false};
  VulkanOps ops(*ctx);
  auto dw = ops.upload_weight(w);
  ASSERT_TRUE(dw.ok()) << dw.error().to_string();
  if (c.cols % 32 == 0) {
    EXPECT_EQ(dw->type, native_weight_type(c.type) ? c.type : DType::kF16);
  }

  // 5 and 37 tokens: the batch kernel's one tile with a tail and two tiles; both also through
  // the 4-token kernel.
  for (uint32_t n_tokens : {1u, 5u, 37u}) {
    const auto x = kernels::test::random_floats(static_cast<size_t>(n_tokens * c.cols), 12 + n_tokens);
    // Exact product of the dequantized weights (F16 copies for the dequantising path).
    std::vector<float> exact(static_cast<size_t>(n_tokens * rows));
    double norm = 0;
    for (uint32_t t = 0; t < n_tokens; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t k = 0; k < c.cols; ++k) {
          float wv = deq[static_cast<size_t>(r * c.cols + k)];
          if (!native_weight_type(c.type)) wv = fp16_to_fp32(fp32_to_fp16(wv));
          s += static_cast<double>(wv) * x[t * c.cols + k];
        }
        exact[t * rows + r] = static_cast<float>(s);
        norm = std::max(norm, std::fabs(s));
      }
    }
    ThreadPool pool(1);
    MatmulScratch scratch;
    std::vector<float> cpu(exact.size());
    ASSERT_TRUE(matmul(w, x.data(), n_tokens, cpu.data(), pool, scratch).ok());

    Buffer xb = upload_floats(*ctx, x);
    Buffer yb = upload_floats(*ctx, std::vector<float>(exact.size(), 0.0f));
    struct Mode {
      bool subgroups, tiled, matvec;
    };
    std::vector<Mode> modes;
    for (bool sg : reduction_modes(*ctx)) modes.push_back({sg, false, false});
    if (n_tokens > 4) modes.push_back({false, true, false});
    if (n_tokens == 1 && ctx->info().subgroup_arithmetic) modes.push_back({true, false, true});
    for (auto [sg, tiled, matvec] : modes) {
      ops.set_use_subgroups(sg);
      ops.set_use_tiled(tiled);
      ops.set_use_matvec(matvec);
      Recorder rec(*ctx);
      ASSERT_TRUE(ops.matmul(rec, *dw, {&xb, 0}, static_cast<uint32_t>(c.cols), n_tokens, {&yb, 0},
                             static_cast<uint32_t>(rows))
                      .ok());
      ASSERT_TRUE(rec.run().ok());
      const auto gpu = download_floats(*ctx, yb, exact.size());
      const double vs_exact = max_abs_diff(gpu, exact);
      const double vs_cpu = max_abs_diff(gpu, cpu);
      EXPECT_EQ(ops.use_subgroups(), sg);
      std::cout << "[ max err  ] " << dtype_name(c.type) << " cols=" << c.cols << " tokens=" << n_tokens
                << (tiled ? " tiled batch kernel" : matvec ? " matvec kernel" : sg ? " subgroup, " : " shared, ")
                << (tiled || matvec ? std::string() : std::to_string(ops.matmul_rows_per_group()) + " rows/workgroup")
                << ": vs exact " << vs_exact << ", vs CPU kernel " << vs_cpu
                << " (largest |y| " << norm << ")\n";
      EXPECT_LT(vs_exact, 2e-5 * c.cols * std::max(1.0, norm / 4));
      // The CPU kernel rounds activations (Q8_0/Q8_K/F16) for integer dot products.
      EXPECT_LT(vs_cpu, 0.02 * std::max(1.0, norm));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, VulkanMatmul,
                         ::testing::Values(MatmulCase{DType::kF32, 172}, MatmulCase{DType::kF16, 96},
                                           MatmulCase{DType::kQ8_0, 96}, MatmulCase{DType::kQ4_0, 96},
                                           MatmulCase{DType::kQ4_K, 512}, MatmulCase{DType::kQ6_K, 512},
                                           MatmulCase{DType::kQ5_K, 256}, MatmulCase{DType::kQ4_1, 64}),
                         [](const auto& info) { return std::string(dtype_name(info.param.type)); });
// Q4_0 and Q8_0 rows that start 16-byte aligned (256 columns), so every unit's quants are one
// 16-byte load; the Types cases' 96 columns leave most rows unaligned.
INSTANTIATE_TEST_SUITE_P(AlignedRows, VulkanMatmul,
                         ::testing::Values(MatmulCase{DType::kQ4_0, 256}, MatmulCase{DType::kQ8_0, 256}),
                         [](const auto& info) { return std::string(dtype_name(info.param.type)) + "_256"; });
// 400 columns: 13 units, so with subgroups of 8 or 16 some lanes of the matrix x vector kernel
// walk one unit more than the others (their row sums still meet in subgroupAdd).
INSTANTIATE_TEST_SUITE_P(OddWidths, VulkanMatmul,
                         ::testing::Values(MatmulCase{DType::kF16, 70}, MatmulCase{DType::kF16, 33},
                                           MatmulCase{DType::kF16, 400}),
                         [](const auto& info) { return "F16_" + std::to_string(info.param.cols); });

// Rows long enough that several subgroups of the matrix x vector kernel share each row group
// (matvec_team > 1 on every subgroup size up to 64): 8,192-wide Q4_0 rows as a 1B model's
// down matrix has, K-quant rows of many blocks (their units regrouped on upload), and an F16
// width that leaves the last unit short.
INSTANTIATE_TEST_SUITE_P(LongRows, VulkanMatmul,
                         ::testing::Values(MatmulCase{DType::kQ4_0, 8192}, MatmulCase{DType::kQ6_K, 4096},
                                           MatmulCase{DType::kQ4_K, 2048}, MatmulCase{DType::kF16, 4100}),
                         [](const auto& info) {
                           return std::string(dtype_name(info.param.type)) + "_" + std::to_string(info.param.cols);
                         });

// A layer's Q, K and V (or gate and up) uploaded into one buffer: one matrix x vector fills the
// three outputs (each from element 0, nothing past its rows), and each part's row range runs
// on its own through every kernel; parts of other types are refused. Row counts are not
// multiples of any kernel's rows per workgroup, and Q6_K's 210-byte rows put the later parts
// at 2-byte-aligned offsets.
TEST(VulkanOps, MatricesStoredTogetherRunAsOneAndEachOnItsOwn) {
  HEARTH_REQUIRE_DEVICE(ctx);
  VulkanOps ops(*ctx);
  const int64_t part_rows[] = {40, 17, 9};
  for (const MatmulCase c : {MatmulCase{DType::kQ4_0, 96}, MatmulCase{DType::kQ6_K, 256}, MatmulCase{DType::kF16, 70},
                             MatmulCase{DType::kQ5_K, 256}}) {
    const size_t row_bytes = *dtype_row_bytes(c.type, c.cols);
    std::vector<std::vector<uint8_t>> bytes;
    std::vector<WeightView> parts;
    std::vector<std::vector<float>> deq;
    for (int i = 0; i < 3; ++i) {
      const int64_t rows = part_rows[i];
      const auto wf = kernels::test::random_floats(static_cast<size_t>(rows * c.cols), 60 + i);
      bytes.emplace_back(row_bytes * rows);
      deq.emplace_back(static_cast<size_t>(rows * c.cols));
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_TRUE(quantize_row(c.type, wf.data() + r * c.cols, bytes.back().data() + r * row_bytes, c.cols).ok());
        ASSERT_TRUE(dequantize_row(c.type, bytes.back().data() + r * row_bytes, deq.back().data() + r * c.cols, c.cols).ok());
      }
      if (!native_weight_type(c.type)) {
        for (float& v : deq.back()) v = fp16_to_fp32(fp32_to_fp16(v));
      }
      parts.push_back(WeightView{c.type, bytes.back().data(), c.cols, rows, row_bytes, false});
    }
    EXPECT_TRUE(ops.can_store_together(parts));
    auto together = ops.upload_weights(parts);
    ASSERT_TRUE(together.ok()) << together.error().to_string();
    EXPECT_EQ(together->rows, 66);
    // 1 token: the one matvec, then each part through matmul.comp; 3: matmul.comp's 4-token
    // tiles (subgroup and shared-memory reductions); 5: the tiled batch kernel.
    struct Run {
      uint32_t n_tokens;
      bool fused, subgroups;
    };
    for (const Run run : {Run{1, true, true}, Run{1, false, false}, Run{3, false, true}, Run{3, false, false},
                          Run{5, false, true}}) {
      const uint32_t n_tokens = run.n_tokens;
      ops.set_use_subgroups(run.subgroups);
      const auto x = kernels::test::random_floats(static_cast<size_t>(n_tokens * c.cols), 70 + n_tokens);
      Buffer xb = upload_floats(*ctx, x);
      std::vector<Buffer> ys;
      for (int i = 0; i < 3; ++i) ys.push_back(upload_floats(*ctx, std::vector<float>(n_tokens * part_rows[i] + 1, -7.0f)));
      const bool fused = run.fused && ops.fused_matvec(*together);
      Recorder rec(*ctx);
      if (fused) {
        const RowsInto into[] = {{&ys[0], 40}, {&ys[1], 17}, {&ys[2], 9}};
        ASSERT_TRUE(ops.matvec_split(rec, *together, {&xb, 0}, into).ok());
      } else {
        int64_t first = 0;
        for (int i = 0; i < 3; ++i) {
          const auto rows = static_cast<uint32_t>(part_rows[i]);
          ASSERT_TRUE(ops.matmul(rec, together->row_range(first, rows), {&xb, 0}, static_cast<uint32_t>(c.cols), n_tokens,
                                 {&ys[i], 0}, rows)
                          .ok());
          first += rows;
        }
      }
      ASSERT_TRUE(rec.run().ok());
      double worst = 0, norm = 0;
      for (int i = 0; i < 3; ++i) {
        const int64_t rows = part_rows[i];
        const auto gpu = download_floats(*ctx, ys[i], n_tokens * rows + 1);
        for (uint32_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            double e = 0;
            for (int64_t k = 0; k < c.cols; ++k) {
              e += static_cast<double>(deq[i][static_cast<size_t>(r * c.cols + k)]) * x[t * c.cols + k];
            }
            worst = std::max(worst, std::fabs(e - gpu[t * rows + r]));
            norm = std::max(norm, std::fabs(e));
          }
        }
        EXPECT_EQ(gpu[n_tokens * rows], -7.0f) << "part " << i << " written past its rows";
      }
      std::cout << "[ max err  ] " << dtype_name(c.type) << " stored together, " << n_tokens << " token(s)"
                << (fused ? ", one matvec" : ", each part") << (ops.use_subgroups() ? ", subgroups" : ", shared")
                << ": " << worst << "\n";
      EXPECT_LT(worst, 2e-5 * c.cols * std::max(1.0, norm / 4));
    }
  }
  // Parts of other types (or widths) are refused; the outputs must take every row.
  std::vector<uint8_t> q4(*dtype_row_bytes(DType::kQ4_0, 64)), q8(*dtype_row_bytes(DType::kQ8_0, 64));
  const WeightView mixed[] = {{DType::kQ4_0, q4.data(), 64, 1, q4.size(), false},
                              {DType::kQ8_0, q8.data(), 64, 1, q8.size(), false}};
  EXPECT_FALSE(ops.can_store_together(mixed));
  EXPECT_EQ(ops.upload_weights(mixed).error().kind, ErrorKind::kInvalidArgument);
  // Two types that both go to the device as F16 still differ in their source.
  std::vector<uint8_t> q41(*dtype_row_bytes(DType::kQ4_1, 64)), q50(*dtype_row_bytes(DType::kQ5_0, 64));
  const WeightView both_f16[] = {{DType::kQ4_1, q41.data(), 64, 1, q41.size(), false},
                                 {DType::kQ5_0, q50.data(), 64, 1, q50.size(), false}};
  EXPECT_FALSE(ops.can_store_together(both_f16));
  auto one = ops.upload_weights(std::span<const WeightView>(mixed, 1));
  ASSERT_TRUE(one.ok());
  if (ops.fused_matvec(*one)) {
    Buffer xb = upload_floats(*ctx, std::vector<float>(64, 1.0f)), yb = upload_floats(*ctx, std::vector<float>(2));
    const RowsInto too_many[] = {{&yb, 2}};
    Recorder rec(*ctx);
    EXPECT_EQ(ops.matvec_split(rec, *one, {&xb, 0}, too_many).error().kind, ErrorKind::kInvalidArgument);
  }
}

// An output matrix of a real vocabulary (Qwen's 151,936 tokens, Llama 3's 128,256) has more rows
// than one dispatch dimension allows (65,535 workgroups): the rows go on in z.
TEST(VulkanOps, MatmulWithMoreRowsThanOneDispatchDimension) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const int64_t cols = 8;  // short rows (the F32 unit's tail reads 0): the row count is the point
  VulkanOps ops(*ctx);
  for (bool sg : reduction_modes(*ctx)) {
    ops.set_use_subgroups(sg);
    // Past 65,535 workgroups whatever the rows per workgroup (one, or one per subgroup).
    const int64_t rows = 65535 * int64_t{ops.matmul_rows_per_group()} + 7;
    const auto wf = kernels::test::random_floats(static_cast<size_t>(rows * cols), 21);
    WeightView w{DType::kF32, reinterpret_cast<const uint8_t*>(wf.data()), cols, rows, static_cast<size_t>(cols) * 4, false};
    auto dw = ops.upload_weight(w);
    ASSERT_TRUE(dw.ok()) << dw.error().to_string();
    const auto x = kernels::test::random_floats(static_cast<size_t>(cols), 22);
    Buffer xb = upload_floats(*ctx, x);
    Buffer yb = upload_floats(*ctx, std::vector<float>(static_cast<size_t>(rows) + 1, -7.0f));
    Recorder rec(*ctx);
    ASSERT_TRUE(ops.matmul(rec, *dw, {&xb, 0}, static_cast<uint32_t>(cols), 1, {&yb, 0}, static_cast<uint32_t>(rows)).ok());
    ASSERT_TRUE(rec.run().ok());
    const auto gpu = download_floats(*ctx, yb, static_cast<size_t>(rows) + 1);
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t k = 0; k < cols; ++k) s += static_cast<double>(wf[static_cast<size_t>(r * cols + k)]) * x[static_cast<size_t>(k)];
      worst = std::max(worst, std::fabs(s - gpu[static_cast<size_t>(r)]));
    }
    std::cout << "[ max err  ] " << rows << " rows" << (sg ? " subgroup" : " shared") << ": " << worst << "\n";
    EXPECT_LT(worst, 1e-4);
    EXPECT_EQ(gpu[static_cast<size_t>(rows)], -7.0f) << "a workgroup past the last row wrote";
  }
}

// Subgroup kernels are the default where the device has subgroup arithmetic;
// HEARTH_VULKAN_SUBGROUPS=0 picks the shared-memory fallback, and asking for subgroups on a
// device without them keeps the fallback.
// HEARTH_VK_PROFILE=groups: one profile line per kernel, workgroup count and first buffer, so
// two matrices of other shapes through the same kernel are charged apart.
TEST(VulkanOps, ProfileByGroupsChargesMatricesOfOtherShapesApart) {
  HEARTH_REQUIRE_DEVICE(shared);  // fails under CI without a device; the profiled one is fresh
  ::setenv("HEARTH_VK_PROFILE", "groups", 1);
  std::string why;
  std::unique_ptr<device::Context> ctx = hearth::test::open_device_for_tests(&why);
  ::unsetenv("HEARTH_VK_PROFILE");
  ASSERT_NE(ctx, nullptr) << why;
  VulkanOps ops(*ctx);
  ops.set_use_matvec(false);  // matmul.comp on every device, subgroups or not
  const int64_t cols = 64;
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<DeviceWeight> weights;
  for (int64_t rows : {16, 48}) {
    const size_t row_bytes = *dtype_row_bytes(DType::kF32, cols);
    const auto wf = kernels::test::random_floats(static_cast<size_t>(rows * cols), 70);
    bytes.emplace_back(row_bytes * rows);
    std::memcpy(bytes.back().data(), wf.data(), bytes.back().size());
    auto dw = ops.upload_weight(WeightView{DType::kF32, bytes.back().data(), cols, rows, row_bytes, false});
    ASSERT_TRUE(dw.ok()) << dw.error().to_string();
    weights.push_back(*dw);
  }
  Buffer xb = upload_floats(*ctx, kernels::test::random_floats(cols, 71));
  Buffer yb = upload_floats(*ctx, std::vector<float>(48, 0.0f));
  Recorder rec(*ctx);
  for (const DeviceWeight& w : weights) {
    ASSERT_TRUE(ops.matmul(rec, w, {&xb, 0}, static_cast<uint32_t>(cols), 1, {&yb, 0}, 48).ok());
  }
  ASSERT_TRUE(rec.run().ok());
  const std::string report = ctx->profile_report();
  if (report.find("has no timestamps") != std::string::npos || report.empty()) GTEST_SKIP() << report;
  const std::string kernel = ops.use_subgroups() ? "matmul_f32_sg [" : "matmul_f32 [";
  const size_t first = report.find(kernel);
  ASSERT_NE(first, std::string::npos) << report;
  EXPECT_NE(report.find(kernel, first + 1), std::string::npos) << "one line per matrix expected:\n" << report;
  std::cout << report;
}

TEST(VulkanOps, SubgroupKernelsWhereTheDeviceHasThemUnlessTheEnvironmentSaysNo) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const char* before = std::getenv("HEARTH_VULKAN_SUBGROUPS");
  const std::string saved = before != nullptr ? before : "";
  ::unsetenv("HEARTH_VULKAN_SUBGROUPS");
  const bool has = ctx->info().subgroup_arithmetic;
  EXPECT_EQ(VulkanOps(*ctx).use_subgroups(), has);
  ::setenv("HEARTH_VULKAN_SUBGROUPS", "0", 1);
  VulkanOps fallback(*ctx);
  EXPECT_FALSE(fallback.use_subgroups());
  EXPECT_EQ(fallback.matmul_rows_per_group(), 1u);
  fallback.set_use_subgroups(true);
  EXPECT_EQ(fallback.use_subgroups(), has);
  if (has) {
    EXPECT_EQ(fallback.matmul_rows_per_group(), 64u / ctx->info().subgroup_size);
  }
  if (before != nullptr) {
    ::setenv("HEARTH_VULKAN_SUBGROUPS", saved.c_str(), 1);
  } else {
    ::unsetenv("HEARTH_VULKAN_SUBGROUPS");
  }
  std::cout << "[ device   ] subgroup arithmetic " << (has ? "yes" : "no") << ", subgroup size "
            << ctx->info().subgroup_size << "\n";
}

// Dispatches push their bindings where the device offers VK_KHR_push_descriptor (no
// descriptor set allocated) and allocate sets from pools with HEARTH_VULKAN_PUSH_DESCRIPTORS=0;
// both give the same results, and a pool's sets run out and a new pool follows (300 dispatches
// in one list, 256 sets a pool).
TEST(VulkanOps, PushedAndPooledBindingsGiveTheSameResults) {
  HEARTH_REQUIRE_DEVICE(ctx);
  std::string why;
  setenv("HEARTH_VULKAN_PUSH_DESCRIPTORS", "0", 1);
  std::unique_ptr<Context> pooled = hearth::test::open_device_for_tests(&why);
  unsetenv("HEARTH_VULKAN_PUSH_DESCRIPTORS");
  ASSERT_NE(pooled, nullptr) << why;
  EXPECT_FALSE(pooled->pushes_descriptors());
  std::cout << "[ device   ] pushes descriptors: " << (ctx->pushes_descriptors() ? "yes" : "no") << "\n";
  const uint32_t n = 300;
  const auto x = kernels::test::random_floats(n, 31);
  const auto w = kernels::test::random_floats(n, 32);
  std::vector<std::vector<float>> results;
  for (Context* c : {ctx, pooled.get()}) {
    VulkanOps ops(*c);
    Buffer xb = upload_floats(*c, x), wb = upload_floats(*c, w);
    Buffer yb = upload_floats(*c, std::vector<float>(n));
    const device::DeviceCounters before = c->counters();
    Recorder rec(*c);
    ASSERT_TRUE(ops.rms_norm(rec, xb, &wb, yb, n, 1, 1e-5f).ok());
    for (int i = 0; i < 299; ++i) ASSERT_TRUE(ops.scale(rec, yb, 1.001f, n).ok());
    ASSERT_TRUE(rec.run().ok());
    const uint64_t sets = c->counters().descriptor_sets - before.descriptor_sets;
    EXPECT_EQ(sets, c->pushes_descriptors() ? 0u : 300u);
    results.push_back(download_floats(*c, yb, n));
  }
  EXPECT_EQ(results[0], results[1]);
  double expect0 = 0;
  for (float v : x) expect0 += static_cast<double>(v) * v;
  expect0 = x[0] / std::sqrt(expect0 / n + 1e-5) * w[0] * std::pow(1.001, 299);
  EXPECT_NEAR(results[1][0], expect0, 1e-3 * std::fabs(expect0) + 1e-5);
}

TEST(VulkanOps, NormsSoftmaxAndPointwiseMatchTheCpu) {
  HEARTH_REQUIRE_DEVICE(ctx);
  VulkanOps ops(*ctx);
  const uint32_t n = 200, n_rows = 3;
  const auto x = kernels::test::random_floats(n * n_rows, 21, -3.0f, 3.0f);
  const auto w = kernels::test::random_floats(n, 22);
  const auto x2 = kernels::test::random_floats(n * n_rows, 23);
  for (bool sg : reduction_modes(*ctx)) {
    ops.set_use_subgroups(sg);
    Buffer xb = upload_floats(*ctx, x), wb = upload_floats(*ctx, w), x2b = upload_floats(*ctx, x2);
    Buffer nb = upload_floats(*ctx, std::vector<float>(x.size())), sb = upload_floats(*ctx, x);
    Buffer ab = upload_floats(*ctx, x), mb = upload_floats(*ctx, x), cb = upload_floats(*ctx, x);
    Buffer lb = upload_floats(*ctx, x), gb = upload_floats(*ctx, x);
    Buffer rxb = upload_floats(*ctx, x), rnb = upload_floats(*ctx, std::vector<float>(x.size()));
    Buffer slb = upload_floats(*ctx, x), glb = upload_floats(*ctx, x);
    Recorder rec(*ctx);
    ASSERT_TRUE(ops.rms_norm(rec, xb, &wb, nb, n, n_rows, 1e-5f).ok());
    ASSERT_TRUE(ops.rms_norm(rec, rxb, &wb, rnb, n, n_rows, 1e-5f, &x2b).ok());  // rxb += x2 first
    ASSERT_TRUE(ops.silu_mul(rec, slb, x2b, n * n_rows).ok());
    ASSERT_TRUE(ops.gelu_mul(rec, glb, x2b, n * n_rows).ok());
    EXPECT_EQ(ops.rms_norm(rec, rxb, &wb, rxb, n, n_rows, 1e-5f, &x2b).error().kind, ErrorKind::kInvalidArgument);
    ASSERT_TRUE(ops.softmax(rec, sb, n, n_rows).ok());
    ASSERT_TRUE(ops.add(rec, ab, x2b, n * n_rows).ok());
    ASSERT_TRUE(ops.mul(rec, mb, x2b, n * n_rows).ok());
    ASSERT_TRUE(ops.scale(rec, cb, 0.37f, n * n_rows).ok());
    ASSERT_TRUE(ops.silu(rec, lb, n * n_rows).ok());
    ASSERT_TRUE(ops.gelu(rec, gb, n * n_rows).ok());
    ASSERT_TRUE(rec.run().ok());

    std::vector<float> norm(x.size()), soft = x, added = x, mulled = x, scaled = x, silued = x, gelued = x;
    for (uint32_t r = 0; r < n_rows; ++r) {
      rms_norm(x.data() + r * n, w.data(), norm.data() + r * n, n, 1e-5f);
      softmax(soft.data() + r * n, n);
    }
    add(added.data(), x2.data(), n * n_rows);
    mul(mulled.data(), x2.data(), n * n_rows);
    scale(scaled.data(), 0.37f, n * n_rows);
    silu(silued.data(), n * n_rows);
    gelu(gelued.data(), n * n_rows);
    // The fused forms: the residual's sum stays in x, and the gated activations.
    std::vector<float> summed = added, summed_norm(x.size()), silu_mulled = silued, gelu_mulled = gelued;
    for (uint32_t r = 0; r < n_rows; ++r) rms_norm(summed.data() + r * n, w.data(), summed_norm.data() + r * n, n, 1e-5f);
    mul(silu_mulled.data(), x2.data(), n * n_rows);
    mul(gelu_mulled.data(), x2.data(), n * n_rows);
    struct Check { const char* name; const Buffer* b; const std::vector<float>* want; double tol; };
    const Check checks[] = {{"rms_norm", &nb, &norm, 1e-5}, {"softmax", &sb, &soft, 1e-6}, {"add", &ab, &added, 0},
                            {"mul", &mb, &mulled, 0},       {"scale", &cb, &scaled, 0},    {"silu", &lb, &silued, 1e-5},
                            {"gelu", &gb, &gelued, 2e-3},   {"residual sum", &rxb, &summed, 0},
                            {"add + rms_norm", &rnb, &summed_norm, 1e-5}, {"silu * x", &slb, &silu_mulled, 1e-5},
                            {"gelu * x", &glb, &gelu_mulled, 2e-3}};
    for (const Check& c : checks) {
      const double err = max_abs_diff(download_floats(*ctx, *c.b, x.size()), *c.want);
      std::cout << "[ max err  ] " << c.name << (sg ? " subgroup" : " shared") << ": " << err << "\n";
      EXPECT_LE(err, c.tol) << c.name;
    }
  }
}

// Rows as wide as models' hidden states: 2,048 and 4,096 held in registers (8 and 16 elements
// per invocation), 5,000 past that through the two-pass walk; each alone and with a residual.
TEST(VulkanOps, RmsNormOfWideRowsMatchesTheCpu) {
  HEARTH_REQUIRE_DEVICE(ctx);
  VulkanOps ops(*ctx);
  const uint32_t n_rows = 2;
  for (uint32_t n : {2048u, 4096u, 5000u}) {
    const auto x = kernels::test::random_floats(n * n_rows, 31, -3.0f, 3.0f);
    const auto w = kernels::test::random_floats(n, 32);
    const auto r = kernels::test::random_floats(n * n_rows, 33);
    for (bool sg : reduction_modes(*ctx)) {
      ops.set_use_subgroups(sg);
      Buffer xb = upload_floats(*ctx, x), wb = upload_floats(*ctx, w), rb = upload_floats(*ctx, r);
      Buffer sumb = upload_floats(*ctx, x), nb = upload_floats(*ctx, std::vector<float>(x.size()));
      Buffer snb = upload_floats(*ctx, std::vector<float>(x.size()));
      Recorder rec(*ctx);
      ASSERT_TRUE(ops.rms_norm(rec, xb, &wb, nb, n, n_rows, 1e-5f).ok());
      ASSERT_TRUE(ops.rms_norm(rec, sumb, &wb, snb, n, n_rows, 1e-5f, &rb).ok());
      ASSERT_TRUE(rec.run().ok());
      std::vector<float> norm(x.size()), summed = x, summed_norm(x.size());
      add(summed.data(), r.data(), n * n_rows);
      for (uint32_t row = 0; row < n_rows; ++row) {
        rms_norm(x.data() + row * n, w.data(), norm.data() + row * n, n, 1e-5f);
        rms_norm(summed.data() + row * n, w.data(), summed_norm.data() + row * n, n, 1e-5f);
      }
      const double e_norm = max_abs_diff(download_floats(*ctx, nb, x.size()), norm);
      const double e_sum = max_abs_diff(download_floats(*ctx, sumb, x.size()), summed);
      const double e_sum_norm = max_abs_diff(download_floats(*ctx, snb, x.size()), summed_norm);
      std::cout << "[ max err  ] rms_norm n=" << n << (sg ? " subgroup" : " shared") << ": " << e_norm
                << ", with residual " << e_sum_norm << "\n";
      EXPECT_LE(e_norm, 2e-5) << n;
      EXPECT_EQ(e_sum, 0.0) << n;
      EXPECT_LE(e_sum_norm, 2e-5) << n;
    }
  }
}

// Both styles with partial rotation and linear scaling; then Llama 3's per-pair frequency
// factors, YaRN (ramp, magnitude correction) and an attn_factor, alone and together.
TEST(VulkanOps, RopeMatchesTheCpuInBothStylesWithFrequencyFactorsAndYarn) {
  HEARTH_REQUIRE_DEVICE(ctx);
  VulkanOps ops(*ctx);
  const uint32_t n_heads = 3, head_dim = 16, n_tokens = 4;
  const std::vector<int32_t> pos = {0, 1, 7, 2900};
  std::vector<float> factors = {1.0f, 1.0f, 1.5f, 2.5f, 4.0f, 8.0f};  // rope_dims / 2
  auto fb = ctx->alloc(factors.size() * 4);
  ASSERT_TRUE(fb.ok());
  ASSERT_TRUE(ctx->upload(*fb, 0, factors.data(), factors.size() * 4).ok());
  struct Case {
    const char* name;
    bool factors, yarn;
  };
  for (const Case& c : {Case{"plain", false, false}, Case{"freq factors", true, false}, Case{"yarn", false, true},
                        Case{"yarn + factors", true, true}}) {
    for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
      RopeParams p;
      p.style = style;
      p.rope_dims = 12;  // partial rotation
      p.freq_base = 10000.0f;
      p.freq_scale = 0.5f;
      if (c.factors) p.freq_factors = factors.data();
      if (c.yarn) {
        p.freq_scale = 0.25f;
        p.ext_factor = 1.0f;
        p.attn_factor = 0.9f;
        p.n_ctx_orig = 512;
      }
      auto x = kernels::test::random_floats(n_tokens * n_heads * head_dim, 31);
      Buffer xb = upload_floats(*ctx, x);
      auto pb = ctx->alloc(pos.size() * 4);
      ASSERT_TRUE(pb.ok());
      ASSERT_TRUE(ctx->upload(*pb, 0, pos.data(), pos.size() * 4).ok());
      // Keys (2 heads) turn in the same dispatch as the queries.
      const uint32_t k_heads = 2;
      auto k = kernels::test::random_floats(n_tokens * k_heads * head_dim, 32);
      Buffer kb = upload_floats(*ctx, k);
      Recorder rec(*ctx);
      ASSERT_TRUE(ops.rope(rec, xb, *pb, n_tokens, n_heads, head_dim, p, c.factors ? &*fb : nullptr, &kb, k_heads).ok());
      ASSERT_TRUE(rec.run().ok());
      for (uint32_t t = 0; t < n_tokens; ++t) {
        rope(x.data() + t * n_heads * head_dim, n_heads, head_dim, pos[t], p);
        rope(k.data() + t * k_heads * head_dim, k_heads, head_dim, pos[t], p);
      }
      const double err = std::max(max_abs_diff(download_floats(*ctx, xb, x.size()), x),
                                  max_abs_diff(download_floats(*ctx, kb, k.size()), k));
      std::cout << "[ max err  ] rope " << c.name << (style == RopeStyle::kNeox ? " neox" : " normal") << ": " << err
                << "\n";
      // Position 2900: the CPU's angle comes from repeated multiplication, the device's from pow.
      EXPECT_LT(err, 5e-4) << c.name;
    }
  }
  RopeParams needs_buffer;
  needs_buffer.rope_dims = 16;
  needs_buffer.freq_factors = factors.data();
  Buffer xb = upload_floats(*ctx, std::vector<float>(head_dim));
  Recorder rec(*ctx);
  EXPECT_EQ(ops.rope(rec, xb, xb, 1, 1, head_dim, needs_buffer).error().kind, ErrorKind::kInvalidArgument);
  RopeParams plain;
  plain.rope_dims = 16;
  EXPECT_EQ(ops.rope(rec, xb, xb, 1, 1, head_dim, plain, nullptr, &xb, 1).error().kind, ErrorKind::kInvalidArgument);
}

TEST(VulkanOps, AttentionOverAShuffledBlockTableMatchesTheCpu) {
  HEARTH_REQUIRE_DEVICE(ctx);
  VulkanOps ops(*ctx);
  AttentionParams p;
  p.n_head = 4;
  p.n_head_kv = 2;
  p.head_dim_k = 32;
  p.head_dim_v = 32;
  p.scale = 1.0f / std::sqrt(32.0f);
  const uint32_t block_tokens = 8, n_kv = 21, n_blocks = 3, pool_blocks = 5;
  const std::vector<uint32_t> table = {4, 0, 2};  // sequence block -> pool block
  const size_t row = static_cast<size_t>(p.n_head_kv) * p.head_dim_k;
  const auto kf = kernels::test::random_floats(pool_blocks * block_tokens * row, 41);
  const auto vf = kernels::test::random_floats(pool_blocks * block_tokens * row, 42);
  std::vector<uint16_t> kh(kf.size()), vh(vf.size());
  for (size_t i = 0; i < kf.size(); ++i) {
    kh[i] = fp32_to_fp16(kf[i]);
    vh[i] = fp32_to_fp16(vf[i]);
  }
  // Pool blocks in chunks of two: blocks 0-1 in one allocation, 2-3 in a second, 4 alone in a
  // third half as long; each block's slot holds its K rows, then its V rows.
  const uint32_t per_chunk = 2, n_chunks = 3;
  const size_t bytes = block_tokens * row * 2;  // one block's K (or V) rows
  std::vector<Buffer> chunk_bufs;
  std::vector<uint64_t> addrs;
  for (uint32_t c = 0; c < n_chunks; ++c) {
    const uint32_t slots = std::min(per_chunk, pool_blocks - c * per_chunk);
    auto cb = ctx->alloc(slots * 2 * bytes);
    ASSERT_TRUE(cb.ok());
    for (uint32_t slot = 0; slot < slots; ++slot) {
      const size_t src = (c * per_chunk + slot) * block_tokens * row;
      ASSERT_TRUE(ctx->upload(*cb, slot * 2 * bytes, kh.data() + src, bytes).ok());
      ASSERT_TRUE(ctx->upload(*cb, slot * 2 * bytes + bytes, vh.data() + src, bytes).ok());
    }
    addrs.push_back(ctx->address(*cb).value());
    chunk_bufs.push_back(std::move(*cb));
  }
  auto ab = ctx->alloc(addrs.size() * 8), tb = ctx->alloc(table.size() * 4);
  ASSERT_TRUE(ab.ok() && tb.ok());
  ASSERT_TRUE(ctx->upload(*ab, 0, addrs.data(), addrs.size() * 8).ok());
  ASSERT_TRUE(ctx->upload(*tb, 0, table.data(), table.size() * 4).ok());
  DeviceKv dkv{&*ab, &*tb, block_tokens, 0, per_chunk, 0, static_cast<uint32_t>(bytes / 4),
               static_cast<uint32_t>(2 * bytes / 4)};
  std::vector<const uint8_t*> kblocks, vblocks;
  for (uint32_t b = 0; b < n_blocks; ++b) {
    kblocks.push_back(reinterpret_cast<const uint8_t*>(kh.data() + table[b] * block_tokens * row));
    vblocks.push_back(reinterpret_cast<const uint8_t*>(vh.data() + table[b] * block_tokens * row));
  }
  KvSpan span{kblocks.data(), vblocks.data(), static_cast<int32_t>(block_tokens), row * 2, row * 2, DType::kF16};
  const std::vector<int32_t> pos = {5, 17, 20};  // causal: each sees keys 0..pos
  const uint32_t n_tokens = static_cast<uint32_t>(pos.size());
  const auto q = kernels::test::random_floats(n_tokens * p.n_head * p.head_dim_k, 43);
  Buffer qb = upload_floats(*ctx, q);
  auto pb = ctx->alloc(pos.size() * 4);
  ASSERT_TRUE(pb.ok());
  ASSERT_TRUE(ctx->upload(*pb, 0, pos.data(), pos.size() * 4).ok());
  Buffer scores = upload_floats(*ctx, std::vector<float>(n_tokens * p.n_head * n_kv));
  Buffer out = upload_floats(*ctx, std::vector<float>(n_tokens * p.n_head * p.head_dim_v));
  for (int32_t window : {0, 6}) {
    p.window = window;
    std::vector<float> want(n_tokens * p.n_head * p.head_dim_v), scratch;
    for (uint32_t t = 0; t < n_tokens; ++t) {
      attention(q.data() + t * p.n_head * p.head_dim_k, pos[t], n_kv, span, p, want.data() + t * p.n_head * p.head_dim_v,
                scratch);
    }
    for (bool sg : reduction_modes(*ctx)) {
      ops.set_use_subgroups(sg);
      // Whole ranges, then keys split in ranges of 4 positions (6 ranges, merged after; the
      // first token's causal range leaves later ranges empty).
      for (uint32_t split : {0u, 4u}) {
        ops.set_attention_split(split);
        const size_t part_floats = ops.attention_partial_floats(n_tokens, n_kv, p);
        EXPECT_EQ(part_floats > 0, split > 0);
        Buffer partials = upload_floats(*ctx, std::vector<float>(std::max<size_t>(part_floats, 1)));
        Buffer fresh = upload_floats(*ctx, std::vector<float>(n_tokens * p.n_head * p.head_dim_v));
        Recorder rec(*ctx);
        ASSERT_TRUE(ops.attention(rec, qb, *pb, 0, n_tokens, dkv, n_kv, p, scores, fresh, &partials).ok());
        ASSERT_TRUE(rec.run().ok());
        const double err = max_abs_diff(download_floats(*ctx, fresh, want.size()), want);
        std::cout << "[ max err  ] attention window=" << window << (sg ? " subgroup" : " shared")
                  << (split > 0 ? " split" : "") << ": " << err << "\n";
        EXPECT_LT(err, 2e-3);
      }
      ops.set_attention_split(256);
    }
  }
}

// A KV store's bindings on the device: the one chunk's address (the pool buffer), the block
// table and the positions.
struct KvBindings {
  Buffer chunks, table, positions;
};
KvBindings kv_bindings(Context& ctx, const Buffer& pool, const std::vector<uint32_t>& table,
                       const std::vector<int32_t>& pos) {
  const uint64_t addr = ctx.address(pool).value();
  auto ab = ctx.alloc(8), tb = ctx.alloc(table.size() * 4), pb = ctx.alloc(pos.size() * 4);
  EXPECT_TRUE(ab.ok() && tb.ok() && pb.ok());
  EXPECT_TRUE(ctx.upload(*ab, 0, &addr, 8).ok());
  EXPECT_TRUE(ctx.upload(*tb, 0, table.data(), table.size() * 4).ok());
  EXPECT_TRUE(ctx.upload(*pb, 0, pos.data(), pos.size() * 4).ok());
  return {std::move(*ab), std::move(*tb), std::move(*pb)};
}

TEST(VulkanOps, KvStoreWritesRowsThroughTheBlockTable) {
  HEARTH_REQUIRE_DEVICE(ctx);
  VulkanOps ops(*ctx);
  const uint32_t row = 6, block_tokens = 4, pool_blocks = 3;
  const std::vector<uint32_t> table = {9, 9, 2, 0};  // entries 2.. are this sequence's: blocks 2, 0
  const std::vector<int32_t> pos = {3, 4, 5};        // rows 2*4+3, 0*4+0, 0*4+1 of the pool
  const auto x = kernels::test::random_floats(pos.size() * row, 51);
  Buffer xb = upload_floats(*ctx, x);
  // One chunk of all pool blocks: after 1 word of padding, a slot per block of its K rows then
  // its V rows. The rows go into V rows of block 0's slot; everything else stays zero.
  const uint32_t rows_words = block_tokens * row / 2, slot_words = 2 * rows_words;
  Buffer poolb = upload_floats(*ctx, std::vector<float>(1 + pool_blocks * slot_words, 0.0f));
  const KvBindings kb = kv_bindings(*ctx, poolb, table, pos);
  DeviceKv kv{&kb.chunks, &kb.table, block_tokens, 2, pool_blocks, 1, 1 + rows_words, slot_words};
  Recorder rec(*ctx);
  ASSERT_TRUE(ops.kv_store(rec, xb, kb.positions, 1, 2, row, kv, true).ok());  // tokens 1 and 2 only
  ASSERT_TRUE(rec.run().ok());
  std::vector<uint16_t> all(2 + 2 * pool_blocks * slot_words);
  ASSERT_TRUE(ctx->download(poolb, 0, all.data(), all.size() * 2).ok());
  const size_t v0 = 2 + 2 * rows_words;  // block 0's V rows, in halves
  for (size_t i = 0; i < all.size(); ++i) {
    float want = 0.0f;
    if (i >= v0 && i < v0 + 2 * row) want = x[(1 + (i - v0) / row) * row + (i - v0) % row];
    ASSERT_EQ(all[i], fp32_to_fp16(want)) << "half " << i;
  }
}

// K and V rows of different widths in one dispatch: each lands in its own region of the block
// slots; nothing else is written.
TEST(VulkanOps, KvStorePairWritesKeysAndValuesInOneDispatch) {
  HEARTH_REQUIRE_DEVICE(ctx);
  VulkanOps ops(*ctx);
  const uint32_t k_row = 6, v_row = 4, block_tokens = 4, pool_blocks = 2;
  const std::vector<uint32_t> table = {1, 0};
  const std::vector<int32_t> pos = {2, 3, 4};  // block 1 rows 2 and 3, block 0 row 0
  const auto k = kernels::test::random_floats(pos.size() * k_row, 52);
  const auto v = kernels::test::random_floats(pos.size() * v_row, 53);
  Buffer kbuf = upload_floats(*ctx, k), vbuf = upload_floats(*ctx, v);
  const uint32_t k_words = block_tokens * k_row / 2, v_words = block_tokens * v_row / 2;
  const uint32_t slot_words = k_words + v_words;
  Buffer poolb = upload_floats(*ctx, std::vector<float>(pool_blocks * slot_words, 0.0f));
  const KvBindings kb = kv_bindings(*ctx, poolb, table, pos);
  DeviceKv kv{&kb.chunks, &kb.table, block_tokens, 0, pool_blocks, 0, k_words, slot_words};
  const uint64_t before = ctx->counters().dispatches;
  Recorder rec(*ctx);
  ASSERT_TRUE(ops.kv_store_pair(rec, kbuf, vbuf, kb.positions, 0, 3, k_row, v_row, kv).ok());
  ASSERT_TRUE(rec.run().ok());
  EXPECT_EQ(ctx->counters().dispatches - before, 1u);
  std::vector<uint16_t> all(2 * pool_blocks * slot_words);
  ASSERT_TRUE(ctx->download(poolb, 0, all.data(), all.size() * 2).ok());
  std::vector<float> want(all.size(), 0.0f);
  for (uint32_t t = 0; t < pos.size(); ++t) {
    const uint32_t block = table[pos[t] / block_tokens], row = pos[t] % block_tokens;
    const size_t slot = size_t{2} * block * slot_words;  // in halves
    for (uint32_t e = 0; e < k_row; ++e) want[slot + row * k_row + e] = k[t * k_row + e];
    for (uint32_t e = 0; e < v_row; ++e) want[slot + 2 * k_words + row * v_row + e] = v[t * v_row + e];
  }
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], fp32_to_fp16(want[i])) << "half " << i;
}

}  // namespace
}  // namespace hearth::kernels::vulkan
