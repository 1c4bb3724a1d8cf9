// AVX2 dot products for the remaining weight types: BF16, Q4_1, Q5_0, Q5_1 (legacy blocks)
// and Q2_K, Q3_K, Q5_K (K-quants; bit-identical to the reference, since the integer group sums
// are exact and the final float operations are the same), plus 4-token batch versions for
// Q4_1, Q5_0, Q5_1 and Q5_K. Compiled with -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include "kernels/avx2/avx2_helpers.h"
#include "kernels/isa_local.h"
#include "kernels/kernel_table.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels {
namespace {

// Bit j of the little-endian 32-bit word at qh as byte j: 0x10 when set, 0 otherwise.
inline __m256i fifth_bits_32(const uint8_t* qh) {
  uint32_t word = static_cast<uint32_t>(qh[0]) | (static_cast<uint32_t>(qh[1]) << 8) |
                  (static_cast<uint32_t>(qh[2]) << 16) | (static_cast<uint32_t>(qh[3]) << 24);
  // byte j <- byte j/8 of the word
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(word)),
      _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL, 0));
  const __m256i bit_of_byte = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit_of_byte), bit_of_byte);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Two int16 scales: the low 128-bit lane gets `lo`, the high one `hi` (groups of 16 bytes).
inline __m256i scale_pair(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(hi)), _mm_set1_epi16(static_cast<int16_t>(lo)));
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  auto load = [](const uint16_t* p) {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  };
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(load(x + i), load(y + i), acc0);
    acc1 = _mm256_fmadd_ps(load(x + i + 8), load(y + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load(x + i), load(y + i), acc0);
  float sum = hsum_ps(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) {
    uint32_t xb = static_cast<uint32_t>(x[i]) << 16, yb = static_cast<uint32_t>(y[i]) << 16;
    float xf, yf;
    __builtin_memcpy(&xf, &xb, 4);
    __builtin_memcpy(&yf, &yb, 4);
    sum += xf * yf;
  }
  return sum;
}

// sum of m * s over the blocks of a Q4_1/Q5_1 row (the weight minimum times the activation sum)
template <typename Block>
float sum_of_mins(int64_t nb, const Block* x, const BlockQ8_1* y) {
  float mins = 0.0f;
  for (int64_t i = 0; i < nb; ++i) mins += half_to_float(x[i].m) * half_to_float(y[i].s);
  return mins;
}

float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  const BlockQ4_1* x = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(a);
  return sum_scaled_blocks(
             n / kQK, [&](int64_t i) { return dot_u8_s8(nibbles_32(x[i].qs), load256(y[i].qs)); },
             [&](int64_t i) { return half_to_float(x[i].d) * half_to_float(y[i].d); }) +
         sum_of_mins(n / kQK, x, y);
}

float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  const BlockQ5_0* x = static_cast<const BlockQ5_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  const __m256i sixteen = _mm256_set1_epi8(16);
  return sum_scaled_blocks(
      n / kQK,
      [&](int64_t i) {
        const __m256i q = _mm256_or_si256(nibbles_32(x[i].qs), fifth_bits_32(x[i].qh));
        return dot_s8_s8(_mm256_sub_epi8(q, sixteen), load256(y[i].qs));
      },
      [&](int64_t i) { return half_to_float(x[i].d) * half_to_float(y[i].d); });
}

float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  const BlockQ5_1* x = static_cast<const BlockQ5_1*>(w);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(a);
  return sum_scaled_blocks(
             n / kQK,
             [&](int64_t i) {
               const __m256i q = _mm256_or_si256(nibbles_32(x[i].qs), fifth_bits_32(x[i].qh));
               return dot_u8_s8(q, load256(y[i].qs));
             },
             [&](int64_t i) { return half_to_float(x[i].d) * half_to_float(y[i].d); }) +
         sum_of_mins(n / kQK, x, y);
}

template <typename Block>
inline const Block* act_row(const void* a, size_t stride, int k) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(a) + static_cast<size_t>(k) * stride);
}

