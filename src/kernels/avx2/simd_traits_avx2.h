// AVX2 vector traits, 8 floats per register, masks as all-ones lanes: what the kernels written
// once over an ISA's vectors (flash_tile_simd.h, decode_softmax_simd.h) need of it. Include only
// from files compiled with the AVX2 flags; internal linkage (see isa_local.h).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/avx2/vector_math_avx2.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels {
namespace {

struct Avx2Traits {
  static constexpr int kLanes = 8;
  static constexpr int kRegs = 16;  // vector registers
  using V = __m256;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V exp(V x) { return exp_ps(x); }
  static V mask_range(V s, V j, V lo, V hi) {
    const V in = _mm256_and_ps(_mm256_cmp_ps(j, lo, _CMP_GE_OQ), _mm256_cmp_ps(j, hi, _CMP_LE_OQ));
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), s, in);
  }
  static V exp_below(V s, V m) {
    const V live = _mm256_cmp_ps(s, _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ);
    return _mm256_and_ps(live, exp_ps(_mm256_sub_ps(s, m)));
  }
  static V finite_or_zero(V m) {
    return _mm256_and_ps(_mm256_cmp_ps(m, _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ), m);
  }
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
  static void f16_to_f32(const uint16_t* src, float* dst, int n) {  // n % 8 == 0
    for (int i = 0; i < n; i += 8) {
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
  }
  static void round_f16(float* x, size_t n) {  // n % 8 == 0
    for (size_t i = 0; i < n; i += 8) {
      const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
    }
  }
  static void q8_0_to_f32(const BlockQ8_0* b, float* dst, int n) {  // n % 32 == 0
    for (int i = 0; i < n / kQK; ++i) {
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(b[i].d));
      for (int h = 0; h < 4; ++h) {
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[i].qs + 8 * h));
        _mm256_storeu_ps(dst + i * kQK + 8 * h, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
      }
    }
  }
  // Q4_0: element j (low nibble of qs[j]) and j + 16 (high nibble), each minus 8.
  static void q4_0_to_f32(const BlockQ4_0* b, float* dst, int n) {  // n % 32 == 0
    const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    for (int i = 0; i < n / kQK; ++i) {
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(b[i].d));
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low), eight);
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low), eight);
      float* o = dst + i * kQK;
      _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), d));
      _mm256_storeu_ps(o + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), d));
      _mm256_storeu_ps(o + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), d));
      _mm256_storeu_ps(o + 24, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), d));
    }
  }
  // The largest lane.
  static float hmax(V v) {
    alignas(32) float lanes[kLanes];
    _mm256_store_ps(lanes, v);
    float m = lanes[0];
    for (int i = 1; i < kLanes; ++i) m = std::max(m, lanes[i]);
    return m;
  }
  // Every lane rounded to the nearest F16 and back.
  static V round_f16(V v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
  // ---- BF16 pairs (a BF16 cache, ops.h kv_key_paired_index): as Avx512Traits.
  using VI = __m256i;
  static VI load_words(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store_words(void* p, VI x) { _mm256_storeu_si256(static_cast<__m256i*>(p), x); }
  static VI and_words(VI x, uint32_t m) { return _mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(m))); }
  static VI bf16_round_bits(V x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x7F800000));
    const __m256i r = _mm256_blendv_epi8(_mm256_add_epi32(u, bias), _mm256_or_si256(u, _mm256_set1_epi32(0x400000)), nan);
    return _mm256_and_si256(r, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)));
  }
  static VI bf16_pair_words(V lo, V hi) {
    return _mm256_or_si256(_mm256_srli_epi32(bf16_round_bits(lo), 16), bf16_round_bits(hi));
  }
  static VI bf16_adjacent_words(V a, V b) {
    const __m256i packed = _mm256_packus_epi32(_mm256_srli_epi32(bf16_round_bits(a), 16), _mm256_srli_epi32(bf16_round_bits(b), 16));
    return _mm256_permute4x64_epi64(packed, 0xD8);  // the 128-bit halves' a and b quarters back in order
  }
  static V dot2(V acc, VI x, uint32_t b) {
    const V xh = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
    const V xl = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    acc = _mm256_fmadd_ps(xh, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(b & 0xFFFF0000u))), acc);
    return _mm256_fmadd_ps(xl, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(b << 16))), acc);
  }
  // A sum of vectors' lanes in double precision.
  struct DoubleSum {
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    void add(V v) {
      lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
      hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    double total() const {
      alignas(32) double d[4];
      _mm256_store_pd(d, _mm256_add_pd(lo, hi));
      return (d[0] + d[1]) + (d[2] + d[3]);
    }
  };
};

}  // namespace
}  // namespace hearth::kernels
