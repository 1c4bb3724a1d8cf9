// matmul and get_row: every weight type in every CPU variant against a double-precision
// product of the dequantized weights with the dequantized (converted) activations, on random
// matrices and on real tensors from the shared test models; plus the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gguf/gguf_file.h"
#include "kernel_test_util.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "tensor/quantize.h"
#include "common/test_paths.h"

namespace hearth::kernels {
namespace {

using test::random_floats;

// Double-precision reference: y[t][r] = sum_c deq(W)[r][c] * deq(convert(x[t]))[c], with a
// bound from the sum of |products| (float accumulation) and the F16 rounding of Q8_1's sums.
void reference_matmul(const WeightView& w, const float* x, int64_t n_tokens, std::vector<double>* y,
                      std::vector<double>* tol) {
  const DType at = activation_type(w.type);
  const int64_t n = w.cols;
  std::vector<float> a_deq(static_cast<size_t>(n * n_tokens));
  std::vector<uint8_t> act(*dtype_row_bytes(at == DType::kF32 ? DType::kF32 : at, static_cast<uint64_t>(n)));
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (w.type == DType::kF32) {
      std::copy(x + t * n, x + (t + 1) * n, a_deq.begin() + t * n);
    } else {
      kernels_for(CpuVariant::kScalar).quantize_act[static_cast<int>(at)](x + t * n, act.data(), n);
      ASSERT_TRUE(dequantize_row(at, act.data(), a_deq.data() + t * n, n).ok());
    }
  }
  const bool with_min = w.type == DType::kQ4_1 || w.type == DType::kQ5_1;
  y->assign(static_cast<size_t>(w.rows * n_tokens), 0.0);
  tol->assign(y->size(), 0.0);
  std::vector<float> row(static_cast<size_t>(n));
  for (int64_t r = 0; r < w.rows; ++r) {
    ASSERT_TRUE(dequantize_row(w.type, w.data + r * w.row_bytes, row.data(), n).ok());
    for (int64_t t = 0; t < n_tokens; ++t) {
      double s = 0.0, a = 0.0;
      for (int64_t c = 0; c < n; ++c) {
        const double p = static_cast<double>(row[c]) * a_deq[t * n + c];
        s += p;
        a += std::fabs(p);
      }
      (*y)[t * w.rows + r] = s;
      // Q8_1's F16-rounded block sums move the min term by up to 2^-11 relative
      (*tol)[t * w.rows + r] = (with_min ? 2e-3 : 2e-5) * a + 1e-5;
    }
  }
}

const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0, DType::kQ4_1,
                        DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ2_K, DType::kQ3_K,
                        DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS,
                        DType::kMXFP4};

TEST(Matmul, RandomMatricesEveryTypeEveryVariant) {
  const int64_t cols = 512, rows = 37;
  ThreadPool pool(3);
  for (DType type : kTypes) {
    const std::vector<float> wf = random_floats(static_cast<size_t>(rows * cols), 100 + static_cast<uint32_t>(type));
    const size_t row_bytes = *dtype_row_bytes(type, cols);
    std::vector<uint8_t> wq(row_bytes * rows);
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(quantize_row(type, wf.data() + r * cols, wq.data() + r * row_bytes, cols).ok());
    }
    const WeightView w{type, wq.data(), cols, rows, row_bytes};
    for (int64_t n_tokens : {1, 5}) {
      const std::vector<float> x = random_floats(static_cast<size_t>(cols * n_tokens), 7, -2.0f, 2.0f);
      std::vector<double> want, tol;
      reference_matmul(w, x.data(), n_tokens, &want, &tol);
      for (CpuVariant v : test::variants_under_test()) {
        SCOPED_TRACE(test::variant_label(v) + " " + std::string(dtype_name(type)) + " tokens=" +
                     std::to_string(n_tokens));
        test::VariantScope scope(v);
        MatmulScratch scratch;
        std::vector<float> y(static_cast<size_t>(rows * n_tokens), -1.0f);
        ASSERT_TRUE(matmul(w, x.data(), n_tokens, y.data(), pool, scratch).ok());
        for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want[i], tol[i]) << "at " << i;
      }
    }
  }
}

