// AVX-512 (F/BW/VL/DQ + VNNI) kernels: F32 and F16 dot products on 16 lanes, Q4_0 and Q8_0
// (single token and 4-token batches) with VPDPBUSD, Q4_K and Q6_K with VPDPWSSD folding the
// per-group scales into the accumulation, sum of squares in double on 8 lanes. Integer parts
// are exact and equal the reference's; the K-quant results equal it bit for bit. Entries not
// set here keep the AVX2 versions (the table is filled AVX2 first). Compiled with the AVX-512
// flags in CMakeLists.txt.
#include <immintrin.h>

#include "kernels/avx2/avx2_helpers.h"
#include "kernels/isa_local.h"
#include "kernels/kernel_table.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels {
namespace {

// Sum of x * y over 32 signed bytes (x may be -128, |y| <= 127) with one VPDPBUSD: |x| as
// unsigned times y carrying x's sign.
inline __m256i dot_s8_s8_vnni(__m256i x, __m256i y) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(a);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps(), acc2 = _mm512_setzero_ps(),
         acc3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), acc1);
    acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), acc2);
    acc3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), acc3);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), acc0);
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

float dot_f16_impl(int64_t n, const uint16_t* x, const uint16_t* y) {
  auto load = [](const uint16_t* p) { return _mm512_cvtph_ps(load256(p)); };
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps(), acc2 = _mm512_setzero_ps(),
         acc3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_fmadd_ps(load(x + i), load(y + i), acc0);
    acc1 = _mm512_fmadd_ps(load(x + i + 16), load(y + i + 16), acc1);
    acc2 = _mm512_fmadd_ps(load(x + i + 32), load(y + i + 32), acc2);
    acc3 = _mm512_fmadd_ps(load(x + i + 48), load(y + i + 48), acc3);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(load(x + i), load(y + i), acc0);
  float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += half_to_float(x[i]) * half_to_float(y[i]);
  return sum;
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  return dot_f16_impl(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a));
}

// vec_dot_f16 for 4 activation rows: the same accumulators and order per row, each weight
// vector converted once.
void vec_dot_f16_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y[4];
  for (int k = 0; k < 4; ++k) y[k] = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(a) + k * stride);
  auto load = [](const uint16_t* p) { return _mm512_cvtph_ps(load256(p)); };
  __m512 acc[4][4];
  for (int k = 0; k < 4; ++k) acc[k][0] = acc[k][1] = acc[k][2] = acc[k][3] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 w0 = load(x + i), w1 = load(x + i + 16), w2 = load(x + i + 32), w3 = load(x + i + 48);
    for (int k = 0; k < 4; ++k) {
      acc[k][0] = _mm512_fmadd_ps(w0, load(y[k] + i), acc[k][0]);
      acc[k][1] = _mm512_fmadd_ps(w1, load(y[k] + i + 16), acc[k][1]);
      acc[k][2] = _mm512_fmadd_ps(w2, load(y[k] + i + 32), acc[k][2]);
      acc[k][3] = _mm512_fmadd_ps(w3, load(y[k] + i + 48), acc[k][3]);
    }
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 w0 = load(x + i);
    for (int k = 0; k < 4; ++k) acc[k][0] = _mm512_fmadd_ps(w0, load(y[k] + i), acc[k][0]);
  }
  for (int k = 0; k < 4; ++k) {
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[k][0], acc[k][1]), _mm512_add_ps(acc[k][2], acc[k][3])));
    for (int64_t j = i; j < n; ++j) sum += half_to_float(x[j]) * half_to_float(y[k][j]);
    out[k] = sum;
  }
}

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  const __m256i eight = _mm256_set1_epi8(8);
  return sum_scaled_blocks(
      n / kQK, [&](int64_t i) { return dot_s8_s8_vnni(_mm256_sub_epi8(nibbles_32(x[i].qs), eight), load256(y[i].qs)); },
      [&](int64_t i) { return half_to_float(x[i].d) * half_to_float(y[i].d); });
}

float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  return sum_scaled_blocks(
      n / kQK, [&](int64_t i) { return dot_s8_s8_vnni(load256(x[i].qs), load256(y[i].qs)); },
      [&](int64_t i) { return half_to_float(x[i].d) * half_to_float(y[i].d); });
}

template <typename Block>
inline const Block* act_row(const void* a, size_t stride, int k) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(a) + static_cast<size_t>(k) * stride);
}

void vec_dot_q4_0_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* y[4] = {act_row<BlockQ8_0>(a, stride, 0), act_row<BlockQ8_0>(a, stride, 1),
                           act_row<BlockQ8_0>(a, stride, 2), act_row<BlockQ8_0>(a, stride, 3)};
  const __m256i eight = _mm256_set1_epi8(8);
  sum_scaled_blocks_x4(
      n / kQK, [&](int64_t i) { return _mm256_sub_epi8(nibbles_32(x[i].qs), eight); },
      [&](__m256i q, int k, int64_t i) { return dot_s8_s8_vnni(q, load256(y[k][i].qs)); },
      [&](int k, int64_t i) { return half_to_float(x[i].d) * half_to_float(y[k][i].d); }, out);
}

