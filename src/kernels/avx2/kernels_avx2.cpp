// AVX2 + FMA + F16C kernels: dot products for F32, F16, Q4_0, Q8_0, Q4_K and Q6_K weights
// (single token and 4-token batches), Q8_0/Q8_1/Q8_K activation quantization and the helpers
// norms and attention use. Integer parts (per-block or per-group sums) are exact and equal the
// reference's; K-quant results equal it bit for bit, the legacy and float ones differ only in
// the order of float accumulation. Compiled with -mavx2 -mfma -mf16c (see CMakeLists.txt).
#include <immintrin.h>

#include "kernels/avx2/avx2_helpers.h"
#include "kernels/isa_local.h"
#include "kernels/kernel_table.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels {
namespace {

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(a);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
         acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
  float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

float dot_f16_impl(int64_t n, const uint16_t* x, const uint16_t* y) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  auto load = [](const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); };
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(load(x + i), load(y + i), acc0);
    acc1 = _mm256_fmadd_ps(load(x + i + 8), load(y + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load(x + i), load(y + i), acc0);
  float sum = hsum_ps(_mm256_add_ps(acc0, acc1));
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
  auto load = [](const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); };
  __m256 acc[4][2];
  for (int k = 0; k < 4; ++k) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = load(x + i), w1 = load(x + i + 8);
    for (int k = 0; k < 4; ++k) {
      acc[k][0] = _mm256_fmadd_ps(w0, load(y[k] + i), acc[k][0]);
      acc[k][1] = _mm256_fmadd_ps(w1, load(y[k] + i + 8), acc[k][1]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 w0 = load(x + i);
    for (int k = 0; k < 4; ++k) acc[k][0] = _mm256_fmadd_ps(w0, load(y[k] + i), acc[k][0]);
  }
  for (int k = 0; k < 4; ++k) {
    float sum = hsum_ps(_mm256_add_ps(acc[k][0], acc[k][1]));
    for (int64_t j = i; j < n; ++j) sum += half_to_float(x[j]) * half_to_float(y[k][j]);
    out[k] = sum;
  }
}

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  const __m256i eight = _mm256_set1_epi8(8);
  return sum_scaled_blocks(
      n / kQK, [&](int64_t i) { return dot_s8_s8(_mm256_sub_epi8(nibbles_32(x[i].qs), eight), load256(y[i].qs)); },
      [&](int64_t i) { return half_to_float(x[i].d) * half_to_float(y[i].d); });
}

float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  return sum_scaled_blocks(
      n / kQK, [&](int64_t i) { return dot_s8_s8(load256(x[i].qs), load256(y[i].qs)); },
      [&](int64_t i) { return half_to_float(x[i].d) * half_to_float(y[i].d); });
}

// Activation row k of a group of 4 starting at a.
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
      [&](__m256i q, int k, int64_t i) { return dot_s8_s8(q, load256(y[k][i].qs)); },
      [&](int k, int64_t i) { return half_to_float(x[i].d) * half_to_float(y[k][i].d); }, out);
}

void vec_dot_q8_0_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* y[4] = {act_row<BlockQ8_0>(a, stride, 0), act_row<BlockQ8_0>(a, stride, 1),
                           act_row<BlockQ8_0>(a, stride, 2), act_row<BlockQ8_0>(a, stride, 3)};
  sum_scaled_blocks_x4(
      n / kQK, [&](int64_t i) { return load256(x[i].qs); },
      [&](__m256i q, int k, int64_t i) { return dot_s8_s8(q, load256(y[k][i].qs)); },
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
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * j));
      const __m256i lo = _mm256_and_si256(bits, mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), mask);
      const __m256i y0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 64 * j));
      const __m256i y1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 64 * j + 32));
      const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, y0), _mm256_set1_epi16(sc[2 * j]));
      const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, y1), _mm256_set1_epi16(sc[2 * j + 1]));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p0, p1));
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
    // the -32 offset: sum over groups of scale * 32 * bsum
    int offset = 0;
    for (int g = 0; g < 16; ++g) offset += x[i].scales[g] * y[i].bsums[g];
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].ql + 64 * h));
      const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].ql + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh + 32 * h));
      const __m256i low[4] = {_mm256_and_si256(ql0, mask4), _mm256_and_si256(ql1, mask4),
                              _mm256_and_si256(_mm256_srli_epi16(ql0, 4), mask4),
                              _mm256_and_si256(_mm256_srli_epi16(ql1, 4), mask4)};
      for (int c = 0; c < 4; ++c) {
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), mask2);
        const __m256i q = _mm256_or_si256(low[c], _mm256_slli_epi16(high, 4));
        const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 128 * h + 32 * c));
        const int g = 8 * h + 2 * c;
        const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(x[i].scales[g + 1]), _mm_set1_epi16(x[i].scales[g]));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(q, yv), scales));
      }
    }
    const int isum = hsum_epi32(sumi) - 32 * offset;
    sum += half_to_float(x[i].d) * y[i].d * static_cast<float>(isum);
  }
  return sum;
}

