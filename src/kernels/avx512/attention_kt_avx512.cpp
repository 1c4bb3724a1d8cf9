// AVX-512 attention of one query token over an F16 paged cache stored by head (KvSpan::by_head:
// K transposed, element e of a block's token o at e * block_tokens + o; V by head), the layout
// the engine gives an F16 cache, written so that decode at depth streams K and V:
// - keys go in 16-key groups aligned to the cache blocks: for each group and each KV head of
//   the call, one F16 run per element is converted and multiply-added with that element of
//   every query head of the GQA group (broadcast), so each head's 16 scores build up in one
//   register with no sums across lanes (the row layout needs a reduction tree per 16 keys);
// - a KV head's values of a group are one range in its block, walked by address (no table of
//   row pointers); each converted value vector is multiply-added into the accumulators of the
//   group's heads, which stay in registers;
// - what comes next is prefetched one line per inner-loop step, a share per KV head
//   (kernels/decode_kt_stream.h).
// Keys of a group outside the step's range score -inf; the softmax is decode_softmax's (sum in
// double, probabilities rounded to F16), Q is rounded to F16: the scalar path's arithmetic, the
// products summed in another order. The BF16 cache's step (decode_bf16_simd.h, vdpbf16ps
// emulated) shares the stream and is instantiated here too.
#include "kernels/avx512/attention_kt_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/avx512/simd_traits_avx512.h"
#include "kernels/decode_bf16_simd.h"
#include "kernels/decode_kt_stream.h"
#include "kernels/decode_softmax_simd.h"
#include "kernels/decode_step_span.h"

namespace hearth::kernels {
namespace {

constexpr int kGroup = kTransposedKeyGroup;  // keys per group: one F16 run per element, one register of scores
static_assert(kGroup == 16, "a group is one AVX-512 register of scores");
constexpr int kMaxHeadDim = 256;

// c * tanh(x / c) lane by lane (a softcap: rare, kept out of the scores' register path).
[[gnu::noinline]] __m512 softcap_lanes(__m512 x, float c) {
  alignas(64) float lanes[kGroup];
  _mm512_store_ps(lanes, x);
  for (float& v : lanes) v = c * std::tanh(v * (1.0f / c));
  return _mm512_load_ps(lanes);
}

// Scores of one group (element d of its keys: the 16-value run at kt + d * block_tokens) for
// gn (<= 4) query heads (qf: F16-rounded, dk floats apart): two registers per head (even and
// odd elements: 8 chains for a full group), then scale, softcap, and -inf for the keys outside
// [lo, hi] (key0: the group's first position). One prefetch line per element pair.
template <bool FULL>
[[gnu::always_inline]] inline void score_group(const uint16_t* kt, int block_tokens, int dk, const float* qf, int gn_rt,
                                               const AttentionParams& p, int32_t key0, int32_t lo, int32_t hi,
                                               int32_t n_pad, float* dst, PrefetchRun& pf_io) {
  PrefetchRun pf = pf_io;  // a local: a reference would store its cursor every step
  const int gn = FULL ? 4 : gn_rt;
  __m512 acc[4][2];
  for (int h = 0; h < 4; ++h) {
    if (h >= gn) break;
    acc[h][0] = _mm512_setzero_ps();
    acc[h][1] = _mm512_setzero_ps();
  }
  const size_t stride = static_cast<size_t>(block_tokens);
  for (int d = 0; d < dk; d += 2) {
    pf.issue1();
    const __m512 k0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(kt + d * stride)));
    const __m512 k1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(kt + (d + 1) * stride)));
    for (int h = 0; h < 4; ++h) {
      if (h >= gn) break;
      const float* qh = qf + static_cast<size_t>(h) * dk + d;
      acc[h][0] = _mm512_fmadd_ps(_mm512_set1_ps(qh[0]), k0, acc[h][0]);
      acc[h][1] = _mm512_fmadd_ps(_mm512_set1_ps(qh[1]), k1, acc[h][1]);
    }
  }
  const __m512i lane = _mm512_add_epi32(_mm512_set1_epi32(key0),
                                        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  const __mmask16 visible =
      _mm512_cmpge_epi32_mask(lane, _mm512_set1_epi32(lo)) & _mm512_cmple_epi32_mask(lane, _mm512_set1_epi32(hi));
  const __m512 scale = _mm512_set1_ps(p.scale), neg_inf = _mm512_set1_ps(-INFINITY);
  __m512 s[4];
  for (int h = 0; h < 4; ++h) {
    if (h >= gn) break;
    s[h] = _mm512_mul_ps(_mm512_add_ps(acc[h][0], acc[h][1]), scale);
  }
  if (p.softcap != 0.0f) [[unlikely]] {
    for (int h = 0; h < gn; ++h) s[h] = softcap_lanes(s[h], p.softcap);
  }
  for (int h = 0; h < 4; ++h) {
    if (h >= gn) break;
    _mm512_storeu_ps(dst + static_cast<size_t>(h) * n_pad, _mm512_mask_blend_ps(visible, neg_inf, s[h]));
  }
  pf_io = pf;
}

