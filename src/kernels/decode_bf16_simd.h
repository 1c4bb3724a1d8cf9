// The decode step over a BF16 cache (ops.h: K by element pair, V by token pair), written once
// over an ISA's vector traits (S: the float traits plus VI, load_words, store_words, and_words,
// dot2, bf16_adjacent_words) and compiled by avx2/, avx512/ and avx512_bf16/ with their own flags.
// dot2 is where they differ: avx512_bf16/ issues vdpbf16ps (two BF16 products per F32 lane and
// instruction, as many instructions per cycle as FMAs: half the arithmetic of an F16 cache for
// the same bytes), the others emulate it with two FMAs and the same results.
// - keys go in the 16-key groups of decode_kt_stream.h: for each group and KV head, run i holds
//   elements 2i and 2i + 1 of the 16 keys, one word per key, and one dot2 per run adds them
//   times the query's pair into that head's 16 scores (no sums across lanes);
// - values go by token pair: a pair row holds the two keys' values interleaved, one dot2 per
//   vector adds both keys times their probability pair into the output;
// - what comes next is prefetched as the F16 transposed-K steps do (decode_kt_stream.h).
// Q and the probabilities are rounded to BF16 (ops.h attention()'s arithmetic for this cache;
// the softmax is decode_softmax's, sum in double). A pair with one key outside the step drops
// that key's half of the value word (its probability is zero, but its value may be anything the
// block held, and 0 x inf would not be zero). Include only from a file compiled with an ISA's
// flags, after its traits: internal linkage (isa_local.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/decode_kt_stream.h"
#include "kernels/decode_softmax_simd.h"
#include "kernels/decode_step_span.h"
#include "kernels/ops.h"
#include "tensor/fp16.h"

