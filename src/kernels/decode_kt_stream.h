// What the SIMD decode steps over a K stored by element share besides their arithmetic (an F16
// cache's transposed K, KvSpan::by_head: avx512/ and avx2/ attention_*kt*; a BF16 cache's
// element pairs: decode_bf16_simd.h): the step's 16-key groups aligned to the cache blocks, the
// stream they read (every group's K runs for the call's heads, then every group's value rows),
// and the prefetch of what lies kDecodePrefetchKeys ahead, into L2, handed out one line per
// inner-loop step so the loads spread over the compute instead of arriving as a burst that fills
// the miss queue. Internal linkage (see isa_local.h): each ISA file gets its own copy.
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

// Cache lines still to prefetch, into L2 (prefetcht1). On the Zen 4 host a prefetch into L1
// holds one of the core's few L1 miss buffers for a whole trip to memory, which capped one core's
// stream near 11 GB/s; into L2 the L1 misses that follow are short. 16 layers at 16k keys in the
// engine's pool, one thread, F16 with K transposed: 10.4-12.3 GB/s with L1 hints, 16.8-17.6 with
// L2 hints (t1 and t2 alike), 10.1 with none; two threads 19.3-22.4 against 25.7-29.8.
struct PrefetchRun {
  const uint8_t* next = nullptr;
  const uint8_t* end = nullptr;
  [[gnu::always_inline]] void issue(int count) {
    for (; count > 0 && next < end; --count, next += 64) __builtin_prefetch(next, 0, 2);
  }
  [[gnu::always_inline]] void issue1() {
    if (next < end) {
      __builtin_prefetch(next, 0, 2);
      next += 64;
    }
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

// Where group g of a step starts: its cache block and the offset of its first key there,
// advanced group by group without a division.
struct KtGroupAt {
  int32_t block, offset;
  void next(int32_t block_tokens) {
    offset += kTransposedKeyGroup;
    if (offset == block_tokens) {
      offset = 0;
      ++block;
    }
  }
};

// The groups of one step: keys [lo, hi] in groups of kTransposedKeyGroup from base (lo's
// group), KV heads kvh_first .. + n_kvh of the call.
struct KtStream {
  const KvSpan* kv;
  int32_t lo, hi, base, n_groups;
  int dk, dv, kvh_first, n_kvh;
  int32_t k_run_bytes;  // from a KV head's first run in a group to the end of its last
  bool paired;          // a BF16 cache: K runs of element pairs, V by head and token pair (ops.h);
                        // else F16 by head: K by element, V by head (KvSpan::by_head)

  KtGroupAt at(int32_t g) const {
    const int32_t k0 = key0(g);
    return {k0 / kv->block_tokens, k0 % kv->block_tokens};
  }
  int32_t key0(int32_t g) const { return base + g * kTransposedKeyGroup; }
  // The first element of KV head kvh's K runs in the group at a.
  const uint16_t* k_runs(KtGroupAt a, int kvh) const {
    const int64_t e = static_cast<int64_t>(kvh) * dk;
    return reinterpret_cast<const uint16_t*>(kv->k_blocks[a.block]) +
           (paired ? kv_key_paired_index(kv->block_tokens, e, a.offset)
                   : kv_key_transposed_index(kv->block_tokens, e, a.offset));
  }
  // KV head kvh's values of the group's first key (those of its other keys follow, v_key_bytes()
  // apart; a BF16 cache's keys come in pairs, each pair's words 2 * v_key_bytes() long).
  const uint8_t* v_slice(KtGroupAt a, int kvh) const {
    const int64_t e = static_cast<int64_t>(kvh) * dv;
    return kv->v_blocks[a.block] + 2 * (paired ? kv_value_paired_index(kv->block_tokens, dv, e, a.offset)
                                               : kv_value_by_head_index(kv->block_tokens, dv, e, a.offset));
  }
  size_t v_key_bytes() const { return 2 * static_cast<size_t>(dv); }
  // The keys of group g inside [lo, hi], as offsets [i0, i1) in the group.
  int first_key(int32_t g) const { return std::max(lo, key0(g)) - key0(g); }
  int end_key(int32_t g) const { return std::min(hi, key0(g) + kTransposedKeyGroup - 1) - key0(g) + 1; }

  // What to prefetch while KV head kvh's part of the stream item before `ahead` is read: the
  // stream is every group's K runs of the call's heads, then every group's values;
  // `ahead` is the item kDecodePrefetchKeys further on (at: where its group starts), of
  // which kvh takes its own K runs, or its own values (a BF16 pair's whole words).
  PrefetchRun prefetch(int32_t ahead, KtGroupAt at, int kvh) const {
    if (ahead < n_groups) return lines_of(reinterpret_cast<const uint8_t*>(k_runs(at, kvh)), k_run_bytes, 0, 1);
    if (ahead >= 2 * n_groups) return {};
    const int32_t g = ahead - n_groups;
    const int i0 = paired ? first_key(g) & ~1 : first_key(g), i1 = paired ? (end_key(g) + 1) & ~1 : end_key(g);
    return lines_of(v_slice(at, kvh) + static_cast<size_t>(i0) * v_key_bytes(), static_cast<size_t>(i1 - i0) * v_key_bytes(),
                    0, 1);
  }
  // Share `share` of `shares` of the cache lines of [at, at + bytes).
  static PrefetchRun lines_of(const uint8_t* at, size_t bytes, int share, int shares) {
    const uintptr_t first_line = reinterpret_cast<uintptr_t>(at) & ~uintptr_t{63};
    const auto lines = static_cast<uint32_t>((reinterpret_cast<uintptr_t>(at) + bytes - first_line + 63) / 64);
    const uint32_t per_share = (lines + static_cast<uint32_t>(shares) - 1) / static_cast<uint32_t>(shares);
    const uint32_t begin = std::min(lines, per_share * static_cast<uint32_t>(share));
    const uint32_t end = std::min(lines, begin + per_share);
    const auto* line0 = reinterpret_cast<const uint8_t*>(first_line);
    return {line0 + 64 * static_cast<size_t>(begin), line0 + 64 * static_cast<size_t>(end)};
  }
};

inline KtStream kt_stream(const KvSpan& kv, int32_t lo, int32_t hi, int dk, int dv, int kvh_first, int kvh_last) {
  const int32_t base = lo / kTransposedKeyGroup * kTransposedKeyGroup;
  const int32_t n_groups = (hi + 1 - base + kTransposedKeyGroup - 1) / kTransposedKeyGroup;
  const bool paired = kv.type == DType::kBF16;
  const auto run_bytes = static_cast<int32_t>(
      2 * (paired ? kv_key_paired_index(kv.block_tokens, dk - 2, kTransposedKeyGroup)
                  : kv_key_transposed_index(kv.block_tokens, dk - 1, kTransposedKeyGroup)));
  return {&kv, lo, hi, base, n_groups, dk, dv, kvh_first, kvh_last - kvh_first + 1, run_bytes, paired};
}

// What a transposed-K step knows once it has begun: its heads and keys (begin_decode_step),
// its KV heads, its groups, and where its scores and rounded queries live in the scratch.
struct KtStep {
  DecodeStepSpan span;
  int group = 0, n_heads = 0, kvh_first = 0, kvh_last = 0;
  KtStream st{};
  int32_t n_pad = 0;         // scores per head: every key of the groups (score j is key st.base + j)
  float* scores = nullptr;   // [n_heads][n_pad]
  float* qf = nullptr;       // [n_heads][head_dim_k] floats, for the caller to fill
};

// Begins a step (attention_heads_part's contract) for a kernel of cache type `type` (F16 with K
// transposed, or BF16) whose vectors hold dim_step floats: false where the path does not apply
// (another type, blocks not a multiple of the group, head sizes not a multiple of dim_step or
// over max_dim), and the caller falls back to the portable path; otherwise *s is filled (nothing
// to do when !s->span.has_work()).
inline bool kt_step_begin(int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p, int32_t head_begin,
                          int32_t head_end, const KeyPart* part, float* out, int dim_step, int max_dim, DType type,
                          std::vector<float>& scratch, KtStep* s) {
  const int dk = p.head_dim_k, dv = p.head_dim_v;
  if (kv.type != type || kv.block_tokens % kTransposedKeyGroup != 0 || dk % dim_step != 0 ||
      dv % dim_step != 0 || dk > max_dim || dv > max_dim || p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0) {
    return false;
  }
  s->span = begin_decode_step(q_pos, n_kv, p, head_begin, head_end, part, out);
  if (!s->span.has_work()) return true;
  s->group = p.n_head / p.n_head_kv;
  s->n_heads = s->span.head_end - s->span.head_begin;
  s->kvh_first = s->span.head_begin / s->group;
  s->kvh_last = (s->span.head_end - 1) / s->group;
  s->st = kt_stream(kv, s->span.lo, s->span.hi, dk, dv, s->kvh_first, s->kvh_last);
  s->n_pad = s->st.n_groups * kTransposedKeyGroup;
  scratch.resize(static_cast<size_t>(s->n_heads) * (s->n_pad + dk));
  s->scores = scratch.data();
  s->qf = s->scores + static_cast<size_t>(s->n_heads) * s->n_pad;
  return true;
}

// The stream items kDecodePrefetchKeys apart.
constexpr int32_t kKtAheadGroups = kDecodePrefetchKeys / kTransposedKeyGroup;

// Where the item kKtAheadGroups after group g of a pass starts (K pass: first = 0; value pass:
// first = n_groups), advanced with the pass.
inline KtGroupAt kt_ahead_at(const KtStream& st, int32_t first) {
  const int32_t a = (first + kKtAheadGroups) % st.n_groups;
  return first + kKtAheadGroups < 2 * st.n_groups ? st.at(a) : KtGroupAt{0, 0};
}
inline void kt_advance(const KtStream& st, int32_t ahead, KtGroupAt* at) {
  if (ahead + 1 == st.n_groups) {
    *at = st.at(0);
  } else {
    at->next(st.kv->block_tokens);
  }
}

// The score pass of a step: for every group and KV head, score(k_runs, r, gn, g, pf) on passes
// of at most per_pass of the KV head's query heads (r: the pass's first row of the step's
// scores and queries, g: the group), with the KV head's share of what comes next to prefetch as
// it goes (what it leaves is asked for after).
template <class Score>
[[gnu::always_inline]] inline void kt_score_pass(const KtStep& s, int per_pass, Score&& score) {
  KtGroupAt at = s.st.at(0), ahead_at = kt_ahead_at(s.st, 0);
  for (int32_t g = 0; g < s.st.n_groups; ++g) {
    const int32_t ahead = g + kKtAheadGroups;
    for (int kvh = s.kvh_first; kvh <= s.kvh_last; ++kvh) {
      const KtHeads heads = kt_heads(kvh, s.group, s.span.head_begin, s.span.head_end);
      PrefetchRun pf = s.st.prefetch(ahead, ahead_at, kvh);
      const uint16_t* kt = s.st.k_runs(at, kvh);
      for (int g0 = 0; g0 < heads.n; g0 += per_pass) {
        score(kt, static_cast<size_t>(heads.h0 - s.span.head_begin + g0), std::min(per_pass, heads.n - g0), g, pf);
      }
      pf.issue(1 << 30);
    }
    at.next(s.st.kv->block_tokens);
    kt_advance(s.st, ahead, &ahead_at);
  }
}

// The value pass: for every group and KV head, value(v, i0, i1, r, gn, head, g, pf, per_key)
// on passes of at most per_pass query heads: v the KV head's values of the group's first key
// (KtStream::v_slice: the keys' follow v_key_bytes() apart), keys [i0, i1) of the group inside
// the step, head the pass's first query head (its output row), per_key the prefetch lines to
// issue per key.
template <class Value>
[[gnu::always_inline]] inline void kt_value_pass(const KtStep& s, int per_pass, Value&& value) {
  KtGroupAt at = s.st.at(0), ahead_at = kt_ahead_at(s.st, s.st.n_groups);
  for (int32_t g = 0; g < s.st.n_groups; ++g) {
    const int32_t ahead = s.st.n_groups + g + kKtAheadGroups;
    const int i0 = s.st.first_key(g), i1 = s.st.end_key(g);
    for (int kvh = s.kvh_first; kvh <= s.kvh_last; ++kvh) {
      const KtHeads heads = kt_heads(kvh, s.group, s.span.head_begin, s.span.head_end);
      PrefetchRun pf = s.st.prefetch(ahead, ahead_at, kvh);
      const int per_key = (pf.lines() + (i1 - i0) - 1) / (i1 - i0);
      const uint8_t* v = s.st.v_slice(at, kvh);
      for (int g0 = 0; g0 < heads.n; g0 += per_pass) {
        value(v, i0, i1, static_cast<size_t>(heads.h0 - s.span.head_begin + g0), std::min(per_pass, heads.n - g0),
              heads.h0 + g0, g, pf, per_key);
      }
      pf.issue(1 << 30);
    }
    at.next(s.st.kv->block_tokens);
    kt_advance(s.st, ahead, &ahead_at);
  }
}

}  // namespace
}  // namespace hearth::kernels
