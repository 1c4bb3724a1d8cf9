// The softmax of an AVX2 decode step (attention_decode_avx2.cpp, attention_decode_kt_avx2.cpp):
// each head's scores, 8 lanes wide, become probabilities in place, with the scalar path's
// arithmetic (sum in double, probabilities rounded to F16 for an F16 cache), the head's
// attention sink in the maximum and the sum, and a key part's statistics for attention_merge.
// Include only from files compiled with the AVX2 flags; internal linkage (see isa_local.h).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/avx2/vector_math_avx2.h"
#include "kernels/ops.h"

namespace hearth::kernels {
namespace {

// scores: n_heads rows of n_pad (a multiple of 8) for heads head_begin.., keys nobody sees
// already -inf; part: the step's key part or null (a part leaves the sink to the merge).
inline void decode_softmax(float* scores, int n_heads, int32_t n_pad, int32_t head_begin, const AttentionParams& p,
                           const KeyPart* part, bool round_f16) {
  for (int h = 0; h < n_heads; ++h) {
    float* s = scores + static_cast<size_t>(h) * n_pad;
    __m256 mx = _mm256_set1_ps(-INFINITY);
    for (int32_t j = 0; j < n_pad; j += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + j));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, mx);
    const float sink = part == nullptr && p.sinks != nullptr ? p.sinks[head_begin + h] : -INFINITY;
    const float max_s = std::max(*std::max_element(lanes, lanes + 8), sink);
    const __m256 max = _mm256_set1_ps(max_s);
    __m256d sum0 = _mm256_setzero_pd(), sum1 = _mm256_setzero_pd();
    for (int32_t j = 0; j < n_pad; j += 8) {
      const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(s + j), max));
      _mm256_storeu_ps(s + j, e);
      sum0 = _mm256_add_pd(sum0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
      sum1 = _mm256_add_pd(sum1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    alignas(32) double dl[4];
    _mm256_store_pd(dl, _mm256_add_pd(sum0, sum1));
    double total = (dl[0] + dl[1]) + (dl[2] + dl[3]);
    if (sink != -INFINITY) total += std::exp(static_cast<double>(sink - max_s));
    if (part != nullptr && part->stats != nullptr) {
      part->stats[2 * (head_begin + h)] = max_s;
      part->stats[2 * (head_begin + h) + 1] = static_cast<float>(total);
    }
    const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / total));
    for (int32_t j = 0; j < n_pad; j += 8) {
      __m256 pr = _mm256_mul_ps(_mm256_loadu_ps(s + j), inv);
      if (round_f16) pr = _mm256_cvtph_ps(_mm256_cvtps_ph(pr, _MM_FROUND_TO_NEAREST_INT));
      _mm256_storeu_ps(s + j, pr);
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