void vec_dot_q4_k_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* y[4] = {act_row<BlockQ8_K>(a, stride, 0), act_row<BlockQ8_K>(a, stride, 1),
                           act_row<BlockQ8_K>(a, stride, 2), act_row<BlockQ8_K>(a, stride, 3)};
  const __m256i mask = _mm256_set1_epi8(0x0F);
  float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8];
    isa_local::unpack_q4k_scales(x[i].scales, sc, m);
    __m256i q[8];
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load256(x[i].qs + 32 * j);
      q[2 * j] = _mm256_and_si256(bits, mask);
      q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), mask);
    }
    const float xd = half_to_float(x[i].d);
    const float xdmin = half_to_float(x[i].dmin);
    for (int k = 0; k < 4; ++k) {
      const BlockQ8_K& b = y[k][i];
      int msum = 0;
      for (int g = 0; g < 8; ++g) msum += m[g] * (b.bsums[2 * g] + b.bsums[2 * g + 1]);
      __m256i sumi = _mm256_setzero_si256();
      for (int g = 0; g < 8; ++g) {
        sumi = _mm256_add_epi32(
            sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(q[g], load256(b.qs + 32 * g)), _mm256_set1_epi16(sc[g])));
      }
      const float d = xd * b.d;
      const float dmin = xdmin * b.d;
      sum[k] += d * static_cast<float>(hsum_epi32(sumi)) - dmin * static_cast<float>(msum);
    }
  }
  for (int k = 0; k < 4; ++k) out[k] = sum[k];
}

void vec_dot_q6_k_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y[4] = {act_row<BlockQ8_K>(a, stride, 0), act_row<BlockQ8_K>(a, stride, 1),
                           act_row<BlockQ8_K>(a, stride, 2), act_row<BlockQ8_K>(a, stride, 3)};
  const __m256i mask4 = _mm256_set1_epi8(0x0F);
  const __m256i mask2 = _mm256_set1_epi8(0x03);
  float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    __m256i q[8];  // 32 quants (0..63) each, elements 32 * index onwards
    __m256i scales[8];
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load256(x[i].ql + 64 * h);
      const __m256i ql1 = load256(x[i].ql + 64 * h + 32);
      const __m256i qh = load256(x[i].qh + 32 * h);
      const __m256i low[4] = {_mm256_and_si256(ql0, mask4), _mm256_and_si256(ql1, mask4),
                              _mm256_and_si256(_mm256_srli_epi16(ql0, 4), mask4),
                              _mm256_and_si256(_mm256_srli_epi16(ql1, 4), mask4)};
      for (int c = 0; c < 4; ++c) {
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), mask2);
        q[4 * h + c] = _mm256_or_si256(low[c], _mm256_slli_epi16(high, 4));
        const int g = 8 * h + 2 * c;
        scales[4 * h + c] = _mm256_set_m128i(_mm_set1_epi16(x[i].scales[g + 1]), _mm_set1_epi16(x[i].scales[g]));
      }
    }
    const float xd = half_to_float(x[i].d);
    for (int k = 0; k < 4; ++k) {
      const BlockQ8_K& b = y[k][i];
      int offset = 0;
      for (int g = 0; g < 16; ++g) offset += x[i].scales[g] * b.bsums[g];
      __m256i sumi = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) {
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(q[c], load256(b.qs + 32 * c)), scales[c]));
      }
      const int isum = hsum_epi32(sumi) - 32 * offset;
      sum[k] += xd * b.d * static_cast<float>(isum);
    }
  }
  for (int k = 0; k < 4; ++k) out[k] = sum[k];
}

// Quantizes 32 floats with id = 127/amax, rounding half to even; returns d and the quant sum.
inline float quantize_block_q8(const float* x, int8_t* qs, int* sum_out) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_bit, v[k]));
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const float max_scalar = _mm_cvtss_f32(m);
  const float d = max_scalar / 127.0f;
  const __m256 id = _mm256_set1_ps(max_scalar != 0.0f ? 127.0f / max_scalar : 0.0f);
  __m256i q[4];
  for (int k = 0; k < 4; ++k) {
    q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  *sum_out = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  // pack 32-bit -> 8-bit; packs interleave 128-bit lanes, the permute restores the order
  const __m256i p16a = _mm256_packs_epi32(q[0], q[1]);
  const __m256i p16b = _mm256_packs_epi32(q[2], q[3]);
  const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
  const __m256i ordered = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), ordered);
  return d;
}