// out[h] += probs[h][i] * V(key i) for keys [i0, i1) of a group, whose values are key_bytes apart
// from v (the KV head's slice of the group's first row), for gn heads (output rows dv apart,
// probabilities n_pad apart). VC (vectors per head, 4 or 8): the 16 / VC heads' accumulators
// stay in registers; 0: any dv, accumulators in memory. FULL (VC > 0): gn is 16 / VC.
template <int VC, bool FULL>
[[gnu::always_inline]] inline void value_group(const uint8_t* v, size_t key_bytes, int i0, int i1, const float* probs,
                                               int32_t n_pad, int gn_rt, float* out, int dv, PrefetchRun& pf_io,
                                               int pf_per_key) {
  PrefetchRun pf = pf_io;  // a local: a reference would store its cursor every step
  if constexpr (VC > 0) {
    constexpr int kHeads = 16 / VC;
    const int gn = FULL ? kHeads : gn_rt;
    __m512 acc[kHeads][VC];
    for (int h = 0; h < kHeads; ++h) {
      if (h >= gn) break;
      for (int c = 0; c < VC; ++c) acc[h][c] = _mm512_loadu_ps(out + static_cast<int64_t>(h) * dv + 16 * c);
    }
    for (int i = i0; i < i1; ++i) {
      pf.issue1();  // most often the lines per key are 1 or 2 (dv 64: 2)
      if (pf_per_key > 1) pf.issue(pf_per_key - 1);
      const auto* row = reinterpret_cast<const uint16_t*>(v + static_cast<size_t>(i) * key_bytes);
      __m512 x[VC];
      for (int c = 0; c < VC; ++c) {
        x[c] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16 * c)));
      }
      for (int h = 0; h < kHeads; ++h) {
        if (h >= gn) break;
        const __m512 pr = _mm512_set1_ps(probs[static_cast<size_t>(h) * n_pad + i]);
        for (int c = 0; c < VC; ++c) acc[h][c] = _mm512_fmadd_ps(x[c], pr, acc[h][c]);
      }
    }
    for (int h = 0; h < kHeads; ++h) {
      if (h >= gn) break;
      for (int c = 0; c < VC; ++c) _mm512_storeu_ps(out + static_cast<int64_t>(h) * dv + 16 * c, acc[h][c]);
    }
  } else {
    for (int i = i0; i < i1; ++i) {
      pf.issue(pf_per_key);
      const auto* row = reinterpret_cast<const uint16_t*>(v + static_cast<size_t>(i) * key_bytes);
      for (int h = 0; h < gn_rt; ++h) {
        float* oh = out + static_cast<int64_t>(h) * dv;
        const __m512 pr = _mm512_set1_ps(probs[static_cast<size_t>(h) * n_pad + i]);
        for (int c = 0; c < dv; c += 16) {
          const __m512 x = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c)));
          _mm512_storeu_ps(oh + c, _mm512_fmadd_ps(x, pr, _mm512_loadu_ps(oh + c)));
        }
      }
    }
  }
  pf_io = pf;
}

// The step's value pass with VC vectors per head (value_group), as many heads per pass as
// their accumulators fit 16 registers. Inlined whole (the lambdas too): called per group and
// KV head, the kernels' calls cost as much as a tenth of a step in cache.
template <int VC>
void value_pass(const KtStep& s, const KvSpan& kv, int dv, float* out) {
  const int per_pass = VC > 0 ? 16 / VC : std::max(1, 256 / dv);
  kt_value_pass(s, per_pass, [&](const uint8_t* v, int i0, int i1, size_t r, int gn, int head, int32_t g,
                                     PrefetchRun& pf, int per_key) __attribute__((always_inline)) {
    const float* probs = s.scores + r * s.n_pad + g * kGroup;
    float* o = out + static_cast<int64_t>(head) * dv;
    if constexpr (VC > 0) {
      if (gn == per_pass) {
        return value_group<VC, true>(v, s.st.v_key_bytes(), i0, i1, probs, s.n_pad, gn, o, dv, pf, per_key);
      }
    }
    value_group<VC, false>(v, s.st.v_key_bytes(), i0, i1, probs, s.n_pad, gn, o, dv, pf, per_key);
  });
}

}  // namespace

bool attention_decode_kt_avx512(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                                int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                                std::vector<float>& scratch) {
  const int dk = p.head_dim_k, dv = p.head_dim_v, bt = kv.block_tokens;
  KtStep s;
  if (!kt_step_begin(q_pos, n_kv, kv, p, head_begin, head_end, part, out, 16, kMaxHeadDim, DType::kF16, scratch, &s))
    return false;
  if (!s.span.has_work()) return true;
  for (int h = 0; h < s.n_heads; ++h) {  // Q rounded to F16
    const float* qh = q + static_cast<int64_t>(s.span.head_begin + h) * dk;
    for (int c = 0; c < dk; c += 16) {
      const __m512 x = _mm512_loadu_ps(qh + c);
      _mm512_storeu_ps(s.qf + static_cast<size_t>(h) * dk + c,
                       _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    }
  }
  kt_score_pass(s, 4, [&](const uint16_t* kt, size_t r, int gn, int32_t g,
                          PrefetchRun& pf) __attribute__((always_inline)) {
    float* dst = s.scores + r * s.n_pad + g * kGroup;
    if (gn == 4) {
      score_group<true>(kt, bt, dk, s.qf + r * dk, gn, p, s.st.key0(g), s.span.lo, s.span.hi, s.n_pad, dst, pf);
    } else {
      score_group<false>(kt, bt, dk, s.qf + r * dk, gn, p, s.st.key0(g), s.span.lo, s.span.hi, s.n_pad, dst, pf);
    }
  });
  decode_softmax<Avx512Traits>(s.scores, s.n_heads, s.n_pad, s.span.head_begin, p, part, true);
  switch (dv / 16) {
    case 4:
      value_pass<4>(s, kv, dv, out);
      break;
    case 8:
      value_pass<8>(s, kv, dv, out);
      break;
    default:
      value_pass<0>(s, kv, dv, out);
  }
  return true;
}

bool attention_decode_bf16_avx512(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv,
                                  const AttentionParams& p, int32_t head_begin, int32_t head_end, const KeyPart* part,
                                  float* out, std::vector<float>& scratch) {
  return attention_decode_bf16<Avx512Traits>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
}

}  // namespace hearth::kernels