void vec_dot_q8_0_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* y[4] = {act_row<BlockQ8_0>(a, stride, 0), act_row<BlockQ8_0>(a, stride, 1),
                           act_row<BlockQ8_0>(a, stride, 2), act_row<BlockQ8_0>(a, stride, 3)};
  sum_scaled_blocks_x4(
      n / kQK, [&](int64_t i) { return load256(x[i].qs); },
      [&](__m256i q, int k, int64_t i) { return dot_s8_s8_vnni(q, load256(y[k][i].qs)); },
      [&](int k, int64_t i) { return half_to_float(x[i].d) * half_to_float(y[k][i].d); }, out);
}

float vec_dot_q4_k(int64_t n, const void* w, const void* a) {
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i mask = _mm256_set1_epi8(0x0F);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8];
    isa_local::unpack_q4k_scales(x[i].scales, sc, m);
    int msum = 0;
    for (int g = 0; g < 8; ++g) msum += m[g] * (y[i].bsums[2 * g] + y[i].bsums[2 * g + 1]);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load256(x[i].qs + 32 * j);
      const __m256i lo = _mm256_and_si256(bits, mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), mask);
      sumi = _mm256_dpwssd_epi32(sumi, _mm256_maddubs_epi16(lo, load256(y[i].qs + 64 * j)),
                                 _mm256_set1_epi16(sc[2 * j]));
      sumi = _mm256_dpwssd_epi32(sumi, _mm256_maddubs_epi16(hi, load256(y[i].qs + 64 * j + 32)),
                                 _mm256_set1_epi16(sc[2 * j + 1]));
    }
    const float d = half_to_float(x[i].d) * y[i].d;
    const float dmin = half_to_float(x[i].dmin) * y[i].d;
    sum += d * static_cast<float>(hsum_epi32(sumi)) - dmin * static_cast<float>(msum);
  }
  return sum;
}

float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i mask4 = _mm256_set1_epi8(0x0F);
  const __m256i mask2 = _mm256_set1_epi8(0x03);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int offset = 0;  // the -32 of every quant: sum over groups of scale * bsum (times 32)
    for (int g = 0; g < 16; ++g) offset += x[i].scales[g] * y[i].bsums[g];
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load256(x[i].ql + 64 * h);
      const __m256i ql1 = load256(x[i].ql + 64 * h + 32);
      const __m256i qh = load256(x[i].qh + 32 * h);
      const __m256i low[4] = {_mm256_and_si256(ql0, mask4), _mm256_and_si256(ql1, mask4),
                              _mm256_and_si256(_mm256_srli_epi16(ql0, 4), mask4),
                              _mm256_and_si256(_mm256_srli_epi16(ql1, 4), mask4)};
      for (int c = 0; c < 4; ++c) {
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), mask2);
        const __m256i q = _mm256_or_si256(low[c], _mm256_slli_epi16(high, 4));
        const int g = 8 * h + 2 * c;
        const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(x[i].scales[g + 1]), _mm_set1_epi16(x[i].scales[g]));
        sumi = _mm256_dpwssd_epi32(sumi, _mm256_maddubs_epi16(q, load256(y[i].qs + 128 * h + 32 * c)), scales);
      }
    }
    const int isum = hsum_epi32(sumi) - 32 * offset;
    sum += half_to_float(x[i].d) * y[i].d * static_cast<float>(isum);
  }
  return sum;
}

double sum_squares(const float* x, int64_t n) {
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 sq = _mm512_mul_ps(v, v);
    acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(sq)));
    acc1 = _mm512_add_pd(acc1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(sq, 1)));
  }
  double sum = _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
  for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  return sum;
}

}  // namespace

void fill_avx512_kernels(KernelTable& t) {
  fill_avx512_pointwise_kernels(t);
  t.vec_dot[static_cast<int>(DType::kF32)] = vec_dot_f32;
  t.vec_dot[static_cast<int>(DType::kF16)] = vec_dot_f16;
  t.vec_dot[static_cast<int>(DType::kQ4_0)] = vec_dot_q4_0;
  t.vec_dot[static_cast<int>(DType::kQ8_0)] = vec_dot_q8_0;
  t.vec_dot[static_cast<int>(DType::kQ4_K)] = vec_dot_q4_k;
  t.vec_dot[static_cast<int>(DType::kQ6_K)] = vec_dot_q6_k;
  t.vec_dot_x4[static_cast<int>(DType::kF16)] = vec_dot_f16_x4;
  t.vec_dot_x4[static_cast<int>(DType::kQ4_0)] = vec_dot_q4_0_x4;
  t.vec_dot_x4[static_cast<int>(DType::kQ8_0)] = vec_dot_q8_0_x4;
  t.sum_squares = sum_squares;
  t.dot_f16 = dot_f16_impl;
  fill_avx512_gemm_q8_kernels(t);
  fill_avx512_gemm_kquant_kernels(t);
  fill_avx512_gemm_f16_kernels(t);
  fill_avx512_attention_kernels(t);
  fill_avx512_nonlinear_kernels(t);
  fill_avx512_attention_tile_kernels(t);
}

}  // namespace hearth::kernels
