// Vector math the AVX-512 kernels share: a vector exp (softmax, SiLU, attention) and the
// 16-row horizontal reduction tree (integer GEMM sums, attention scores). Include only from
// files compiled with the AVX-512 flags; everything has internal linkage (see isa_local.h).
#pragma once

#include <immintrin.h>

#include <type_traits>

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

// Lane r of the result = sum of the 16 lanes of part[r]: a tree of pairwise lane shuffles and
// adds (45 operations), for kernels that accumulate one row per register. Each level pairs
// registers (a, b) and adds the two halves of their lanes, keeping row order, so the float
// version always adds in the same order.
template <typename Vec>
inline Vec reduce_rows_16(const Vec part[16]) {
  auto level = [](Vec a, Vec b, __m512i lo_idx, __m512i hi_idx) {
    if constexpr (std::is_same_v<Vec, __m512>) {
      return _mm512_add_ps(_mm512_permutex2var_ps(a, lo_idx, b), _mm512_permutex2var_ps(a, hi_idx, b));
    } else {
      return _mm512_add_epi32(_mm512_permutex2var_epi32(a, lo_idx, b), _mm512_permutex2var_epi32(a, hi_idx, b));
    }
  };
  const __m512i l1_lo = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  const __m512i l1_hi = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  const __m512i l2_lo = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
  const __m512i l2_hi = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  const __m512i l3_lo = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29);
  const __m512i l3_hi = _mm512_setr_epi32(2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  const __m512i l4_lo = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i l4_hi = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  Vec w[8], x[4], y[2];
  for (int m = 0; m < 8; ++m) w[m] = level(part[2 * m], part[2 * m + 1], l1_lo, l1_hi);  // 8 lanes per row
  for (int m = 0; m < 4; ++m) x[m] = level(w[2 * m], w[2 * m + 1], l2_lo, l2_hi);        // 4 lanes per row
  for (int m = 0; m < 2; ++m) y[m] = level(x[2 * m], x[2 * m + 1], l3_lo, l3_hi);        // 2 lanes per row
  return level(y[0], y[1], l4_lo, l4_hi);
}

}  // namespace
}  // namespace hearth::kernels
