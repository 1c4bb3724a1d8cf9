// Vector math the AVX-512 kernels share: a vector exp (softmax, SiLU, attention) and the
// 16-row horizontal reduction tree (integer GEMM sums, attention scores). Include only from
// files compiled with the AVX-512 flags; everything has internal linkage (see isa_local.h).
#pragma once

#include <immintrin.h>

namespace hearth::kernels {
namespace {

// e^x for 16 floats; the algorithm and constants of the AVX2 exp_ps (see there): Cody-Waite
// reduction by ln2, degree-7 Taylor polynomial, inputs clamped to [-104, 89]; the scaling by 2^n
// is one vscalefps (a single rounding, as AVX2's two-step scaling), 14 operations instead of 24
// and bit-identical to the two-step version it replaced (checked on all 2^32 inputs). NaN stays
// NaN: max and min return their second operand when either is NaN, which then runs through the
// polynomial.
inline __m512 exp_ps(__m512 x) {
  const __m512 xc = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// One level of a lane reduction tree, pairing the lanes that differ in bit BIT: lanes with the
// bit clear get a's pair sums (a[l] + a[l ^ 2^BIT]), lanes with it set b's (one permute, one
// blend, one add).
template <int BIT>
constexpr int pair_index(int l) { return (l & (1 << BIT)) != 0 ? 16 + (l ^ (1 << BIT)) : (l ^ (1 << BIT)); }
template <int BIT>
constexpr __mmask16 pair_high_lanes() {
  unsigned m = 0;
  for (int l = 0; l < 16; ++l) m |= ((l >> BIT) & 1u) << l;
  return static_cast<__mmask16>(m);
}
template <int BIT>
[[gnu::always_inline]] inline __m512i pair_permutation() {
  return _mm512_setr_epi32(pair_index<BIT>(0), pair_index<BIT>(1), pair_index<BIT>(2), pair_index<BIT>(3), pair_index<BIT>(4),
                           pair_index<BIT>(5), pair_index<BIT>(6), pair_index<BIT>(7), pair_index<BIT>(8), pair_index<BIT>(9),
                           pair_index<BIT>(10), pair_index<BIT>(11), pair_index<BIT>(12), pair_index<BIT>(13),
                           pair_index<BIT>(14), pair_index<BIT>(15));
}
template <int BIT>
[[gnu::always_inline]] inline __m512i pair_level(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_mask_blend_epi32(pair_high_lanes<BIT>(), a, b),
                          _mm512_permutex2var_epi32(a, pair_permutation<BIT>(), b));
}
template <int BIT>
[[gnu::always_inline]] inline __m512 pair_level(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_mask_blend_ps(pair_high_lanes<BIT>(), a, b), _mm512_permutex2var_ps(a, pair_permutation<BIT>(), b));
}

// reduce_rows_16 after its first level: w[m] = pair_level<3>(part[m], part[m + 8]), for kernels
// that pair each row with the row 8 after it as soon as both are done.
template <typename Vec>
inline Vec reduce_paired_rows_16(const Vec w[8]) {
  Vec x[4], y[2];
  for (int m = 0; m < 4; ++m) x[m] = pair_level<2>(w[m], w[m + 4]);
  for (int m = 0; m < 2; ++m) y[m] = pair_level<1>(x[m], x[m + 2]);
  return pair_level<0>(y[0], y[1]);
}

// Lane r of the result = sum of the 16 lanes of part[r]: a tree of pair levels (15 permutes, 15
// blends, 15 adds; two permutes per level before, the step's busiest shuffle port). Level one
// pairs rows r and r + 8 on lane bit 3, then rows 4 apart on bit 2, 2 apart on bit 1, 1 apart
// on bit 0, so lane r ends with row r; every row's lanes are added in the same order (bit 3,
// 2, 1, 0 of the lane: the float sums are those of the two-permute tree it replaced).
template <typename Vec>
inline Vec reduce_rows_16(const Vec part[16]) {
  Vec w[8];
  for (int m = 0; m < 8; ++m) w[m] = pair_level<3>(part[m], part[m + 8]);
  return reduce_paired_rows_16(w);
}

}  // namespace
}  // namespace hearth::kernels
