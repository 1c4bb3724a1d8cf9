// What the SIMD decode steps over a transposed K (KvSpan::k_transposed: avx512/ and avx2/
// attention_*kt*) share besides their arithmetic: the step's 16-key groups aligned to the cache
// blocks, the stream they read (every group's K runs for the call's heads, then every group's
// value rows), and the prefetch of what lies kDecodePrefetchKeys ahead, handed out one line
// per inner-loop step so the loads spread over the compute instead of arriving as a burst that
// fills the miss queue. Internal linkage (see isa_local.h): each ISA file gets its own copy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <vector>

#include "kernels/decode_prefetch.h"
#include "kernels/decode_step_span.h"
#include "kernels/ops.h"

namespace hearth::kernels {
namespace {

// Cache lines still to prefetch (into L1: measured on 16 layers at 16k keys, one thread, L2
// hints issued per row as the row-layout kernels do 43.4 ms a step, L1 hints 38.9).
struct PrefetchRun {
  const uint8_t* next = nullptr;
  const uint8_t* end = nullptr;
  [[gnu::always_inline]] void issue(int count) {
    for (; count > 0 && next < end; --count, next += 64) __builtin_prefetch(next, 0, 3);
  }
  int lines() const { return static_cast<int>((end - next) / 64); }
};

// The call's heads that belong to KV head kvh: heads [h0, h0 + n).
struct KtHeads {
  int h0, n;
};
inline KtHeads kt_heads(int kvh, int group, int head_begin, int head_end) {
  const int h0 = std::max(kvh * group, head_begin);
  return {h0, std::min((kvh + 1) * group, head_end) - h0};
}

// The groups of one step: keys [lo, hi] in groups of kTransposedKeyGroup from base (lo's
// group), KV heads kvh_first .. + n_kvh of the call.
struct KtStream {
  const KvSpan* kv;
  int32_t lo, hi, base, n_groups;
  int dk, kvh_first, n_kvh;

