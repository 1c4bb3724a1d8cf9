// AVX2 dot products for the non-linear 4-bit types: IQ4_NL and MXFP4 with Q8_0 activations,
// IQ4_XS with Q8_K, each with a 4-token batch version. A byte shuffle turns 32 4-bit codes into
// their signed levels at once; the integer sums are then exact and equal the reference's. IQ4_XS
// equals the reference bit for bit (same final float operations); IQ4_NL and MXFP4 differ only
// in the order of float accumulation, as Q4_0 does. Compiled with -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include "kernels/avx2/avx2_helpers.h"
#include "kernels/isa_local.h"
#include "kernels/kernel_table.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels {
namespace {

// A 16-entry level table in both 128-bit lanes, for _mm256_shuffle_epi8.
inline __m256i level_table(const int8_t* levels) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(levels)));
}

// The signed levels of the 32 codes of a block (elements 0..15 from the low nibbles).
inline __m256i levels_32(__m256i table, const uint8_t* qs) { return _mm256_shuffle_epi8(table, nibbles_32(qs)); }

template <typename Block>
inline const Block* act_row(const void* a, size_t stride, int k) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(a) + static_cast<size_t>(k) * stride);
}

float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) {
  const BlockIQ4_NL* x = static_cast<const BlockIQ4_NL*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  const __m256i table = level_table(kIQ4NLValues);
  return sum_scaled_blocks(
      n / kQK, [&](int64_t i) { return dot_s8_s8(levels_32(table, x[i].qs), load256(y[i].qs)); },
      [&](int64_t i) { return half_to_float(x[i].d) * half_to_float(y[i].d); });
}

float vec_dot_mxfp4(int64_t n, const void* w, const void* a) {
  const BlockMXFP4* x = static_cast<const BlockMXFP4*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  const __m256i table = level_table(kMXFP4Values);
  return sum_scaled_blocks(
      n / kQK, [&](int64_t i) { return dot_s8_s8(levels_32(table, x[i].qs), load256(y[i].qs)); },
      [&](int64_t i) { return isa_local::mxfp4_half_scale(x[i].e) * half_to_float(y[i].d); });
}

void vec_dot_iq4_nl_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockIQ4_NL* x = static_cast<const BlockIQ4_NL*>(w);
  const BlockQ8_0* y[4] = {act_row<BlockQ8_0>(a, stride, 0), act_row<BlockQ8_0>(a, stride, 1),
                           act_row<BlockQ8_0>(a, stride, 2), act_row<BlockQ8_0>(a, stride, 3)};
  const __m256i table = level_table(kIQ4NLValues);
  sum_scaled_blocks_x4(
      n / kQK, [&](int64_t i) { return levels_32(table, x[i].qs); },
      [&](__m256i q, int k, int64_t i) { return dot_s8_s8(q, load256(y[k][i].qs)); },
      [&](int k, int64_t i) { return half_to_float(x[i].d) * half_to_float(y[k][i].d); }, out);
}

void vec_dot_mxfp4_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockMXFP4* x = static_cast<const BlockMXFP4*>(w);
  const BlockQ8_0* y[4] = {act_row<BlockQ8_0>(a, stride, 0), act_row<BlockQ8_0>(a, stride, 1),
                           act_row<BlockQ8_0>(a, stride, 2), act_row<BlockQ8_0>(a, stride, 3)};
  const __m256i table = level_table(kMXFP4Values);
  sum_scaled_blocks_x4(
      n / kQK, [&](int64_t i) { return levels_32(table, x[i].qs); },
      [&](__m256i q, int k, int64_t i) { return dot_s8_s8(q, load256(y[k][i].qs)); },
      [&](int k, int64_t i) { return isa_local::mxfp4_half_scale(x[i].e) * half_to_float(y[k][i].d); }, out);
}

// Sub-block products of IQ4_XS levels q (never 0) with activations: 16 int16 pair sums
// (|q| <= 127, |y| <= 127, so no saturation) times the sub-block scale, as 8 int32s.
inline __m256i scaled_dot(__m256i q, __m256i yv, __m256i scale) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(yv, q)), scale);
}

float vec_dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const BlockIQ4_XS* x = static_cast<const BlockIQ4_XS*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i table = level_table(kIQ4NLValues);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int16_t ls[8];
    isa_local::unpack_iq4xs_scales(x[i].scales_l, x[i].scales_h, ls);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      sumi = _mm256_add_epi32(sumi, scaled_dot(levels_32(table, x[i].qs + 16 * j), load256(y[i].qs + 32 * j),
                                               _mm256_set1_epi16(ls[j])));
    }
    sum += half_to_float(x[i].d) * y[i].d * static_cast<float>(hsum_epi32(sumi));
  }
  return sum;
}

void vec_dot_iq4_xs_x4(int64_t n, const void* w, const void* a, size_t stride, float* out) {
  const BlockIQ4_XS* x = static_cast<const BlockIQ4_XS*>(w);
  const BlockQ8_K* y[4] = {act_row<BlockQ8_K>(a, stride, 0), act_row<BlockQ8_K>(a, stride, 1),
                           act_row<BlockQ8_K>(a, stride, 2), act_row<BlockQ8_K>(a, stride, 3)};
  const __m256i table = level_table(kIQ4NLValues);
  float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int16_t ls[8];
    isa_local::unpack_iq4xs_scales(x[i].scales_l, x[i].scales_h, ls);
    __m256i q[8];
    for (int j = 0; j < 8; ++j) q[j] = levels_32(table, x[i].qs + 16 * j);
    const float xd = half_to_float(x[i].d);
    for (int k = 0; k < 4; ++k) {
      __m256i sumi = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        sumi = _mm256_add_epi32(sumi, scaled_dot(q[j], load256(y[k][i].qs + 32 * j), _mm256_set1_epi16(ls[j])));
      }
      sum[k] += xd * y[k][i].d * static_cast<float>(hsum_epi32(sumi));
    }
  }
  for (int k = 0; k < 4; ++k) out[k] = sum[k];
}

}  // namespace

void fill_avx2_nonlinear_kernels(KernelTable& t) {
  t.vec_dot[static_cast<int>(DType::kIQ4_NL)] = vec_dot_iq4_nl;
  t.vec_dot[static_cast<int>(DType::kIQ4_XS)] = vec_dot_iq4_xs;
  t.vec_dot[static_cast<int>(DType::kMXFP4)] = vec_dot_mxfp4;
  t.vec_dot_x4[static_cast<int>(DType::kIQ4_NL)] = vec_dot_iq4_nl_x4;
  t.vec_dot_x4[static_cast<int>(DType::kIQ4_XS)] = vec_dot_iq4_xs_x4;
  t.vec_dot_x4[static_cast<int>(DType::kMXFP4)] = vec_dot_mxfp4_x4;
}

}  // namespace hearth::kernels