void quantize_act_q8_0(const float* x, void* dst, int64_t n) {
  BlockQ8_0* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sum = 0;
    y[i].d = _cvtss_sh(quantize_block_q8(x + i * kQK, y[i].qs, &sum), _MM_FROUND_TO_NEAREST_INT);
  }
}

void quantize_act_q8_1(const float* x, void* dst, int64_t n) {
  BlockQ8_1* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sum = 0;
    const float d = quantize_block_q8(x + i * kQK, y[i].qs, &sum);
    y[i].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    y[i].s = _cvtss_sh(d * static_cast<float>(sum), _MM_FROUND_TO_NEAREST_INT);
  }
}

// Q8_K as the reference quantizer computes it: scale from the first element of largest
// magnitude (-127 / that element), round half to even, clamp at 127, per-16 sums.
void quantize_act_q8_k(const float* x, void* dst, int64_t n) {
  BlockQ8_K* y = static_cast<BlockQ8_K*>(dst);
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* v = x + i * kQK_K;
    __m256 amax_v = _mm256_setzero_ps();
    for (int j = 0; j < kQK_K; j += 8) amax_v = _mm256_max_ps(amax_v, _mm256_andnot_ps(sign_bit, _mm256_loadu_ps(v + j)));
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax_v), _mm256_extractf128_ps(amax_v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float amax = _mm_cvtss_f32(m);
    BlockQ8_K& b = y[i];
    if (!(amax > 0.0f)) {
      __builtin_memset(&b, 0, sizeof b);
      continue;
    }
    float max = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      if ((v[j] < 0.0f ? -v[j] : v[j]) == amax) {
        max = v[j];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 is = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127);
    for (int j = 0; j < kQK_K; j += 32) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        const __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(v + j + 8 * k), is),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q[k] = _mm256_min_epi32(_mm256_cvtps_epi32(r), top);
      }
      b.bsums[j / 16] = static_cast<int16_t>(hsum_epi32(_mm256_add_epi32(q[0], q[1])));
      b.bsums[j / 16 + 1] = static_cast<int16_t>(hsum_epi32(_mm256_add_epi32(q[2], q[3])));
      const __m256i p8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(b.qs + j),
                          _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
    b.d = 1.0f / iscale;
  }
}

double sum_squares(const float* x, int64_t n) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 sq = _mm256_mul_ps(v, v);
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(acc0, acc1));
  double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  return sum;
}

void axpy_f16(int64_t n, float a, const uint16_t* v, float* y) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(vv, av)));
  }
  for (; i < n; ++i) y[i] += half_to_float(v[i]) * a;
}

void axpy_f32(int64_t n, float a, const float* x, float* y) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(_mm256_loadu_ps(x + i), av)));
  }
  for (; i < n; ++i) y[i] += x[i] * a;
}

}  // namespace

void fill_avx2_kernels(KernelTable& t) {
  t.vec_dot[static_cast<int>(DType::kF32)] = vec_dot_f32;
  t.vec_dot[static_cast<int>(DType::kF16)] = vec_dot_f16;
  t.vec_dot[static_cast<int>(DType::kQ4_0)] = vec_dot_q4_0;
  t.vec_dot[static_cast<int>(DType::kQ8_0)] = vec_dot_q8_0;
  t.vec_dot[static_cast<int>(DType::kQ4_K)] = vec_dot_q4_k;
  t.vec_dot[static_cast<int>(DType::kQ6_K)] = vec_dot_q6_k;
  t.vec_dot_x4[static_cast<int>(DType::kF16)] = vec_dot_f16_x4;
  t.vec_dot_x4[static_cast<int>(DType::kQ4_0)] = vec_dot_q4_0_x4;
  t.vec_dot_x4[static_cast<int>(DType::kQ8_0)] = vec_dot_q8_0_x4;
  t.vec_dot_x4[static_cast<int>(DType::kQ4_K)] = vec_dot_q4_k_x4;
  t.vec_dot_x4[static_cast<int>(DType::kQ6_K)] = vec_dot_q6_k_x4;
  t.quantize_act[static_cast<int>(DType::kQ8_0)] = quantize_act_q8_0;
  t.quantize_act[static_cast<int>(DType::kQ8_1)] = quantize_act_q8_1;
  t.quantize_act[static_cast<int>(DType::kQ8_K)] = quantize_act_q8_k;
  t.sum_squares = sum_squares;
  t.dot_f16 = dot_f16_impl;
  t.axpy_f16 = axpy_f16;
  t.axpy_f32 = axpy_f32;
  fill_avx2_more_kernels(t);
  fill_avx2_nonlinear_kernels(t);
  fill_avx2_attention_tile_kernels(t);
  fill_avx2_attention_decode_kernels(t);
  fill_avx2_pointwise_kernels(t);
}

}  // namespace hearth::kernels
