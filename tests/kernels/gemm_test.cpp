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
                        {DType::kQ6_K, 256, true},       {DType::kF16, 16 * 37, false},  {DType::kF16, 1000, false},
                        {DType::kF16, 2048 + 16 * 37, false},  // F16: two column runs, the second short
                        {DType::kIQ4_NL, 32 * 37, true}, {DType::kMXFP4, 32 * 37, true}, {DType::kMXFP4, 64, true},
                        {DType::kIQ4_XS, 256 * 5, true}, {DType::kIQ4_XS, 256, true}};
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

namespace hearth::kernels {
namespace {

// matmul_multi gives exactly what one matmul per matrix gives, for matrices that share an
// activation layout (Q4_K + Q6_K), that need different ones (Q4_0 + Q8_0) and for types
// without a whole-matrix kernel (Q4_1, which makes the call fall back to separate matmuls).
TEST(MatmulMulti, EqualsSeparateMatmuls) {
  const int64_t cols = 512;
  ThreadPool pool(2);
  const std::vector<std::vector<std::pair<DType, int64_t>>> groups = {
      {{DType::kQ4_K, 48}, {DType::kQ6_K, 16}, {DType::kQ4_K, 21}},
      {{DType::kQ4_0, 32}, {DType::kQ8_0, 7}},
      {{DType::kQ4_0, 16}, {DType::kQ4_1, 16}}};
  for (const auto& group : groups) {
    std::vector<std::vector<uint8_t>> data;
    std::vector<WeightView> views;
    for (const auto& [type, rows] : group) {
      const std::vector<float> wf = random_floats(static_cast<size_t>(rows * cols), 500 + static_cast<uint32_t>(rows));
      const size_t row_bytes = *dtype_row_bytes(type, cols);
      data.emplace_back(row_bytes * static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_TRUE(quantize_row(type, wf.data() + r * cols, data.back().data() + r * row_bytes, cols).ok());
      }
      views.push_back({type, data.back().data(), cols, rows, row_bytes});
    }
    for (int64_t n_tokens : {1, 5}) {
      const std::vector<float> x = random_floats(static_cast<size_t>(cols * n_tokens), 21, -2.0f, 2.0f);
      for (CpuVariant v : test::variants_under_test()) {
        test::VariantScope scope(v);
        MatmulScratch scratch;
        std::vector<std::vector<float>> together(views.size()), alone(views.size());
        std::vector<MatmulJob> jobs;
        for (size_t j = 0; j < views.size(); ++j) {
          together[j].assign(static_cast<size_t>(views[j].rows * n_tokens), -1.0f);
          alone[j].assign(together[j].size(), -2.0f);
          jobs.push_back({&views[j], together[j].data()});
          ASSERT_TRUE(matmul(views[j], x.data(), n_tokens, alone[j].data(), pool, scratch).ok());
        }
        ASSERT_TRUE(matmul_multi(jobs, x.data(), n_tokens, pool, scratch).ok());
        for (size_t j = 0; j < views.size(); ++j) {
          SCOPED_TRACE(test::variant_label(v) + " job " + std::to_string(j) + " tokens " + std::to_string(n_tokens));
          EXPECT_EQ(together[j], alone[j]);
        }
      }
    }
  }
  WeightView a{DType::kQ4_0, nullptr, 64, 1, 36};
  std::vector<uint8_t> bytes(36);
  a.data = bytes.data();
  WeightView b{DType::kQ4_0, bytes.data(), 32, 1, 18};
  std::vector<float> x(64), y0(1), y1(1);
  const MatmulJob mixed[] = {{&a, y0.data()}, {&b, y1.data()}};
  MatmulScratch scratch;
  EXPECT_FALSE(matmul_multi(mixed, x.data(), 1, pool, scratch).ok());
}

}  // namespace
}  // namespace hearth::kernels

