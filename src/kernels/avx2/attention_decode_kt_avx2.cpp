// AVX2 attention of one query token over an F16 paged cache stored by head (KvSpan::by_head: K
// transposed, V by head), the layout the engine gives an F16 cache; the AVX-512 kernel's
// scheme (attention_kt_avx512.cpp) on 8-lane vectors:
// - keys go in 16-key groups aligned to the cache blocks, each as two halves of 8: per element
//   of a KV head, two F16 runs converted and multiply-added with that element of up to 4 query
//   heads (broadcast), so the scores build up in registers with no sums across lanes;
// - a KV head's values of a group are one range in its block, walked by address, 16 values
//   of a key at a time into the accumulators of up to 4 heads, which stay in registers over the keys;
// - what comes next is prefetched one line per inner-loop step (kernels/decode_kt_stream.h).
// Keys outside the step's range score -inf; the softmax is decode_softmax's; Q is rounded to
// F16: the scalar path's arithmetic, the products summed in another order.
#include "kernels/avx2/attention_decode_kt_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/avx2/simd_traits_avx2.h"
#include "kernels/decode_bf16_simd.h"
#include "kernels/decode_kt_stream.h"
#include "kernels/decode_softmax_simd.h"
#include "kernels/decode_step_span.h"

namespace hearth::kernels {
namespace {

constexpr int kGroup = kTransposedKeyGroup;
static_assert(kGroup == 16, "a group is two 8-lane halves");
constexpr int kMaxHeadDim = 256;
constexpr int kHeadsPerPass = 4;

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Scores of one group (element d of its keys: the run of 16 at kt + d * block_tokens) for gn
// (<= 4) query heads (qf: F16-rounded, dk floats apart), 8 chains for a full pass; then scale,
// softcap, and -inf for keys outside [lo, hi] (key0: the group's first position). FULL: gn is
// 4, a constant, so the accumulators stay in registers (with a run-time count GCC keeps them
// on the stack: 2x slower).
template <bool FULL>
[[gnu::always_inline]] inline void score_group(const uint16_t* kt, int block_tokens, int dk, const float* qf, int gn_rt,
                                               const AttentionParams& p, int32_t key0, int32_t lo, int32_t hi,
                                               int32_t n_pad, float* dst, PrefetchRun& pf_io) {
  PrefetchRun pf = pf_io;  // a local: a reference would store its cursor every step
  const int gn = FULL ? kHeadsPerPass : gn_rt;
  __m256 acc[kHeadsPerPass][2];
  for (int h = 0; h < gn; ++h) acc[h][0] = acc[h][1] = _mm256_setzero_ps();
  const size_t stride = static_cast<size_t>(block_tokens);
  for (int d = 0; d < dk; ++d) {
    if ((d & 1) == 0) pf.issue1();
    const __m256 k0 = load_f16x8(kt + d * stride), k1 = load_f16x8(kt + d * stride + 8);
    for (int h = 0; h < kHeadsPerPass; ++h) {
      if (h >= gn) break;
      const __m256 qd = _mm256_broadcast_ss(qf + static_cast<size_t>(h) * dk + d);
      acc[h][0] = _mm256_fmadd_ps(qd, k0, acc[h][0]);
      acc[h][1] = _mm256_fmadd_ps(qd, k1, acc[h][1]);
    }
  }
  alignas(32) float lanes[kGroup];
  for (int h = 0; h < gn; ++h) {
    _mm256_store_ps(lanes, acc[h][0]);
    _mm256_store_ps(lanes + 8, acc[h][1]);
    float* out = dst + static_cast<size_t>(h) * n_pad;
    for (int i = 0; i < kGroup; ++i) {
      float s = lanes[i] * p.scale;
      if (p.softcap != 0.0f) s = p.softcap * std::tanh(s * (1.0f / p.softcap));
      out[i] = key0 + i >= lo && key0 + i <= hi ? s : -INFINITY;
    }
  }
  pf_io = pf;
}

// out[h] += probs[h][i] * V(key i) for keys [i0, i1) of a group, whose values are key_bytes apart
// from v (the KV head's slice of the group's first row), for gn (<= 4) heads (output rows dv
// apart, probabilities n_pad apart), 16 values at a time with the accumulators in registers
// (FULL: gn is 4, as for score_group).
template <bool FULL>
[[gnu::always_inline]] inline void value_group(const uint8_t* v, size_t key_bytes, int i0, int i1, const float* probs,
                                               int32_t n_pad, int gn_rt, float* out, int dv, PrefetchRun& pf_io,
                                               int pf_per_key) {
  PrefetchRun pf = pf_io;  // a local: a reference would store its cursor every step
  const int gn = FULL ? kHeadsPerPass : gn_rt;
  for (int c = 0; c < dv; c += 16) {
    const bool two = c + 8 < dv;  // dv is a multiple of 8: the last chunk may be single
    __m256 acc[kHeadsPerPass][2];
    for (int h = 0; h < gn; ++h) {
      const float* o = out + static_cast<int64_t>(h) * dv + c;
      acc[h][0] = _mm256_loadu_ps(o);
      acc[h][1] = two ? _mm256_loadu_ps(o + 8) : _mm256_setzero_ps();
    }
    for (int i = i0; i < i1; ++i) {
      if (c == 0) pf.issue(pf_per_key);
      const auto* row = reinterpret_cast<const uint16_t*>(v + static_cast<size_t>(i) * key_bytes) + c;
      const __m256 x0 = load_f16x8(row), x1 = two ? load_f16x8(row + 8) : _mm256_setzero_ps();
      for (int h = 0; h < kHeadsPerPass; ++h) {
        if (h >= gn) break;
        const __m256 pr = _mm256_broadcast_ss(probs + static_cast<size_t>(h) * n_pad + i);
        acc[h][0] = _mm256_fmadd_ps(x0, pr, acc[h][0]);
        acc[h][1] = _mm256_fmadd_ps(x1, pr, acc[h][1]);
      }
    }
    for (int h = 0; h < gn; ++h) {
      float* o = out + static_cast<int64_t>(h) * dv + c;
      _mm256_storeu_ps(o, acc[h][0]);
      if (two) _mm256_storeu_ps(o + 8, acc[h][1]);
    }
  }
  pf_io = pf;
}

}  // namespace

bool attention_decode_kt_avx2(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                              int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                              std::vector<float>& scratch) {
  const int dk = p.head_dim_k, dv = p.head_dim_v, bt = kv.block_tokens;
  KtStep s;
  if (!kt_step_begin(q_pos, n_kv, kv, p, head_begin, head_end, part, out, 8, kMaxHeadDim, DType::kF16, scratch, &s))
    return false;
  if (!s.span.has_work()) return true;
  for (int h = 0; h < s.n_heads; ++h) {  // Q rounded to F16
    const float* qh = q + static_cast<int64_t>(s.span.head_begin + h) * dk;
    for (int c = 0; c < dk; c += 8) {
      const __m256 x = _mm256_loadu_ps(qh + c);
      _mm256_storeu_ps(s.qf + static_cast<size_t>(h) * dk + c, _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)));
    }
  }
  // Inlined whole (the lambdas too): called per group and KV head, the kernels' calls cost as
  // much as a tenth of a step in cache (measured on AVX-512).
  kt_score_pass(s, kHeadsPerPass, [&](const uint16_t* kt, size_t r, int gn, int32_t g,
                                      PrefetchRun& pf) __attribute__((always_inline)) {
    float* dst = s.scores + r * s.n_pad + g * kGroup;
    if (gn == kHeadsPerPass) {
      score_group<true>(kt, bt, dk, s.qf + r * dk, gn, p, s.st.key0(g), s.span.lo, s.span.hi, s.n_pad, dst, pf);
    } else {
      score_group<false>(kt, bt, dk, s.qf + r * dk, gn, p, s.st.key0(g), s.span.lo, s.span.hi, s.n_pad, dst, pf);
    }
  });
  decode_softmax<Avx2Traits>(s.scores, s.n_heads, s.n_pad, s.span.head_begin, p, part, true);
  kt_value_pass(s, kHeadsPerPass, [&](const uint8_t* v, int i0, int i1, size_t r, int gn, int head, int32_t g,
                                          PrefetchRun& pf, int per_key) __attribute__((always_inline)) {
    const float* probs = s.scores + r * s.n_pad + g * kGroup;
    float* o = out + static_cast<int64_t>(head) * dv;
    if (gn == kHeadsPerPass) {
      value_group<true>(v, s.st.v_key_bytes(), i0, i1, probs, s.n_pad, gn, o, dv, pf, per_key);
    } else {
      value_group<false>(v, s.st.v_key_bytes(), i0, i1, probs, s.n_pad, gn, o, dv, pf, per_key);
    }
  });
  return true;
}

bool attention_decode_bf16_avx2(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                                int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                                std::vector<float>& scratch) {
  return attention_decode_bf16<Avx2Traits>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
}

}  // namespace hearth::kernels