// A batch must give exactly the numbers single tokens give (vec_dot_x4 vs vec_dot). Batches of
// 3 and 6 take the kernels' few-token (decode) paths, 11 and 13 their batched ones (13: the F16
// kernel's converted-run path).
TEST(Matmul, BatchEqualsSingleTokensBitForBit) {
  const int64_t rows = 21;
  ThreadPool pool(2);
  for (int64_t n_tokens : {3, 6, 11, 13}) {
    // 1000 columns (float types only) exercise the vector loops' tails; 768 and 2304 the F16
    // kernel's column runs (512 columns in batches, 2048 in decode; the second run short)
    for (int64_t cols : {768, 1000, 2304}) {
      for (DType type : kTypes) {
        if (!dtype_row_bytes(type, static_cast<uint64_t>(cols)).ok()) continue;
        const std::vector<float> x = random_floats(static_cast<size_t>(cols * n_tokens), 17, -2.0f, 2.0f);
        const std::vector<float> wf = random_floats(static_cast<size_t>(rows * cols), 200 + static_cast<uint32_t>(type));
        const size_t row_bytes = *dtype_row_bytes(type, cols);
        std::vector<uint8_t> wq(row_bytes * rows);
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_TRUE(quantize_row(type, wf.data() + r * cols, wq.data() + r * row_bytes, cols).ok());
        }
        const WeightView w{type, wq.data(), cols, rows, row_bytes};
        for (CpuVariant v : test::variants_under_test()) {
          SCOPED_TRACE(test::variant_label(v) + " " + std::string(dtype_name(type)) + " cols=" + std::to_string(cols) +
                       " tokens=" + std::to_string(n_tokens));
          test::VariantScope scope(v);
          MatmulScratch scratch;
          std::vector<float> batch(static_cast<size_t>(rows * n_tokens));
          ASSERT_TRUE(matmul(w, x.data(), n_tokens, batch.data(), pool, scratch).ok());
          for (int64_t t = 0; t < n_tokens; ++t) {
            std::vector<float> single(static_cast<size_t>(rows));
            ASSERT_TRUE(matmul(w, x.data() + t * cols, 1, single.data(), pool, scratch).ok());
            for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(batch[t * rows + r], single[r]) << "token " << t << " row " << r;
          }
        }
      }
    }
  }
}

TEST(Matmul, RejectsBadArguments) {
  ThreadPool pool(1);
  MatmulScratch scratch;
  std::vector<uint8_t> data(72 * 4);  // 4 rows of 128 Q4_0 elements
  std::vector<float> x(128), y(4);
  WeightView w{DType::kQ4_0, data.data(), 128, 4, 72};
  EXPECT_TRUE(matmul(w, x.data(), 1, y.data(), pool, scratch).ok());
  WeightView bad_bytes = w;
  bad_bytes.row_bytes = 70;
  auto r = matmul(bad_bytes, x.data(), 1, y.data(), pool, scratch);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("row_bytes"), std::string::npos);
  WeightView bad_cols = w;
  bad_cols.cols = 100;  // not a multiple of 32
  EXPECT_FALSE(matmul(bad_cols, x.data(), 1, y.data(), pool, scratch).ok());
  WeightView no_data = w;
  no_data.data = nullptr;
  EXPECT_FALSE(matmul(no_data, x.data(), 1, y.data(), pool, scratch).ok());
  WeightView q8k{DType::kQ8_K, data.data(), 256, 0, 292};  // activations-only type: no vec_dot
  auto unsupported = matmul(q8k, x.data(), 1, y.data(), pool, scratch);
  ASSERT_FALSE(unsupported.ok());
  EXPECT_EQ(unsupported.error().kind, ErrorKind::kUnsupported);
  EXPECT_FALSE(matmul(w, x.data(), -1, y.data(), pool, scratch).ok());
  EXPECT_TRUE(matmul(w, x.data(), 0, y.data(), pool, scratch).ok());
}

