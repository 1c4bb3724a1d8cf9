// AVX2 building blocks shared by the AVX2 and AVX-512 kernel files. Include only from files
// compiled with at least -mavx2 -mfma -mf16c. Everything is in an anonymous namespace on
// purpose: each including file gets its own copy built with its own flags, so the linker can
// never pick an AVX-512-compiled copy for AVX2 code (see isa_local.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace hearth::kernels {
namespace {

inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 32 nibbles of a legacy block as bytes: elements 0..15 (low nibbles) then 16..31 (high).
inline __m256i nibbles_32(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Sum over pairs of u8 * s8 into 8 int32 lanes (exact while each pair fits in int16).
inline __m256i dot_u8_s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// Sum of x * y over 32 signed bytes each (|x| <= 127 or x = -128, |y| <= 127), as 8 int32s:
// |x| as unsigned times y carrying x's sign.
inline __m256i dot_s8_s8(__m256i x, __m256i y) { return dot_u8_s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x)); }

// sum over blocks i < nb of scale(i) * (sum of the 8 int32 lanes of ints(i)), with two
// independent accumulators so that consecutive blocks do not wait on each other's FMA.
template <typename IntsFn, typename ScaleFn>
inline float sum_scaled_blocks(int64_t nb, IntsFn ints, ScaleFn scale) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(scale(i)), _mm256_cvtepi32_ps(ints(i)), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(scale(i + 1)), _mm256_cvtepi32_ps(ints(i + 1)), acc1);
  }
  if (i < nb) acc0 = _mm256_fmadd_ps(_mm256_set1_ps(scale(i)), _mm256_cvtepi32_ps(ints(i)), acc0);
  return hsum_ps(_mm256_add_ps(acc0, acc1));
}

// The same sums for 4 activation rows at once: prep(i) decodes weight block i once, ints(q, k,
// i) gives token k's 8 int32 lanes, scale(k, i) its float scale. Each out[k] is computed with
// exactly the operations sum_scaled_blocks uses, so the results are bit-identical.
template <typename PrepFn, typename IntsFn, typename ScaleFn>
inline void sum_scaled_blocks_x4(int64_t nb, PrepFn prep, IntsFn ints, ScaleFn scale, float* out) {
  __m256 acc[4][2];
  for (int k = 0; k < 4; ++k) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    for (int p = 0; p < 2; ++p) {
      const __m256i q = prep(i + p);
      for (int k = 0; k < 4; ++k) {
        acc[k][p] = _mm256_fmadd_ps(_mm256_set1_ps(scale(k, i + p)), _mm256_cvtepi32_ps(ints(q, k, i + p)), acc[k][p]);
      }
    }
  }
  if (i < nb) {
    const __m256i q = prep(i);
    for (int k = 0; k < 4; ++k) {
      acc[k][0] = _mm256_fmadd_ps(_mm256_set1_ps(scale(k, i)), _mm256_cvtepi32_ps(ints(q, k, i)), acc[k][0]);
    }
  }
  for (int k = 0; k < 4; ++k) out[k] = hsum_ps(_mm256_add_ps(acc[k][0], acc[k][1]));
}

}  // namespace
}  // namespace hearth::kernels