  // Share `share` of `shares` of what the step reads kDecodePrefetchKeys after stream item s
  // (items 0 .. n_groups - 1: the groups' K runs of the call's heads; then their value rows).
  PrefetchRun ahead(int32_t s, int share, int shares) const {
    s += kDecodePrefetchKeys / kTransposedKeyGroup;
    if (s >= 2 * n_groups) return {};
    const int32_t g = s % n_groups;
    const uint8_t* at;
    size_t bytes;
    if (s < n_groups) {  // the call's heads' runs: from the first head's, up to the last one's last run
      at = reinterpret_cast<const uint8_t*>(k_runs(g, kvh_first));
      bytes = 2 * kv_key_transposed_index(kv->block_tokens, static_cast<int64_t>(n_kvh) * dk - 1, kTransposedKeyGroup);
    } else {
      at = v_rows(g) + static_cast<size_t>(first_key(g)) * kv->v_row_bytes;
      bytes = static_cast<size_t>(end_key(g) - first_key(g)) * kv->v_row_bytes;
    }
    const uintptr_t first_line = reinterpret_cast<uintptr_t>(at) & ~uintptr_t{63};
    const size_t lines = (reinterpret_cast<uintptr_t>(at) + bytes - first_line + 63) / 64;
    const auto* line0 = reinterpret_cast<const uint8_t*>(first_line);
    return {line0 + 64 * (lines * static_cast<size_t>(share) / static_cast<size_t>(shares)),
            line0 + 64 * (lines * static_cast<size_t>(share + 1) / static_cast<size_t>(shares))};
  }
  int32_t key0(int32_t g) const { return base + g * kTransposedKeyGroup; }
  // The first element of KV head kvh's K runs in group g.
  const uint16_t* k_runs(int32_t g, int kvh) const {
    const int32_t bt = kv->block_tokens, k0 = key0(g);
    return reinterpret_cast<const uint16_t*>(kv->k_blocks[k0 / bt]) +
           kv_key_transposed_index(bt, static_cast<int64_t>(kvh) * dk, k0 % bt);
  }
  // The group's first value row (the group's keys' rows follow, v_row_bytes apart).
  const uint8_t* v_rows(int32_t g) const {
    const int32_t bt = kv->block_tokens, k0 = key0(g);
    return kv->v_blocks[k0 / bt] + static_cast<size_t>(k0 % bt) * kv->v_row_bytes;
  }
  // The keys of group g inside [lo, hi], as offsets [i0, i1) in the group.
  int first_key(int32_t g) const { return std::max(lo, key0(g)) - key0(g); }
  int end_key(int32_t g) const { return std::min(hi, key0(g) + kTransposedKeyGroup - 1) - key0(g) + 1; }
};

inline KtStream kt_stream(const KvSpan& kv, int32_t lo, int32_t hi, int dk, int kvh_first, int kvh_last) {
  const int32_t base = lo / kTransposedKeyGroup * kTransposedKeyGroup;
  const int32_t n_groups = (hi + 1 - base + kTransposedKeyGroup - 1) / kTransposedKeyGroup;
  return {&kv, lo, hi, base, n_groups, dk, kvh_first, kvh_last - kvh_first + 1};
}

// What a transposed-K step knows once it has begun: its heads and keys (begin_decode_step),
// its KV heads, its groups, and where its scores and F16-rounded queries live in the scratch.
struct KtStep {
  DecodeStepSpan span;
  int group = 0, n_heads = 0, kvh_first = 0, kvh_last = 0;
  KtStream st{};
  int32_t n_pad = 0;         // scores per head: every key of the groups (score j is key st.base + j)
  float* scores = nullptr;   // [n_heads][n_pad]
  float* qf = nullptr;       // [n_heads][head_dim_k], for the caller to fill
};

// Begins a step (attention_heads_part's contract) for a kernel whose vectors hold dim_step
// floats: false where the path does not apply (not F16, blocks not a multiple of the group,
// head sizes not a multiple of dim_step or over max_dim), and the caller falls back to the
// portable path; otherwise *s is filled (nothing to do when !s->span.has_work()).
inline bool kt_step_begin(int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p, int32_t head_begin,
                          int32_t head_end, const KeyPart* part, float* out, int dim_step, int max_dim,
                          std::vector<float>& scratch, KtStep* s) {
  const int dk = p.head_dim_k, dv = p.head_dim_v;
  if (kv.type != DType::kF16 || kv.block_tokens % kTransposedKeyGroup != 0 || dk % dim_step != 0 ||
      dv % dim_step != 0 || dk > max_dim || dv > max_dim || p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0) {
    return false;
  }
  s->span = begin_decode_step(q_pos, n_kv, p, head_begin, head_end, part, out);
  if (!s->span.has_work()) return true;
  s->group = p.n_head / p.n_head_kv;
  s->n_heads = s->span.head_end - s->span.head_begin;
  s->kvh_first = s->span.head_begin / s->group;
  s->kvh_last = (s->span.head_end - 1) / s->group;
  s->st = kt_stream(kv, s->span.lo, s->span.hi, dk, s->kvh_first, s->kvh_last);
  s->n_pad = s->st.n_groups * kTransposedKeyGroup;
  scratch.resize(static_cast<size_t>(s->n_heads) * (s->n_pad + dk));
  s->scores = scratch.data();
  s->qf = s->scores + static_cast<size_t>(s->n_heads) * s->n_pad;
  return true;
}

// The score pass of a step: for every group and KV head, score(k_runs, r, gn, g, pf) on passes
// of at most per_pass of the KV head's query heads (r: the pass's first row of the step's
// scores and queries, g: the group), with the KV head's share of what comes next to prefetch as
// it goes (what it leaves is asked for after).
template <class Score>
inline void kt_score_pass(const KtStep& s, int per_pass, Score&& score) {
  for (int32_t g = 0; g < s.st.n_groups; ++g) {
    for (int kvh = s.kvh_first; kvh <= s.kvh_last; ++kvh) {
      const KtHeads heads = kt_heads(kvh, s.group, s.span.head_begin, s.span.head_end);
      PrefetchRun pf = s.st.ahead(g, kvh - s.kvh_first, s.st.n_kvh);
      for (int g0 = 0; g0 < heads.n; g0 += per_pass) {
        score(s.st.k_runs(g, kvh), static_cast<size_t>(heads.h0 - s.span.head_begin + g0), std::min(per_pass, heads.n - g0),
              g, pf);
      }
      pf.issue(1 << 30);
    }
  }
}

// The value pass: for every group and KV head, value(v, i0, i1, r, gn, head, g, pf, per_key)
// on passes of at most per_pass query heads: v the KV head's slice of the group's first value
// row (the keys' rows v_row_bytes apart), keys [i0, i1) of the group inside the step, head the
// pass's first query head (its output row), per_key the prefetch lines to issue per key.
template <class Value>
inline void kt_value_pass(const KtStep& s, int dv, int per_pass, Value&& value) {
  for (int32_t g = 0; g < s.st.n_groups; ++g) {
    const int i0 = s.st.first_key(g), i1 = s.st.end_key(g);
    for (int kvh = s.kvh_first; kvh <= s.kvh_last; ++kvh) {
      const KtHeads heads = kt_heads(kvh, s.group, s.span.head_begin, s.span.head_end);
      PrefetchRun pf = s.st.ahead(s.st.n_groups + g, kvh - s.kvh_first, s.st.n_kvh);
      const int per_key = (pf.lines() + (i1 - i0) - 1) / (i1 - i0);
      const uint8_t* v = s.st.v_rows(g) + static_cast<size_t>(kvh) * dv * 2;
      for (int g0 = 0; g0 < heads.n; g0 += per_pass) {
        value(v, i0, i1, static_cast<size_t>(heads.h0 - s.span.head_begin + g0), std::min(per_pass, heads.n - g0),
              heads.h0 + g0, g, pf, per_key);
      }
      pf.issue(1 << 30);
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