namespace hearth::kernels {
namespace {

// A word of two BF16 values in float scratch (the step keeps its words where its floats were).
using Bf16Word = uint32_t __attribute__((may_alias));

constexpr int kBf16MaxHeadDim = 256;

// c * tanh(x / c) lane by lane (a softcap: rare, kept out of the scores' register path).
template <class S>
[[gnu::noinline]] typename S::V bf16_softcap_lanes(typename S::V x, float c) {
  alignas(64) float lanes[S::kLanes];
  S::store(lanes, x);
  for (float& v : lanes) v = c * std::tanh(v * (1.0f / c));
  return S::load(lanes);
}

// Scores of one group for gn (<= 4) query heads: run i of the KV head's K at kt + i * 2 *
// block_tokens BF16 values (dk / 2 runs), the heads' query pairs at qw (dk / 2 words apart);
// two chains per head and vector (even and odd runs), then scale, softcap, and -inf for the
// keys outside [lo, hi] (key0: the group's first position). Two prefetch lines per run pair
// (a KV head's runs of a group are one line each).
template <class S, bool FULL>
[[gnu::always_inline]] inline void bf16_score_group(const uint16_t* kt, int block_tokens, int dk, const Bf16Word* qw,
                                                    int gn_rt, const AttentionParams& p, int32_t key0, int32_t lo,
                                                    int32_t hi, int32_t n_pad, float* dst, PrefetchRun& pf_io) {
  using V = typename S::V;
  using VI = typename S::VI;
  constexpr int KV = kTransposedKeyGroup / S::kLanes;  // vectors per group
  PrefetchRun pf = pf_io;  // a local: a reference would store its cursor every step
  const int gn = FULL ? 4 : gn_rt;
  const int dk2 = dk / 2;
  V acc[4][KV][2];
  for (int h = 0; h < 4; ++h) {
    for (int k = 0; k < KV; ++k) acc[h][k][0] = acc[h][k][1] = S::zero();
  }
  const size_t stride = 2 * static_cast<size_t>(block_tokens);
  for (int i = 0; i < dk2; i += 2) {
    pf.issue(2);
    VI k0[KV], k1[KV];
    for (int k = 0; k < KV; ++k) {
      k0[k] = S::load_words(kt + i * stride + 2 * S::kLanes * k);
      k1[k] = S::load_words(kt + (i + 1) * stride + 2 * S::kLanes * k);
    }
    for (int h = 0; h < 4; ++h) {
      if (h >= gn) break;
      const Bf16Word* qh = qw + static_cast<size_t>(h) * dk2 + i;
      for (int k = 0; k < KV; ++k) {
        acc[h][k][0] = S::dot2(acc[h][k][0], k0[k], qh[0]);
        acc[h][k][1] = S::dot2(acc[h][k][1], k1[k], qh[1]);
      }
    }
  }
  alignas(64) static constexpr float kIota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const V scale = S::set1(p.scale), lo_f = S::set1(static_cast<float>(lo)), hi_f = S::set1(static_cast<float>(hi));
  for (int k = 0; k < KV; ++k) {
    const V key = S::add(S::set1(static_cast<float>(key0 + S::kLanes * k)), S::load(kIota));
    for (int h = 0; h < 4; ++h) {
      if (h >= gn) break;
      V s = S::mul(S::add(acc[h][k][0], acc[h][k][1]), scale);
      if (p.softcap != 0.0f) [[unlikely]] s = bf16_softcap_lanes<S>(s, p.softcap);
      S::store(dst + static_cast<size_t>(h) * n_pad + S::kLanes * k, S::mask_range(s, key, lo_f, hi_f));
    }
  }
  pf_io = pf;
}

// out[h] += probabilities x V for keys [i0, i1) of a group by token pair: the pair of the
// group's keys m, m + 1 (m even) is the words at v + m * key_bytes (v: the KV head's values of
// the group's first pair), its probabilities the words pw[h * pw_stride + m / 2]. VC: vectors
// per head (dv / kLanes); the heads' accumulators stay in registers (kHeads of them per pass);
// 0: any dv, accumulators in memory. FULL (VC > 0): gn is kHeads.
template <class S, int VC, bool FULL>
[[gnu::always_inline]] inline void bf16_value_group(const uint8_t* v, size_t key_bytes, int i0, int i1,
                                                    const Bf16Word* pw, int32_t pw_stride, int gn_rt, float* out,
                                                    int dv, PrefetchRun& pf_io, int pf_per_pair) {
  using V = typename S::V;
  using VI = typename S::VI;
  PrefetchRun pf = pf_io;
  // The words of pair m with a key outside [i0, i1) keep only the other key's half.
  auto keep = [&](int m) -> uint32_t { return (m >= i0 ? 0x0000FFFFu : 0u) | (m + 1 < i1 ? 0xFFFF0000u : 0u); };
  if constexpr (VC > 0) {
    constexpr int kHeads = std::max(1, S::kRegs / 2 / VC);
    const int gn = FULL ? kHeads : gn_rt;
    V acc[kHeads][VC];
    for (int h = 0; h < kHeads; ++h) {
      if (h >= gn) break;
      for (int c = 0; c < VC; ++c) acc[h][c] = S::load(out + static_cast<int64_t>(h) * dv + S::kLanes * c);
    }
    for (int m = i0 & ~1; m < i1; m += 2) {
      pf.issue(pf_per_pair);
      const uint8_t* row = v + static_cast<size_t>(m) * key_bytes;
      VI x[VC];
      for (int c = 0; c < VC; ++c) x[c] = S::load_words(row + 4 * S::kLanes * c);
      const uint32_t kept = keep(m);
      if (kept != 0xFFFFFFFFu) [[unlikely]] {
        for (int c = 0; c < VC; ++c) x[c] = S::and_words(x[c], kept);
      }
      for (int h = 0; h < kHeads; ++h) {
        if (h >= gn) break;
        const uint32_t w = pw[static_cast<size_t>(h) * pw_stride + m / 2];
        for (int c = 0; c < VC; ++c) acc[h][c] = S::dot2(acc[h][c], x[c], w);
      }
    }
    for (int h = 0; h < kHeads; ++h) {
      if (h >= gn) break;
      for (int c = 0; c < VC; ++c) S::store(out + static_cast<int64_t>(h) * dv + S::kLanes * c, acc[h][c]);
    }
  } else {
    for (int m = i0 & ~1; m < i1; m += 2) {
      pf.issue(pf_per_pair);
      const uint8_t* row = v + static_cast<size_t>(m) * key_bytes;
      const uint32_t kept = keep(m);
      for (int h = 0; h < gn_rt; ++h) {
        float* oh = out + static_cast<int64_t>(h) * dv;
        const uint32_t w = pw[static_cast<size_t>(h) * pw_stride + m / 2];
        for (int c = 0; c < dv; c += S::kLanes) {
          const VI x = S::and_words(S::load_words(row + 4 * c), kept);
          S::store(oh + c, S::dot2(S::load(oh + c), x, w));
        }
      }
    }
  }
  pf_io = pf;
}

// The value pass with VC vectors per head, as many heads per pass as bf16_value_group keeps in
// registers.
template <class S, int VC>
void bf16_value_pass(const KtStep& s, const KvSpan& kv, int dv, float* out) {
  constexpr int kPerPass = VC > 0 ? std::max(1, S::kRegs / 2 / VC) : 1;
  const auto* words = reinterpret_cast<const Bf16Word*>(s.scores);
  kt_value_pass(s, kPerPass,
                [&](const uint8_t* v, int i0, int i1, size_t r, int gn, int head, int32_t g, PrefetchRun& pf,
                    int per_key) __attribute__((always_inline)) {
                  const Bf16Word* pw = words + r * s.n_pad + g * (kTransposedKeyGroup / 2);
                  float* o = out + static_cast<int64_t>(head) * dv;
                  if constexpr (VC > 0) {
                    if (gn == kPerPass) {
                      return bf16_value_group<S, VC, true>(v, s.st.v_key_bytes(), i0, i1, pw, s.n_pad, gn, o, dv,
                                                           pf, 2 * per_key);
                    }
                  }
                  bf16_value_group<S, VC, false>(v, s.st.v_key_bytes(), i0, i1, pw, s.n_pad, gn, o, dv, pf,
                                                 2 * per_key);
                });
}

// Each head's probabilities (n_pad floats, a row of the step's scores) as BF16 pair words, in
// place: word i of row h (at the row's start) holds keys 2i and 2i + 1.
template <class S>
void bf16_probability_words(float* scores, int n_heads, int32_t n_pad) {
  for (int h = 0; h < n_heads; ++h) {
    float* row = scores + static_cast<size_t>(h) * n_pad;
    auto* w = reinterpret_cast<Bf16Word*>(row);
    int32_t j = 0;
    for (; j + 2 * S::kLanes <= n_pad; j += 2 * S::kLanes) {
      S::store_words(row + j / 2, S::bf16_adjacent_words(S::load(row + j), S::load(row + j + S::kLanes)));
    }
    for (; j < n_pad; j += 2) {
      w[j / 2] = static_cast<uint32_t>(fp32_to_bf16(row[j])) | static_cast<uint32_t>(fp32_to_bf16(row[j + 1])) << 16;
    }
  }
}

template <class S>
bool attention_decode_bf16(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                           int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                           std::vector<float>& scratch) {
  const int dk = p.head_dim_k, dv = p.head_dim_v, bt = kv.block_tokens;
  KtStep s;
  if (!kt_step_begin(q_pos, n_kv, kv, p, head_begin, head_end, part, out, 16, kBf16MaxHeadDim, DType::kBF16, scratch,
                     &s)) {
    return false;
  }
  if (!s.span.has_work()) return true;
  auto* qw = reinterpret_cast<Bf16Word*>(s.qf);  // per head dk / 2 words of Q rounded to BF16
  for (int h = 0; h < s.n_heads; ++h) {
    const float* qh = q + static_cast<int64_t>(s.span.head_begin + h) * dk;
    for (int c = 0; c < dk; c += 2) {
      qw[static_cast<size_t>(h) * (dk / 2) + c / 2] =
          static_cast<uint32_t>(fp32_to_bf16(qh[c])) | static_cast<uint32_t>(fp32_to_bf16(qh[c + 1])) << 16;
    }
  }
  kt_score_pass(s, 4, [&](const uint16_t* kt, size_t r, int gn, int32_t g, PrefetchRun& pf) __attribute__((always_inline)) {
    float* dst = s.scores + r * s.n_pad + g * kTransposedKeyGroup;
    const Bf16Word* qr = qw + r * (dk / 2);
    if (gn == 4) {
      bf16_score_group<S, true>(kt, bt, dk, qr, gn, p, s.st.key0(g), s.span.lo, s.span.hi, s.n_pad, dst, pf);
    } else {
      bf16_score_group<S, false>(kt, bt, dk, qr, gn, p, s.st.key0(g), s.span.lo, s.span.hi, s.n_pad, dst, pf);
    }
  });
  decode_softmax<S>(s.scores, s.n_heads, s.n_pad, s.span.head_begin, p, part, false);
  bf16_probability_words<S>(s.scores, s.n_heads, s.n_pad);
  switch (dv / S::kLanes) {
    case 4:
      bf16_value_pass<S, 4>(s, kv, dv, out);
      break;
    case 8:
      bf16_value_pass<S, 8>(s, kv, dv, out);
      break;
    default:
      bf16_value_pass<S, 0>(s, kv, dv, out);
  }
  return true;
}

}  // namespace
}  // namespace hearth::kernels