namespace hearth::kernels {
namespace {

// matmul_grouped gives exactly what one matmul per job gives: matrices of different widths
// and types, each over its own tokens (as a decode step's chosen experts: gate and up sharing
// one input, down over another), and a type without a whole-matrix kernel (Q4_1: the call
// falls back to separate matmuls).
TEST(MatmulGrouped, EqualsSeparateMatmuls) {
  ThreadPool pool(2);
  struct Spec {
    DType type;
    int64_t cols, rows, n_tokens;
    int input;  // jobs with the same input index share x
  };
  const std::vector<std::vector<Spec>> groups = {
      {{DType::kQ8_0, 256, 48, 1, 0}, {DType::kQ8_0, 256, 48, 1, 0}, {DType::kQ8_0, 256, 40, 3, 1},
       {DType::kQ8_0, 256, 40, 3, 1}, {DType::kQ8_0, 64, 21, 2, 2}},
      {{DType::kQ4_K, 512, 32, 2, 0}, {DType::kQ6_K, 512, 17, 2, 0}, {DType::kMXFP4, 512, 16, 1, 1}},
      {{DType::kQ4_0, 64, 16, 1, 0}, {DType::kQ4_1, 64, 16, 1, 1}}};
  for (const auto& group : groups) {
    std::vector<std::vector<uint8_t>> data;
    std::vector<WeightView> views;
    std::vector<std::vector<float>> inputs(group.size());
    for (const Spec& s : group) {
      const std::vector<float> wf = random_floats(static_cast<size_t>(s.rows * s.cols), 700 + static_cast<uint32_t>(s.rows));
      const size_t row_bytes = *dtype_row_bytes(s.type, s.cols);
      data.emplace_back(row_bytes * static_cast<size_t>(s.rows));
      for (int64_t r = 0; r < s.rows; ++r) {
        ASSERT_TRUE(quantize_row(s.type, wf.data() + r * s.cols, data.back().data() + r * row_bytes, s.cols).ok());
      }
      views.push_back({s.type, data.back().data(), s.cols, s.rows, row_bytes});
      auto& in = inputs[static_cast<size_t>(s.input)];
      if (in.empty()) in = random_floats(static_cast<size_t>(s.cols * s.n_tokens), 31 + static_cast<uint32_t>(s.input), -2.0f, 2.0f);
    }
    for (CpuVariant v : test::variants_under_test()) {
      test::VariantScope scope(v);
      MatmulScratch scratch;
      std::vector<std::vector<float>> together(views.size()), alone(views.size());
      std::vector<GroupedMatmulJob> jobs;
      for (size_t j = 0; j < views.size(); ++j) {
        const Spec& s = group[j];
        const float* x = inputs[static_cast<size_t>(s.input)].data();
        together[j].assign(static_cast<size_t>(s.rows * s.n_tokens), -1.0f);
        alone[j].assign(together[j].size(), -2.0f);
        jobs.push_back({&views[j], x, s.n_tokens, together[j].data()});
        ASSERT_TRUE(matmul(views[j], x, s.n_tokens, alone[j].data(), pool, scratch).ok());
      }
      ASSERT_TRUE(matmul_grouped(jobs, pool, scratch).ok());
      for (size_t j = 0; j < views.size(); ++j) {
        SCOPED_TRACE(test::variant_label(v) + " job " + std::to_string(j));
        EXPECT_EQ(together[j], alone[j]);
      }
    }
  }
  std::vector<uint8_t> bytes(36);
  WeightView bad{DType::kQ4_0, bytes.data(), 64, 1, 18};  // row_bytes disagree with the width
  std::vector<float> x(64), y(1);
  const GroupedMatmulJob job{&bad, x.data(), 1, y.data()};
  MatmulScratch scratch;
  EXPECT_FALSE(matmul_grouped(std::span<const GroupedMatmulJob>(&job, 1), pool, scratch).ok());
}

// A decode pass (1-2 tokens) hands each thread ranges of panels that span jobs, claims the next
// range before a range's last panel and prefetches across job and range ends: every panel of
// every job is computed once, as the scalar reference computes it, whatever the number of
// threads, with many small and uneven jobs (a decode step's experts), GGUF rows and interleaved
// panels mixed in one pass.
TEST(MatmulGrouped, DecodeRangesCoverEveryPanelOnce) {
  struct Spec {
    DType type;
    int64_t cols, rows;
    bool interleave;
  };
  std::vector<Spec> specs;
  for (int j = 0; j < 24; ++j) {
    const DType type = j % 3 == 2 ? DType::kQ6_K : DType::kQ4_K;
    const int64_t rows = j % 5 == 4 ? 16 * (1 + j % 4) + 5 : 16 * (1 + (j * 7) % 9);  // some end in a short panel
    specs.push_back({type, j % 4 == 3 ? 768 : 512, rows, rows % 16 == 0 && j % 2 == 0});
  }
  std::vector<std::vector<uint8_t>> data;
  std::vector<WeightView> gguf;
  for (size_t j = 0; j < specs.size(); ++j) {
    const Spec& s = specs[j];
    const std::vector<float> wf = random_floats(static_cast<size_t>(s.rows * s.cols), 900 + static_cast<uint32_t>(j));
    const size_t row_bytes = *dtype_row_bytes(s.type, s.cols);
    data.emplace_back(row_bytes * static_cast<size_t>(s.rows));
    for (int64_t r = 0; r < s.rows; ++r) {
      ASSERT_TRUE(quantize_row(s.type, wf.data() + r * s.cols, data.back().data() + r * row_bytes, s.cols).ok());
    }
    gguf.push_back({s.type, data.back().data(), s.cols, s.rows, row_bytes});
  }
  for (int64_t n_tokens : {1, 2}) {
    std::vector<std::vector<float>> inputs, want;
    for (size_t j = 0; j < specs.size(); ++j) {
      inputs.push_back(random_floats(static_cast<size_t>(specs[j].cols * n_tokens), 50 + static_cast<uint32_t>(j), -2.0f, 2.0f));
      ThreadPool one(1);
      want.push_back(run_matmul(CpuVariant::kScalar, gguf[j], inputs[j], n_tokens, one));
    }
    for (CpuVariant v : test::variants_under_test()) {
      test::VariantScope scope(v);
      // The interleaved copies this variant multiplies (where it has an interleaved kernel).
      std::vector<std::vector<uint8_t>> interleaved(specs.size());
      std::vector<WeightView> views = gguf;
      for (size_t j = 0; j < specs.size(); ++j) {
        if (!specs[j].interleave || !wants_interleaved(gguf[j])) continue;
        interleaved[j].assign(data[j].size(), 0);
        interleave_weight(gguf[j], 0, gguf[j].rows / kGemmPanelRows, interleaved[j].data());
        views[j].data = interleaved[j].data();
        views[j].interleaved = true;
      }
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        MatmulScratch scratch;
        std::vector<std::vector<float>> got(specs.size());
        std::vector<GroupedMatmulJob> jobs;
        for (size_t j = 0; j < specs.size(); ++j) {
          got[j].assign(want[j].size(), -1.0f);
          jobs.push_back({&views[j], inputs[j].data(), n_tokens, got[j].data()});
        }
        ASSERT_TRUE(matmul_grouped(jobs, pool, scratch).ok());
        for (size_t j = 0; j < specs.size(); ++j) {
          SCOPED_TRACE(test::variant_label(v) + " threads " + std::to_string(threads) + " tokens " +
                       std::to_string(n_tokens) + " job " + std::to_string(j));
          EXPECT_EQ(got[j], want[j]);
        }
      }
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