TEST(GetRow, DequantizesOneRowAndChecksRange) {
  const int64_t cols = 64, rows = 3;
  const std::vector<float> wf = random_floats(static_cast<size_t>(cols * rows), 3);
  std::vector<uint8_t> wq(*dtype_row_bytes(DType::kQ8_0, cols) * rows);
  const size_t rb = *dtype_row_bytes(DType::kQ8_0, cols);
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_TRUE(quantize_row(DType::kQ8_0, wf.data() + r * cols, wq.data() + r * rb, cols).ok());
  }
  const WeightView w{DType::kQ8_0, wq.data(), cols, rows, rb};
  std::vector<float> out(cols), want(cols);
  ASSERT_TRUE(get_row(w, 2, out.data()).ok());
  ASSERT_TRUE(dequantize_row(DType::kQ8_0, wq.data() + 2 * rb, want.data(), cols).ok());
  EXPECT_EQ(out, want);
  for (int64_t c = 0; c < cols; ++c) EXPECT_NEAR(out[c], wf[2 * cols + c], 0.01);
  auto r = get_row(w, 3, out.data());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kOutOfRange);
  EXPECT_FALSE(get_row(w, -1, out.data()).ok());
}

// Real tensors: the first 2-D tensor of each quantization type found in the shared models.
TEST(Matmul, RealModelTensors) {
  const std::string models = ::hearth::test::models_dir() + "/random";
  const char* files[] = {"llama-F32.gguf",  "llama-F16.gguf",  "llama-BF16.gguf", "llama-Q4_0.gguf",
                         "llama-Q4_1.gguf", "llama-Q5_0.gguf", "llama-Q5_1.gguf", "llama-Q8_0.gguf",
                         "llama-Q2_K.gguf", "llama-Q3_K_M.gguf", "llama-Q4_K_M.gguf", "llama-Q5_K_M.gguf",
                         "llama-Q6_K.gguf"};
  // The newer formats (shared/next/models); gpt-oss's MXFP4 tensors are 3-D expert stacks, of
  // which the first expert's matrix is used.
  const std::string next = ::hearth::test::shared_dir() + "/next/models";
  std::vector<std::string> paths;
  for (const char* name : files) paths.push_back(models + "/" + name);
  for (const char* name : {"llama-IQ4_NL.gguf", "llama-IQ4_XS.gguf", "gpt-oss-MXFP4.gguf"}) paths.push_back(next + "/" + name);
  ThreadPool pool(2);
  int checked = 0;
  bool seen[kDTypeSlots] = {};
  for (const std::string& path : paths) {
    const std::string name = path.substr(path.rfind('/') + 1);
    HEARTH_REQUIRE_FILE(path);
    auto file = gguf::File::open(path);
    ASSERT_TRUE(file.ok()) << file.error().to_string();
    for (const gguf::TensorInfo& t : file->tensors()) {
      if (t.shape.size() < 2 || t.shape.size() > 3 || kernels_for(CpuVariant::kScalar).vec_dot[static_cast<int>(t.type)] == nullptr) continue;
      if (seen[static_cast<int>(t.type)]) continue;
      seen[static_cast<int>(t.type)] = true;
      const int64_t cols = t.shape[0];
      const int64_t rows = std::min<int64_t>(t.shape[1], 96);
      const WeightView w{t.type, t.data, cols, rows, *dtype_row_bytes(t.type, cols)};
      const int64_t n_tokens = 3;
      const std::vector<float> x = random_floats(static_cast<size_t>(cols * n_tokens), 9, -1.5f, 1.5f);
      std::vector<double> want, tol;
      reference_matmul(w, x.data(), n_tokens, &want, &tol);
      for (CpuVariant v : test::variants_under_test()) {
        SCOPED_TRACE(std::string(name) + " " + t.name + " " + test::variant_label(v));
        test::VariantScope scope(v);
        MatmulScratch scratch;
        std::vector<float> y(static_cast<size_t>(rows * n_tokens));
        ASSERT_TRUE(matmul(w, x.data(), n_tokens, y.data(), pool, scratch).ok());
        for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want[i], tol[i]) << "at " << i;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 16);  // every weight type appears in at least one model
}

}  // namespace
}  // namespace hearth::kernels
