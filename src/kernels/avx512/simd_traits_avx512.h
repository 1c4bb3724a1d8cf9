// AVX-512 vector traits, 16 floats per register, masks in mask registers: what the kernels
// written once over an ISA's vectors (flash_tile_simd.h, decode_softmax_simd.h) need of it.
// Include only from files compiled with the AVX-512 flags; internal linkage (see isa_local.h).
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/avx512/vector_math_avx512.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels {
namespace {

struct Avx512Traits {
  static constexpr int kLanes = 16;
  static constexpr int kRegs = 32;  // vector registers
  using V = __m512;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V exp(V x) { return exp_ps(x); }
  // s where lo <= j <= hi, else -inf
  static V mask_range(V s, V j, V lo, V hi) {
    const __mmask16 in = _mm512_cmp_ps_mask(j, lo, _CMP_GE_OQ) & _mm512_cmp_ps_mask(j, hi, _CMP_LE_OQ);
    return _mm512_mask_blend_ps(in, _mm512_set1_ps(-INFINITY), s);
  }
  // e^(s - m), exactly 0 where s is -inf
  static V exp_below(V s, V m) {
    const __mmask16 live = _mm512_cmp_ps_mask(s, _mm512_set1_ps(-INFINITY), _CMP_NEQ_OQ);
    return _mm512_maskz_mov_ps(live, exp_ps(_mm512_sub_ps(s, m)));
  }
  static V finite_or_zero(V m) {
    const __mmask16 live = _mm512_cmp_ps_mask(m, _mm512_set1_ps(-INFINITY), _CMP_NEQ_OQ);
    return _mm512_maskz_mov_ps(live, m);
  }
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
  static void f16_to_f32(const uint16_t* src, float* dst, int n) {  // n % 16 == 0
    for (int i = 0; i < n; i += 16) {
      _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
    }
  }
  static void round_f16(float* x, size_t n) {  // n % 16 == 0
    for (size_t i = 0; i < n; i += 16) {
      const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm512_storeu_ps(x + i, _mm512_cvtph_ps(h));
    }
  }
  static void q8_0_to_f32(const BlockQ8_0* b, float* dst, int n) {  // n % 32 == 0
    for (int i = 0; i < n / kQK; ++i) {
      const __m512 d = _mm512_set1_ps(_cvtsh_ss(b[i].d));
      for (int h = 0; h < 2; ++h) {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs + 16 * h));
        _mm512_storeu_ps(dst + i * kQK + 16 * h, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d));
      }
    }
  }
  // Q4_0: element j (low nibble of qs[j]) and j + 16 (high nibble), each minus 8.
  static void q4_0_to_f32(const BlockQ4_0* b, float* dst, int n) {  // n % 32 == 0
    const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    for (int i = 0; i < n / kQK; ++i) {
      const __m512 d = _mm512_set1_ps(_cvtsh_ss(b[i].d));
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low), eight);
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low), eight);
      _mm512_storeu_ps(dst + i * kQK, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d));
      _mm512_storeu_ps(dst + i * kQK + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d));
    }
  }
  // The largest lane.
  static float hmax(V v) { return _mm512_reduce_max_ps(v); }
  // Every lane rounded to the nearest F16 and back.
  static V round_f16(V v) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  // ---- BF16 pairs (a BF16 cache, ops.h kv_key_paired_index): a 32-bit word holds two BF16
  // values, the first in its low half.
  using VI = __m512i;
  static VI load_words(const void* p) { return _mm512_loadu_si512(p); }
  static void store_words(void* p, VI x) { _mm512_storeu_si512(p, x); }
  static VI and_words(VI x, uint32_t m) { return _mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(m))); }
  // Each lane rounded to BF16 as fp32_to_bf16 does (to nearest even; a NaN made quiet), left in
  // the lane's high half with the low half zero.
  static VI bf16_round_bits(V x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
    const __mmask16 nan =
        _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
    const __m512i r = _mm512_mask_blend_epi32(nan, _mm512_add_epi32(u, bias), _mm512_or_si512(u, _mm512_set1_epi32(0x400000)));
    return _mm512_and_si512(r, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
  }
  // Word i = (lo[i], hi[i]), each rounded to BF16.
  static VI bf16_pair_words(V lo, V hi) {
    return _mm512_or_si512(_mm512_srli_epi32(bf16_round_bits(lo), 16), bf16_round_bits(hi));
  }
  // Word i = (x[2i], x[2i + 1]) of the 2 * kLanes floats of a then b, each rounded to BF16.
  static VI bf16_adjacent_words(V a, V b) {
    const __m512i high_halves = _mm512_setr_epi32(0x00030001, 0x00070005, 0x000B0009, 0x000F000D, 0x00130011, 0x00170015,
                                                  0x001B0019, 0x001F001D, 0x00230021, 0x00270025, 0x002B0029, 0x002F002D,
                                                  0x00330031, 0x00370035, 0x003B0039, 0x003F003D);
    return _mm512_permutex2var_epi16(bf16_round_bits(a), high_halves, bf16_round_bits(b));
  }
  // acc + hi(x) * hi(b) + lo(x) * lo(b) lane by lane (x: words, b: one word for every lane), the
  // high products added first: the arithmetic of vdpbf16ps, whose products of two BF16 values
  // are exact, emulated with two FMAs (the same results but for denormal inputs, which that
  // instruction reads as zeros).
  static V dot2(V acc, VI x, uint32_t b) {
    const V xh = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
    const V xl = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    acc = _mm512_fmadd_ps(xh, _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(b & 0xFFFF0000u))), acc);
    return _mm512_fmadd_ps(xl, _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(b << 16))), acc);
  }
  // A sum of vectors' lanes in double precision.
  struct DoubleSum {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    void add(V v) {
      lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
      hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
    }
    double total() const { return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi)); }
  };
};

}  // namespace
}  // namespace hearth::kernels
