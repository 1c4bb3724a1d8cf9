// The interleaved weight layout: interleaving is a byte permutation that deinterleaving undoes
// row by row, the SIMD interleavers write exactly the reference's bytes, and matmul / get_row on
// an interleaved matrix give exactly what they give on its GGUF rows, for every token count.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/interleaved_layout.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "tensor/quantize.h"

namespace hearth::kernels {
namespace {

using test::random_floats;

struct Shape {
  DType type;
  int64_t cols;
};

// Odd block counts (a last short group) and even ones, for every layout.
const Shape kShapes[] = {{DType::kQ4_0, 32 * 3},  {DType::kQ4_0, 32 * 64}, {DType::kQ8_0, 32 * 5},
                         {DType::kQ8_0, 32 * 2},  {DType::kQ4_K, 256 * 3}, {DType::kQ6_K, 256 * 3},
                         {DType::kQ6_K, 256 * 2}, {DType::kF16, 16 * 5},   {DType::kF16, 2048 + 16 * 3}};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> interleave_all(DType type, const std::vector<uint8_t>& rows, size_t row_bytes, int64_t cols,
                                    int64_t n_rows) {
  std::vector<uint8_t> out(rows.size(), 0);
  for (int64_t p = 0; p < n_rows / kInterleavedPanelRows; ++p) {
    interleave_panel(type, rows.data(), row_bytes, cols, p, out.data() + static_cast<size_t>(p * 16) * row_bytes);
  }
  return out;
}

TEST(InterleavedLayout, DeinterleavingGivesBackEveryRow) {
  const int64_t n_rows = 48;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::string(dtype_name(s.type)) + " cols=" + std::to_string(s.cols));
    ASSERT_TRUE(interleaved_layout_supports(s.type, s.cols, n_rows));
    const size_t row_bytes = *dtype_row_bytes(s.type, s.cols);
    const std::vector<uint8_t> rows = random_bytes(row_bytes * n_rows, static_cast<uint32_t>(s.cols));
    const std::vector<uint8_t> il = interleave_all(s.type, rows, row_bytes, s.cols, n_rows);
    EXPECT_NE(il, rows);
    std::vector<uint8_t> back(row_bytes);
    for (int64_t r = 0; r < n_rows; ++r) {
      deinterleave_row(s.type, il.data(), row_bytes, s.cols, r, back.data());
      ASSERT_EQ(0, std::memcmp(back.data(), rows.data() + r * row_bytes, row_bytes)) << "row " << r;
    }
  }
}

TEST(InterleavedLayout, SupportsWholePanelsOfKnownTypesOnly) {
  EXPECT_FALSE(interleaved_layout_supports(DType::kQ4_0, 64, 40));   // a short last panel
  EXPECT_FALSE(interleaved_layout_supports(DType::kQ4_0, 64, 0));
  EXPECT_FALSE(interleaved_layout_supports(DType::kQ4_1, 64, 32));   // no layout for the type
  EXPECT_FALSE(interleaved_layout_supports(DType::kF16, 24, 32));    // not whole 16-column steps
  EXPECT_TRUE(interleaved_layout_supports(DType::kQ8_0, 64, 32));
}

TEST(InterleavedLayout, SimdInterleaversWriteTheReferenceBytes) {
  const int64_t n_rows = 32;
  int checked = 0;
  for (CpuVariant v : test::variants_under_test()) {
    for (const Shape& s : kShapes) {
      const auto fast = kernels_for(v).gemm[static_cast<int>(s.type)].interleave_panel;
      if (fast == nullptr) continue;
      SCOPED_TRACE(test::variant_label(v) + " " + std::string(dtype_name(s.type)) + " cols=" + std::to_string(s.cols));
      const size_t row_bytes = *dtype_row_bytes(s.type, s.cols);
      const std::vector<uint8_t> rows = random_bytes(row_bytes * n_rows, 7);
      const std::vector<uint8_t> want = interleave_all(s.type, rows, row_bytes, s.cols, n_rows);
      std::vector<uint8_t> got(rows.size(), 0);
      for (int64_t p = 0; p < n_rows / 16; ++p) {
        fast(rows.data(), row_bytes, s.cols, p, got.data() + static_cast<size_t>(p * 16) * row_bytes);
      }
      EXPECT_EQ(got, want);
      ++checked;
    }
  }
  if (cpu_variant_supported(CpuVariant::kAvx512) && !test::variants_under_test().empty()) {
    EXPECT_GT(checked, 0);
  }
}

