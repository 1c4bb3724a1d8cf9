// The softmax of a SIMD decode step (the AVX2 and AVX-512 decode kernels, K in rows or
// transposed), written once over an ISA's vector traits (avx2/simd_traits_avx2.h,
// avx512/simd_traits_avx512.h: kLanes, V, load, store, set1, max, sub, mul, exp, hmax,
// round_f16, DoubleSum): each head's scores become probabilities in place, with the scalar
// path's arithmetic (sum in double, probabilities rounded to F16 for an F16 cache), the head's
// attention sink in the maximum and the sum, and a key part's statistics for attention_merge.
// Include only from a file compiled with an ISA's flags, after its traits: everything is in an
// anonymous namespace, so each ISA gets its own copy (isa_local.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/ops.h"

namespace hearth::kernels {
namespace {

// scores: n_heads rows of n_pad (a multiple of S::kLanes) for heads head_begin.., keys nobody
// sees already -inf; part: the step's key part or null (a part leaves the sink to the merge).
template <class S>
inline void decode_softmax(float* scores, int n_heads, int32_t n_pad, int32_t head_begin, const AttentionParams& p,
                           const KeyPart* part, bool round_f16) {
  using V = typename S::V;
  for (int h = 0; h < n_heads; ++h) {
    float* s = scores + static_cast<size_t>(h) * n_pad;
    V mx = S::set1(-INFINITY);
    for (int32_t j = 0; j < n_pad; j += S::kLanes) mx = S::max(mx, S::load(s + j));
    const float sink = part == nullptr && p.sinks != nullptr ? p.sinks[head_begin + h] : -INFINITY;
    const float max_s = std::max(S::hmax(mx), sink);
    const V max = S::set1(max_s);
    typename S::DoubleSum sum;
    for (int32_t j = 0; j < n_pad; j += S::kLanes) {
      const V e = S::exp(S::sub(S::load(s + j), max));
      S::store(s + j, e);
      sum.add(e);
    }
    double total = sum.total();
    if (sink != -INFINITY) total += std::exp(static_cast<double>(sink - max_s));
    if (part != nullptr && part->stats != nullptr) {
      part->stats[2 * (head_begin + h)] = max_s;
      part->stats[2 * (head_begin + h) + 1] = static_cast<float>(total);
    }
    const V inv = S::set1(static_cast<float>(1.0 / total));
    for (int32_t j = 0; j < n_pad; j += S::kLanes) {
      V pr = S::mul(S::load(s + j), inv);
      if (round_f16) pr = S::round_f16(pr);
      S::store(s + j, pr);
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
