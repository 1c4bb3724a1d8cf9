// The whole-matrix kernels (GemmKernel) of every variant that has them against the scalar
// reference matmul: bit-identical for the integer-dot types (they do the reference's integer
// sums and its float operations in its order), within float rounding for F16. Shapes cover
// panels with missing rows, block runs with a remainder, token tiles with a remainder and more
// tokens than one chunk.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "tensor/quantize.h"

namespace hearth::kernels {
namespace {

using test::random_floats;

struct Case {
  DType type;
  int64_t cols;
  bool exact;
};

std::vector<float> run_matmul(CpuVariant v, const WeightView& w, const std::vector<float>& x, int64_t n_tokens,
                              ThreadPool& pool) {
  test::VariantScope scope(v);
  MatmulScratch scratch;
  std::vector<float> y(static_cast<size_t>(w.rows * n_tokens), -1.0f);
  EXPECT_TRUE(matmul(w, x.data(), n_tokens, y.data(), pool, scratch).ok());
  return y;
}

TEST(Gemm, MatchesScalarReference) {
  const Case cases[] = {{DType::kQ4_0, 32 * 37, true}, {DType::kQ5_0, 32 * 37, true}, {DType::kQ8_0, 32 * 37, true},
                        {DType::kQ4_0, 64, true},        {DType::kQ4_K, 256 * 5, true},  {DType::kQ6_K, 256 * 5, true},
                        {DType::kQ6_K, 256, true},       {DType::kF16, 16 * 37, false},  {DType::kF16, 1000, false}};
  const int64_t rows = 37;
  ThreadPool pool(2);
  int checked = 0;
  for (const Case& c : cases) {
    const std::vector<float> wf = random_floats(static_cast<size_t>(rows * c.cols), 300 + static_cast<uint32_t>(c.type));
    const size_t row_bytes = *dtype_row_bytes(c.type, c.cols);
    std::vector<uint8_t> wq(row_bytes * rows);
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(quantize_row(c.type, wf.data() + r * c.cols, wq.data() + r * row_bytes, c.cols).ok());
    }
    const WeightView w{c.type, wq.data(), c.cols, rows, row_bytes};
    for (int64_t n_tokens : {1, 2, 7, 8, 9, 300}) {
      const std::vector<float> x = random_floats(static_cast<size_t>(c.cols * n_tokens), 11, -3.0f, 3.0f);
      const std::vector<float> want = run_matmul(CpuVariant::kScalar, w, x, n_tokens, pool);
      for (CpuVariant v : test::variants_under_test()) {
        if (kernels_for(v).gemm[static_cast<int>(c.type)].run == nullptr) continue;
        SCOPED_TRACE(test::variant_label(v) + " " + std::string(dtype_name(c.type)) + " cols=" +
                     std::to_string(c.cols) + " tokens=" + std::to_string(n_tokens));
        const std::vector<float> got = run_matmul(v, w, x, n_tokens, pool);
        for (size_t i = 0; i < got.size(); ++i) {
          if (c.exact) {
            ASSERT_EQ(got[i], want[i]) << "at token " << i / rows << " row " << i % rows;
          } else {
            ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i]))) << "at " << i;
          }
        }
        ++checked;
      }
    }
  }
  if (!test::variants_under_test().empty() && cpu_variant_supported(CpuVariant::kAvx512)) {
    EXPECT_GT(checked, 0);
  }
}

}  // namespace
}  // namespace hearth::kernels