// 4-token versions: each result bit-identical to the single-token function above.
void vec_dot_q4_1_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockQ4_1* x = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* y[4] = {act_row<BlockQ8_1>(a, stride, 0), act_row<BlockQ8_1>(a, stride, 1),
                           act_row<BlockQ8_1>(a, stride, 2), act_row<BlockQ8_1>(a, stride, 3)};
  sum_scaled_blocks_x4(
      n / kQK, [&](int64_t i) { return nibbles_32(x[i].qs); },
      [&](__m256i q, int k, int64_t i) { return dot_u8_s8(q, load256(y[k][i].qs)); },
      [&](int k, int64_t i) { return half_to_float(x[i].d) * half_to_float(y[k][i].d); }, out);
  for (int k = 0; k < 4; ++k) out[k] += sum_of_mins(n / kQK, x, y[k]);
}

void vec_dot_q5_0_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockQ5_0* x = static_cast<const BlockQ5_0*>(w);
  const BlockQ8_0* y[4] = {act_row<BlockQ8_0>(a, stride, 0), act_row<BlockQ8_0>(a, stride, 1),
                           act_row<BlockQ8_0>(a, stride, 2), act_row<BlockQ8_0>(a, stride, 3)};
  const __m256i sixteen = _mm256_set1_epi8(16);
  sum_scaled_blocks_x4(
      n / kQK,
      [&](int64_t i) { return _mm256_sub_epi8(_mm256_or_si256(nibbles_32(x[i].qs), fifth_bits_32(x[i].qh)), sixteen); },
      [&](__m256i q, int k, int64_t i) { return dot_s8_s8(q, load256(y[k][i].qs)); },
      [&](int k, int64_t i) { return half_to_float(x[i].d) * half_to_float(y[k][i].d); }, out);
}

void vec_dot_q5_1_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockQ5_1* x = static_cast<const BlockQ5_1*>(w);
  const BlockQ8_1* y[4] = {act_row<BlockQ8_1>(a, stride, 0), act_row<BlockQ8_1>(a, stride, 1),
                           act_row<BlockQ8_1>(a, stride, 2), act_row<BlockQ8_1>(a, stride, 3)};
  sum_scaled_blocks_x4(
      n / kQK, [&](int64_t i) { return _mm256_or_si256(nibbles_32(x[i].qs), fifth_bits_32(x[i].qh)); },
      [&](__m256i q, int k, int64_t i) { return dot_u8_s8(q, load256(y[k][i].qs)); },
      [&](int k, int64_t i) { return half_to_float(x[i].d) * half_to_float(y[k][i].d); }, out);
  for (int k = 0; k < 4; ++k) out[k] += sum_of_mins(n / kQK, x, y[k]);
}

float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i mask2 = _mm256_set1_epi8(0x03);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int summs = 0;
    for (int g = 0; g < 16; ++g) summs += y[i].bsums[g] * (x[i].scales[g] >> 4);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = load256(x[i].qs + 32 * h);
      for (int s = 0; s < 4; ++s) {
        const __m256i q = _mm256_and_si256(_mm256_srl_epi16(bits, _mm_cvtsi32_si128(2 * s)), mask2);
        const int g = 8 * h + 2 * s;
        const __m256i p = _mm256_maddubs_epi16(q, load256(y[i].qs + 128 * h + 32 * s));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale_pair(x[i].scales[g] & 0xF, x[i].scales[g + 1] & 0xF)));
      }
    }
    const float dall = y[i].d * half_to_float(x[i].d);
    const float dmin = y[i].d * half_to_float(x[i].dmin);
    sum += dall * static_cast<float>(hsum_epi32(sumi)) - dmin * static_cast<float>(summs);
  }
  return sum;
}

float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  const BlockQ3_K* x = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i mask2 = _mm256_set1_epi8(0x03);
  const __m256i mask1 = _mm256_set1_epi8(0x01);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int scale[16];
    for (int g = 0; g < 16; ++g) {
      const int low = g < 8 ? (x[i].scales[g] & 0xF) : (x[i].scales[g - 8] >> 4);
      const int high = (x[i].scales[8 + g % 4] >> (2 * (g / 4))) & 3;
      scale[g] = (low | (high << 4)) - 32;
    }
    // the -4 of every quant: 4 * sum over groups of scale * bsum
    int offset = 0;
    for (int g = 0; g < 16; ++g) offset += scale[g] * y[i].bsums[g];
    const __m256i hmask = load256(x[i].hmask);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = load256(x[i].qs + 32 * h);
      for (int s = 0; s < 4; ++s) {
        const __m256i low = _mm256_and_si256(_mm256_srl_epi16(bits, _mm_cvtsi32_si128(2 * s)), mask2);
        const __m256i hbit = _mm256_and_si256(_mm256_srl_epi16(hmask, _mm_cvtsi32_si128(4 * h + s)), mask1);
        const __m256i q = _mm256_or_si256(low, _mm256_slli_epi16(hbit, 2));  // 0..7, value q - 4
        const int g = 8 * h + 2 * s;
        const __m256i p = _mm256_maddubs_epi16(q, load256(y[i].qs + 128 * h + 32 * s));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale_pair(scale[g], scale[g + 1])));
      }
    }
    const int isum = hsum_epi32(sumi) - 4 * offset;
    sum += half_to_float(x[i].d) * y[i].d * static_cast<float>(isum);
  }
  return sum;
}

