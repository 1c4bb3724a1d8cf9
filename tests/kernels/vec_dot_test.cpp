// Every weight type's dot product, in every CPU variant: against a double-precision dot of the
// dequantized weight row and the dequantized activation row, and against the scalar
// reference (K-quants bit for bit, others within float-reordering error). Also checks that
// the SIMD activation quantizers produce the reference's bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"
#include "tensor/fp16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace hearth::kernels {
namespace {

using test::random_floats;

const DType kWeightTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0, DType::kQ4_1,
                              DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ2_K, DType::kQ3_K,
                              DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS,
                              DType::kMXFP4};

struct DotCase {
  std::vector<uint8_t> weight;      // one row of the weight type
  std::vector<uint8_t> activation;  // one row of the activation type (F32 for F32 weights)
  double expected = 0.0;            // exact dot of the dequantized rows
  double tolerance = 0.0;
};

std::vector<uint8_t> bytes_of(DType type, int64_t n) {
  return std::vector<uint8_t>(*dtype_row_bytes(type, static_cast<uint64_t>(n)));
}

DotCase make_case(DType w, int64_t n, uint32_t seed) {
  DotCase c;
  const std::vector<float> wf = random_floats(static_cast<size_t>(n), seed);
  // activations with a wide spread, like hidden states
  std::vector<float> af = random_floats(static_cast<size_t>(n), seed + 1000, -3.0f, 3.0f);
  af[static_cast<size_t>(seed) % af.size()] = 9.0f;
  c.weight = bytes_of(w, n);
  EXPECT_TRUE(quantize_row(w, wf.data(), c.weight.data(), n).ok());
  const DType at = activation_type(w);
  std::vector<float> a_deq(static_cast<size_t>(n));
  if (w == DType::kF32) {
    c.activation.resize(static_cast<size_t>(n) * 4);
    std::memcpy(c.activation.data(), af.data(), c.activation.size());
    a_deq = af;
  } else {
    c.activation = bytes_of(at, n);
    kernels_for(CpuVariant::kScalar).quantize_act[static_cast<int>(at)](af.data(), c.activation.data(), n);
    EXPECT_TRUE(dequantize_row(at, c.activation.data(), a_deq.data(), n).ok());
  }
  std::vector<float> w_deq(static_cast<size_t>(n));
  EXPECT_TRUE(dequantize_row(w, c.weight.data(), w_deq.data(), n).ok());
  double abs_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(w_deq[i]) * a_deq[i];
    c.expected += p;
    abs_sum += std::fabs(p);
  }
  c.tolerance = 2e-5 * abs_sum + 1e-6;
  // Q8_1 stores the block sum d*sum(q) rounded to F16: the min term carries that rounding.
  if (w == DType::kQ4_1 || w == DType::kQ5_1) {
    const size_t wb = w == DType::kQ4_1 ? sizeof(BlockQ4_1) : sizeof(BlockQ5_1);
    const BlockQ8_1* y = reinterpret_cast<const BlockQ8_1*>(c.activation.data());
    for (int64_t b = 0; b < n / kQK; ++b) {
      uint16_t m_bits;
      std::memcpy(&m_bits, c.weight.data() + b * wb + 2, 2);
      c.tolerance += std::fabs(fp16_to_fp32(m_bits) * fp16_to_fp32(y[b].s)) * 1e-3;
    }
  }
  return c;
}

TEST(VecDot, EveryTypeMatchesDequantizedDoubleDot) {
  for (CpuVariant v : test::variants_under_test()) {
    const KernelTable& t = kernels_for(v);
    for (DType w : kWeightTypes) {
      for (int64_t n : {256, 512, 2816}) {
        for (uint32_t seed : {1u, 2u, 3u}) {
          SCOPED_TRACE(test::variant_label(v) + " " + std::string(dtype_name(w)) + " n=" + std::to_string(n));
          const DotCase c = make_case(w, n, seed);
          const float got = t.vec_dot[static_cast<int>(w)](n, c.weight.data(), c.activation.data());
          EXPECT_NEAR(got, c.expected, c.tolerance);
        }
      }
    }
  }
}

TEST(VecDot, SimdVariantsMatchScalarReference) {
  const KernelTable& ref = kernels_for(CpuVariant::kScalar);
  for (CpuVariant v : test::variants_under_test()) {
    if (v == CpuVariant::kScalar) continue;
    const KernelTable& t = kernels_for(v);
    for (DType w : kWeightTypes) {
      for (int64_t n : {256, 768, 4096}) {
        SCOPED_TRACE(test::variant_label(v) + " " + std::string(dtype_name(w)) + " n=" + std::to_string(n));
        const DotCase c = make_case(w, n, 7u + static_cast<uint32_t>(n));
        const int slot = static_cast<int>(w);
        const float want = ref.vec_dot[slot](n, c.weight.data(), c.activation.data());
        const float got = t.vec_dot[slot](n, c.weight.data(), c.activation.data());
        const bool kquant = w == DType::kQ2_K || w == DType::kQ3_K || w == DType::kQ4_K || w == DType::kQ5_K ||
                            w == DType::kQ6_K || w == DType::kIQ4_XS;
        if (kquant) {
          EXPECT_EQ(got, want);  // same integer sums, same float operations
        } else {
          EXPECT_NEAR(got, want, 1e-5 * c.tolerance / 2e-5);
        }
      }
    }
  }
}

