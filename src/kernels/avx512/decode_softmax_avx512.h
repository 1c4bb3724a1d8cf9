// The softmax of an AVX-512 decode step (attention_avx512.cpp, attention_kt_avx512.cpp): each
// head's scores, 16 lanes wide, become probabilities in place, with the scalar path's arithmetic
// (sum in double, probabilities rounded to F16 for an F16 cache), the head's attention sink in
// the maximum and the sum, and a key part's statistics for attention_merge. Include only from
// files compiled with the AVX-512 flags; internal linkage (see isa_local.h).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/avx512/vector_math_avx512.h"
#include "kernels/ops.h"

namespace hearth::kernels {
namespace {

// scores: n_heads rows of n_pad (a multiple of 16) for heads head_begin.., keys nobody sees
// already -inf; part: the step's key part or null (a part leaves the sink to the merge).
inline void decode_softmax(float* scores, int n_heads, int32_t n_pad, int32_t head_begin, const AttentionParams& p,
                           const KeyPart* part, bool round_f16) {
  for (int h = 0; h < n_heads; ++h) {
    float* s = scores + static_cast<size_t>(h) * n_pad;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int32_t j = 0; j < n_pad; j += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(s + j));
    const float sink = part == nullptr && p.sinks != nullptr ? p.sinks[head_begin + h] : -INFINITY;
    const float max_s = std::max(_mm512_reduce_max_ps(mx), sink);
    const __m512 max = _mm512_set1_ps(max_s);
    __m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
    for (int32_t j = 0; j < n_pad; j += 16) {
      const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(s + j), max));
      _mm512_storeu_ps(s + j, e);
      sum0 = _mm512_add_pd(sum0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
      sum1 = _mm512_add_pd(sum1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
    }
    double total = _mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1));
    if (sink != -INFINITY) total += std::exp(static_cast<double>(sink - max_s));
    if (part != nullptr && part->stats != nullptr) {
      part->stats[2 * (head_begin + h)] = max_s;
      part->stats[2 * (head_begin + h) + 1] = static_cast<float>(total);
    }
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / total));
    for (int32_t j = 0; j < n_pad; j += 16) {
      __m512 pr = _mm512_mul_ps(_mm512_loadu_ps(s + j), inv);
      if (round_f16) pr = _mm512_cvtph_ps(_mm512_cvtps_ph(pr, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      _mm512_storeu_ps(s + j, pr);
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