float vec_dot_q5_k(int64_t n, const void* w, const void* a) {
  const BlockQ5_K* x = static_cast<const BlockQ5_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i mask4 = _mm256_set1_epi8(0x0F);
  const __m256i mask1 = _mm256_set1_epi8(0x01);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8];
    isa_local::unpack_q4k_scales(x[i].scales, sc, m);
    int msum = 0;
    for (int g = 0; g < 8; ++g) msum += m[g] * (y[i].bsums[2 * g] + y[i].bsums[2 * g + 1]);
    const __m256i qh = load256(x[i].qh);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load256(x[i].qs + 32 * j);
      const __m256i h0 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * j)), mask1);
      const __m256i h1 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * j + 1)), mask1);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(bits, mask4), _mm256_slli_epi16(h0, 4));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), mask4), _mm256_slli_epi16(h1, 4));
      const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load256(y[i].qs + 64 * j)), _mm256_set1_epi16(sc[2 * j]));
      const __m256i p1 =
          _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load256(y[i].qs + 64 * j + 32)), _mm256_set1_epi16(sc[2 * j + 1]));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p0, p1));
    }
    const float d = half_to_float(x[i].d) * y[i].d;
    const float dmin = half_to_float(x[i].dmin) * y[i].d;
    sum += d * static_cast<float>(hsum_epi32(sumi)) - dmin * static_cast<float>(msum);
  }
  return sum;
}

void vec_dot_q5_k_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockQ5_K* x = static_cast<const BlockQ5_K*>(w);
  const BlockQ8_K* y[4] = {act_row<BlockQ8_K>(a, stride, 0), act_row<BlockQ8_K>(a, stride, 1),
                           act_row<BlockQ8_K>(a, stride, 2), act_row<BlockQ8_K>(a, stride, 3)};
  const __m256i mask4 = _mm256_set1_epi8(0x0F);
  const __m256i mask1 = _mm256_set1_epi8(0x01);
  float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8];
    isa_local::unpack_q4k_scales(x[i].scales, sc, m);
    const __m256i qh = load256(x[i].qh);
    __m256i q[8];
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load256(x[i].qs + 32 * j);
      const __m256i h0 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * j)), mask1);
      const __m256i h1 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * j + 1)), mask1);
      q[2 * j] = _mm256_or_si256(_mm256_and_si256(bits, mask4), _mm256_slli_epi16(h0, 4));
      q[2 * j + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), mask4), _mm256_slli_epi16(h1, 4));
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

}  // namespace

void fill_avx2_more_kernels(KernelTable& t) {
  t.vec_dot[static_cast<int>(DType::kBF16)] = vec_dot_bf16;
  t.vec_dot[static_cast<int>(DType::kQ4_1)] = vec_dot_q4_1;
  t.vec_dot[static_cast<int>(DType::kQ5_0)] = vec_dot_q5_0;
  t.vec_dot[static_cast<int>(DType::kQ5_1)] = vec_dot_q5_1;
  t.vec_dot[static_cast<int>(DType::kQ2_K)] = vec_dot_q2_k;
  t.vec_dot[static_cast<int>(DType::kQ3_K)] = vec_dot_q3_k;
  t.vec_dot[static_cast<int>(DType::kQ5_K)] = vec_dot_q5_k;
  t.vec_dot_x4[static_cast<int>(DType::kQ4_1)] = vec_dot_q4_1_x4;
  t.vec_dot_x4[static_cast<int>(DType::kQ5_0)] = vec_dot_q5_0_x4;
  t.vec_dot_x4[static_cast<int>(DType::kQ5_1)] = vec_dot_q5_1_x4;
  t.vec_dot_x4[static_cast<int>(DType::kQ5_K)] = vec_dot_q5_k_x4;
}

}  // namespace hearth::kernels