// Quantized rows of random weights (the kernels need real blocks: finite scales).
std::vector<uint8_t> quantized_matrix(DType type, int64_t cols, int64_t rows, uint32_t seed) {
  const std::vector<float> wf = random_floats(static_cast<size_t>(rows * cols), seed);
  const size_t row_bytes = *dtype_row_bytes(type, cols);
  std::vector<uint8_t> wq(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(quantize_row(type, wf.data() + r * cols, wq.data() + r * row_bytes, cols).ok());
  }
  return wq;
}

TEST(InterleavedLayout, MatmulAndGetRowEqualTheGgufRows) {
  const int64_t rows = 48;
  ThreadPool pool(2);
  int checked = 0;
  for (CpuVariant v : test::variants_under_test()) {
    test::VariantScope scope(v);
    for (const Shape& s : kShapes) {
      const size_t row_bytes = *dtype_row_bytes(s.type, s.cols);
      const std::vector<uint8_t> wq = quantized_matrix(s.type, s.cols, rows, 40 + static_cast<uint32_t>(s.cols));
      const WeightView w{s.type, wq.data(), s.cols, rows, row_bytes};
      if (!wants_interleaved(w)) {
        EXPECT_EQ(active_kernels().gemm[static_cast<int>(s.type)].run_interleaved, nullptr);
        continue;
      }
      SCOPED_TRACE(test::variant_label(v) + " " + std::string(dtype_name(s.type)) + " cols=" + std::to_string(s.cols));
      std::vector<uint8_t> il(wq.size(), 0);
      interleave_weight(w, 0, rows / 16, il.data());
      WeightView wi = w;
      wi.data = il.data();
      wi.interleaved = true;
      EXPECT_FALSE(wants_interleaved(wi));
      for (int64_t n_tokens : {1, 2, 3, 8, 9, 300}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(s.cols * n_tokens), 12, -3.0f, 3.0f);
        MatmulScratch scratch;
        std::vector<float> want(static_cast<size_t>(rows * n_tokens), -1.0f), got(want.size(), -2.0f);
        ASSERT_TRUE(matmul(w, x.data(), n_tokens, want.data(), pool, scratch).ok());
        ASSERT_TRUE(matmul(wi, x.data(), n_tokens, got.data(), pool, scratch).ok());
        ASSERT_EQ(got, want) << "tokens " << n_tokens;
      }
      std::vector<float> want(static_cast<size_t>(s.cols)), got(want.size());
      for (int64_t r : {int64_t{0}, int64_t{17}, rows - 1}) {
        ASSERT_TRUE(get_row(w, r, want.data()).ok());
        ASSERT_TRUE(get_row(wi, r, got.data()).ok());
        ASSERT_EQ(got, want) << "row " << r;
      }
      ++checked;
    }
  }
  if (cpu_variant_supported(CpuVariant::kAvx512) && !test::variants_under_test().empty()) {
    EXPECT_GT(checked, 0);
  }
}

TEST(InterleavedLayout, VariantsWithoutTheKernelRefuseInterleavedWeights) {
  test::VariantScope scope(CpuVariant::kScalar);
  std::vector<uint8_t> bytes(16 * 18, 0);
  WeightView w{DType::kQ4_0, bytes.data(), 32, 16, 18};
  EXPECT_FALSE(wants_interleaved(w));
  w.interleaved = true;
  std::vector<float> x(32, 1.0f), y(16);
  ThreadPool pool(1);
  MatmulScratch scratch;
  const auto st = matmul(w, x.data(), 1, y.data(), pool, scratch);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("interleaved"), std::string::npos);
}

}  // namespace
}  // namespace hearth::kernels