TEST(VecDot, ExtremeQuantsDoNotOverflow) {
  // all-maximal weights and activations: the integer paths must not saturate
  const int64_t n = 512;
  std::vector<float> ones(n, 1.0f);
  std::vector<float> neg(n, -1.0f);
  for (CpuVariant v : test::variants_under_test()) {
    const KernelTable& t = kernels_for(v);
    for (DType w : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ2_K, DType::kQ3_K,
                    DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS, DType::kMXFP4}) {
      SCOPED_TRACE(test::variant_label(v) + " " + std::string(dtype_name(w)));
      for (const auto* src : {&ones, &neg}) {
        std::vector<uint8_t> wq = bytes_of(w, n);
        ASSERT_TRUE(quantize_row(w, src->data(), wq.data(), n).ok());
        const DType at = activation_type(w);
        std::vector<uint8_t> aq = bytes_of(at, n);
        kernels_for(CpuVariant::kScalar).quantize_act[static_cast<int>(at)](neg.data(), aq.data(), n);
        const float got = t.vec_dot[static_cast<int>(w)](n, wq.data(), aq.data());
        const float want = kernels_for(CpuVariant::kScalar).vec_dot[static_cast<int>(w)](n, wq.data(), aq.data());
        EXPECT_NEAR(got, want, 1e-4 * n);
        EXPECT_NEAR(want, src == &ones ? -n : n, 0.02 * n);
      }
    }
  }
}

TEST(QuantizeActivations, Q8_0MatchesDefinitionAndSimdIsExact) {
  const int64_t n = 1024;
  std::vector<float> x = random_floats(n, 11, -5.0f, 5.0f);
  for (int i = 0; i < 32; ++i) x[64 + i] = 0.0f;           // an all-zero block
  x[200] = 127.0f * 0.5f / 3.0f;                           // near a rounding tie
  for (int i = 512; i < 768; ++i) x[i] = 0.0f;             // an all-zero Q8_K block
  x[768] = -6.0f;                                          // Q8_K: the first of equal
  x[769] = 6.0f;                                           // magnitudes sets the sign
  std::vector<uint8_t> want(*dtype_row_bytes(DType::kQ8_0, n));
  kernels_for(CpuVariant::kScalar).quantize_act[static_cast<int>(DType::kQ8_0)](x.data(), want.data(), n);
  const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(want.data());
  for (int64_t i = 0; i < n / kQK; ++i) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[i * kQK + j]));
    ASSERT_EQ(b[i].d, fp32_to_fp16(amax / 127.0f));
    for (int j = 0; j < kQK; ++j) {
      const double q = amax == 0.0f ? 0.0 : std::nearbyint(x[i * kQK + j] * (127.0f / amax));
      ASSERT_EQ(b[i].qs[j], static_cast<int8_t>(q)) << "block " << i << " elem " << j;
    }
  }
  for (CpuVariant v : test::variants_under_test()) {
    for (DType at : {DType::kQ8_0, DType::kQ8_1, DType::kQ8_K, DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(test::variant_label(v) + " " + std::string(dtype_name(at)));
      std::vector<uint8_t> ref(*dtype_row_bytes(at, n)), got(ref.size());
      kernels_for(CpuVariant::kScalar).quantize_act[static_cast<int>(at)](x.data(), ref.data(), n);
      kernels_for(v).quantize_act[static_cast<int>(at)](x.data(), got.data(), n);
      EXPECT_EQ(ref, got);
    }
  }
}

TEST(QuantizeActivations, Q8_1StoresScaledSum) {
  const int64_t n = 256;
  const std::vector<float> x = random_floats(n, 5);
  std::vector<uint8_t> buf(*dtype_row_bytes(DType::kQ8_1, n));
  kernels_for(CpuVariant::kScalar).quantize_act[static_cast<int>(DType::kQ8_1)](x.data(), buf.data(), n);
  const BlockQ8_1* b = reinterpret_cast<const BlockQ8_1*>(buf.data());
  for (int64_t i = 0; i < n / kQK; ++i) {
    float amax = 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      amax = std::max(amax, std::fabs(x[i * kQK + j]));
      sum += b[i].qs[j];
    }
    EXPECT_EQ(b[i].s, fp32_to_fp16(amax / 127.0f * static_cast<float>(sum)));
  }
}

TEST(HelperKernels, SimdMatchesReference) {
  const KernelTable& ref = kernels_for(CpuVariant::kScalar);
  const int64_t n = 1000;  // not a multiple of any vector width
  const std::vector<float> x = random_floats(n, 21, -4.0f, 4.0f);
  const std::vector<float> y0 = random_floats(n, 22);
  std::vector<uint16_t> a16(n), b16(n);
  fp32_to_fp16_row(x.data(), a16.data(), n);
  fp32_to_fp16_row(y0.data(), b16.data(), n);
  double exact_sq = 0.0, exact_dot = 0.0, abs_dot = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    exact_sq += static_cast<double>(x[i]) * x[i];
    const double p = static_cast<double>(fp16_to_fp32(a16[i])) * fp16_to_fp32(b16[i]);
    exact_dot += p;
    abs_dot += std::fabs(p);
  }
  for (CpuVariant v : test::variants_under_test()) {
    SCOPED_TRACE(test::variant_label(v));
    const KernelTable& t = kernels_for(v);
    EXPECT_NEAR(t.sum_squares(x.data(), n), exact_sq, 1e-7 * exact_sq);
    EXPECT_NEAR(t.dot_f16(n, a16.data(), b16.data()), exact_dot, 1e-5 * abs_dot);
    std::vector<float> want = y0, got = y0;
    ref.axpy_f16(n, 0.37f, a16.data(), want.data());
    t.axpy_f16(n, 0.37f, a16.data(), got.data());
    EXPECT_EQ(want, got);
    want = y0;
    got = y0;
    ref.axpy_f32(n, -1.25f, x.data(), want.data());
    t.axpy_f32(n, -1.25f, x.data(), got.data());
    EXPECT_EQ(want, got);
  }
}

}  // namespace
}  // namespace hearth::kernels
