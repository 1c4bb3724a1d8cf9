// The flash-style attention tile (ops.h attention_tile) written once over an ISA's vector
// traits (S: kLanes, kRegs, V, load/store/set1/fmadd/mul/add/max/exp, mask_range, exp_below, prefetch, row
// conversion), and compiled by avx2/ and avx512/ with their own flags. Include only from such a
// file: everything is in an anonymous namespace, so each ISA gets its own copy (isa_local.h).
//
// Layout: the query rows of a sub-tile (tokens x group heads, row r = token * group + head) lie
// across vector lanes, so a K row's element broadcast against a vector of rows gives 16 (8)
// scores at once, and the online softmax (running max, sum, rescale) runs lane-wise with no
// horizontal reduction. Qt[c][r] (Q transposed, F16-rounded for an F16 cache), St/Pt[j][r]
// (scores, then probabilities), Ot[d][r] (the running output) are all row-vectorized; K and V
// tiles are converted to F32 rows once and used by every row of the sub-tile (a transposed K,
// KvSpan::by_head, to F32 [element][key] instead, its runs converted whole). A BF16 cache
// (pairs, ops.h) is read as it is stored, with S::dot2 (vdpbf16ps or its emulation): Qt holds
// words of two elements per row, a K word (two elements of a key) is broadcast against them; the
// probabilities are rounded into words of two keys per row, a V word (an element of two keys) is
// broadcast against them. Its probabilities' sum stays F32.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace hearth::kernels {
namespace {

constexpr int kFlashKeys = 32;   // keys per K/V tile
constexpr int kFlashRowVecs = 4; // row vectors per sub-tile
constexpr int kFlashMaxHeadDim = 512;

// The work floats for lanes L (see flash_tile): Qt, Kf, Vf, St, Ot, m, l, lo, hi, and a BF16
// cache's probability words.
constexpr size_t flash_work_floats(int lanes, int dk, int dv) {
  const size_t rp = static_cast<size_t>(kFlashRowVecs) * lanes;
  return rp * dk + static_cast<size_t>(kFlashKeys) * dk + static_cast<size_t>(kFlashKeys) * dv +
         static_cast<size_t>(kFlashKeys) * rp + rp * dv + 4 * rp + static_cast<size_t>(kFlashKeys) / 2 * rp + 64;
}

// A word of two BF16 values kept in float work space.
using FlashWord = uint32_t __attribute__((may_alias));

inline const uint8_t* flash_kv_row(const uint8_t* const* blocks, int32_t block_tokens, size_t row_bytes, int32_t pos) {
  return blocks[pos / block_tokens] + static_cast<size_t>(pos % block_tokens) * row_bytes;
}

// Bytes of d elements of a cache row (one head's slice; d a multiple of 32 for Q8_0 and Q4_0;
// for BF16 a token pair's words of one head: two keys' values).
inline size_t flash_head_bytes(DType type, int d) {
  switch (type) {
    case DType::kBF16: return 2 * sizeof(uint16_t) * static_cast<size_t>(d);
    case DType::kF16: return sizeof(uint16_t) * static_cast<size_t>(d);
    case DType::kF32: return sizeof(float) * static_cast<size_t>(d);
    case DType::kQ4_0: return sizeof(BlockQ4_0) * static_cast<size_t>(d / kQK);
    default: return sizeof(BlockQ8_0) * static_cast<size_t>(d / kQK);
  }
}

// Keys a group of a transposed K (KvSpan::by_head) holds: one run of each element.
constexpr int kFlashKeyGroup = kTransposedKeyGroup;

// Where each key of a tile keeps its head's K and V slices: n keys from position j0, walked
// block by block (one division per tile instead of one per key). A transposed K is found per
// group of 16 keys instead (kcols: the group's first element of the head; a tile starts at a
// multiple of kFlashKeys, and block_tokens is a multiple of 16, so a group is in one block).
// A BF16 cache: k[j] is key j's first word of the head (its element pairs block_tokens words
// apart), kcols the groups' first runs (for the prefetch), and v[j / 2] the head's words of
// keys j and j + 1 (j even: a tile and a block start on an even key).
struct FlashTileRows {
  const uint8_t* k[kFlashKeys];
  const uint8_t* v[kFlashKeys];
  const uint8_t* kcols[kFlashKeys / kFlashKeyGroup];
  int n = 0, groups = 0;
};
inline void flash_tile_rows(const KvSpan& kv, int32_t j0, int n, size_t k_head, size_t v_head, int kv_head, int dk,
                            int dv, FlashTileRows& r) {
  int32_t b = j0 / kv.block_tokens, o = j0 % kv.block_tokens;
  const bool bf16 = kv.type == DType::kBF16;
  for (int j = 0; j < n; ++j) {
    if (bf16) {
      r.k[j] = kv.k_blocks[b] + 2 * kv_key_paired_index(kv.block_tokens, static_cast<int64_t>(kv_head) * dk, o);
      if (j % kFlashKeyGroup == 0) r.kcols[j / kFlashKeyGroup] = r.k[j];
      if (j % 2 == 0) {
        r.v[j / 2] = kv.v_blocks[b] + 2 * kv_value_paired_index(kv.block_tokens, dv, static_cast<int64_t>(kv_head) * dv, o);
      }
    } else if (kv.by_head && j % kFlashKeyGroup == 0) {
      r.kcols[j / kFlashKeyGroup] =
          kv.k_blocks[b] + 2 * kv_key_transposed_index(kv.block_tokens, static_cast<int64_t>(kv_head) * dk, o);
    } else if (!kv.by_head) {
      r.k[j] = kv.k_blocks[b] + static_cast<size_t>(o) * kv.k_row_bytes + k_head;
    }
    if (kv.by_head) {
      r.v[j] = kv.v_blocks[b] + 2 * kv_value_by_head_index(kv.block_tokens, dv, static_cast<int64_t>(kv_head) * dv, o);
    } else if (!bf16) {
      r.v[j] = kv.v_blocks[b] + static_cast<size_t>(o) * kv.v_row_bytes + v_head;
    }
    if (++o == kv.block_tokens) {
      o = 0;
      ++b;
    }
  }
  r.n = n;
  r.groups = kv.by_head || bf16 ? (n + kFlashKeyGroup - 1) / kFlashKeyGroup : 0;
}

// Prefetches of the next key tile's head slices (every cache line they touch), handed out a few
// at a time between the current tile's FMA blocks: one key's slices are a row apart (a row holds
// every KV head), so the hardware prefetchers miss them, and a tile's worth issued at once is
// more than the miss queue holds.
template <class S>
struct FlashPrefetch {
  const uint8_t* const* rows = nullptr;
  int n = 0;
  size_t bytes = 0;
  int row = 0;
  uintptr_t line = 0, end = 0;  // the current row's next line and its end
  FlashPrefetch(const uint8_t* const* r, int count, size_t head_bytes) : rows(r), n(count), bytes(head_bytes) {}
  void issue(int count) {
    for (; count > 0; --count) {
      if (line >= end) {
        if (row >= n) return;
        const auto start = reinterpret_cast<uintptr_t>(rows[row++]);
        line = start & ~uintptr_t{63};
        end = start + bytes;
      }
      S::prefetch(reinterpret_cast<const void*>(line));
      line += 64;
    }
  }
};

// A tile's head slices (rows[j] for j < n) as F32 rows of d floats.
template <class S>
void flash_load_rows(DType type, const uint8_t* const* rows, int n, int d, float* dst) {
  for (int j = 0; j < n; ++j) {
    float* o = dst + static_cast<size_t>(j) * d;
    switch (type) {
      case DType::kF16: S::f16_to_f32(reinterpret_cast<const uint16_t*>(rows[j]), o, d); break;
      case DType::kF32: std::memcpy(o, rows[j], sizeof(float) * d); break;
      case DType::kQ4_0: S::q4_0_to_f32(reinterpret_cast<const BlockQ4_0*>(rows[j]), o, d); break;
      default: S::q8_0_to_f32(reinterpret_cast<const BlockQ8_0*>(rows[j]), o, d); break;  // Q8_0
    }
  }
}

// A tile's transposed K (groups of 16 keys, each element's run block_tokens apart) as F32 in
// [element][kFlashKeys] order; a group's lanes past the tile's keys convert whatever the block
// holds there, and no score reads them.
template <class S>
void flash_load_key_columns(const uint8_t* const* groups, int n_groups, int block_tokens, int dk, float* dst) {
  for (int g = 0; g < n_groups; ++g) {
    const auto* col = reinterpret_cast<const uint16_t*>(groups[g]);
    for (int c = 0; c < dk; ++c) {
      S::f16_to_f32(col + static_cast<size_t>(c) * block_tokens, dst + static_cast<size_t>(c) * kFlashKeys + g * kFlashKeyGroup,
                    kFlashKeyGroup);
    }
  }
}

// Register blocking: JB keys (DB value dimensions) by NV row vectors of accumulators, plus the
// JB (DB) broadcast K (V) elements and one Q (P) vector in flight, must fit the ISA's kRegs vector
// registers, or the compiler spills accumulators to the stack in the hottest loop (AVX2's 16
// registers hold 4 x 4 accumulators but not the operands beside them).
template <class S, int NV>
constexpr int flash_block(int widest) {
  int b = widest;
  while (b > 1 && b * NV + b + 1 > S::kRegs) --b;
  return b;
}

// finish(j, rv, St[j][rv]) with St[j][rv] = sum_c Kf[j][c] * Qt[c][rv] for keys j0..j0+JB and NV
// row vectors (KT: Kf is [c][kFlashKeys], from a transposed K).
template <class S, int JB, int NV, bool KT, class Finish>
inline void flash_scores(const float* qt, int rp, const float* kf, int dk, int j0, Finish&& finish) {
  using V = typename S::V;
  V acc[JB][NV];
  for (int i = 0; i < JB; ++i) {
    for (int v = 0; v < NV; ++v) acc[i][v] = S::zero();
  }
  const size_t key_step = KT ? 1 : static_cast<size_t>(dk), elem_step = KT ? kFlashKeys : 1;
  const float* k0 = kf + static_cast<size_t>(j0) * key_step;
  for (int c = 0; c < dk; ++c) {
    V k[JB];
    for (int i = 0; i < JB; ++i) k[i] = S::set1(k0[static_cast<size_t>(i) * key_step + c * elem_step]);
    for (int v = 0; v < NV; ++v) {
      const V q = S::load(qt + static_cast<size_t>(c) * rp + v * S::kLanes);
      for (int i = 0; i < JB; ++i) acc[i][v] = S::fmadd(k[i], q, acc[i][v]);
    }
  }
  for (int i = 0; i < JB; ++i) {
    for (int v = 0; v < NV; ++v) finish(j0 + i, v, acc[i][v]);
  }
}

// Ot[d0..d0+DB][rv] = Ot * alpha + sum_j Vf[j][d] * Pt[j][rv].
template <class S, int DB, int NV>
inline void flash_values(const float* pt, int rp, const float* vf, int dv, int nk, int d0, const typename S::V* alpha,
                         float* ot) {
  using V = typename S::V;
  V acc[DB][NV];
  for (int i = 0; i < DB; ++i) {
    for (int v = 0; v < NV; ++v) acc[i][v] = S::mul(S::load(ot + static_cast<size_t>(d0 + i) * rp + v * S::kLanes), alpha[v]);
  }
  for (int j = 0; j < nk; ++j) {
    const float* vr = vf + static_cast<size_t>(j) * dv + d0;
    V x[DB];
    for (int i = 0; i < DB; ++i) x[i] = S::set1(vr[i]);
    for (int v = 0; v < NV; ++v) {
      const V pr = S::load(pt + static_cast<size_t>(j) * rp + v * S::kLanes);
      for (int i = 0; i < DB; ++i) acc[i][v] = S::fmadd(x[i], pr, acc[i][v]);
    }
  }
  for (int i = 0; i < DB; ++i) {
    for (int v = 0; v < NV; ++v) S::store(ot + static_cast<size_t>(d0 + i) * rp + v * S::kLanes, acc[i][v]);
  }
}

// A BF16 cache: finish(j, rv, St[j][rv]) with St[j][rv] = sum over element pairs c2 of
// dot2(Qw[c2][rv], key j's word c2) for keys j0..j0+JB (kw[j]: key j's first word, its pairs
// kstride words apart).
template <class S, int JB, int NV, class Finish>
inline void flash_scores_bf16(const FlashWord* qw, int rp, const uint8_t* const* kw, int kstride, int dk, int j0,
                              Finish&& finish) {
  using V = typename S::V;
  V acc[JB][NV];
  for (int i = 0; i < JB; ++i) {
    for (int v = 0; v < NV; ++v) acc[i][v] = S::zero();
  }
  const FlashWord* k[JB];
  for (int i = 0; i < JB; ++i) k[i] = reinterpret_cast<const FlashWord*>(kw[j0 + i]);
  for (int c2 = 0; c2 < dk / 2; ++c2) {
    uint32_t kx[JB];
    for (int i = 0; i < JB; ++i) kx[i] = k[i][static_cast<size_t>(c2) * kstride];
    for (int v = 0; v < NV; ++v) {
      const typename S::VI q = S::load_words(qw + static_cast<size_t>(c2) * rp + v * S::kLanes);
      for (int i = 0; i < JB; ++i) acc[i][v] = S::dot2(acc[i][v], q, kx[i]);
    }
  }
  for (int i = 0; i < JB; ++i) {
    for (int v = 0; v < NV; ++v) finish(j0 + i, v, acc[i][v]);
  }
}

// A BF16 cache: Ot[d0..d0+DB][rv] = Ot * alpha + sum over key pairs of dot2(Pw[pair][rv], the
// pair's word of element d) (vw[pair]: the pair row's words of the head; a last pair with one
// key keeps only that key's half of the word: the other may hold anything).
template <class S, int DB, int NV>
inline void flash_values_bf16(const FlashWord* pw, int rp, const uint8_t* const* vw, int nk, int d0,
                              const typename S::V* alpha, float* ot) {
  using V = typename S::V;
  V acc[DB][NV];
  for (int i = 0; i < DB; ++i) {
    for (int v = 0; v < NV; ++v) acc[i][v] = S::mul(S::load(ot + static_cast<size_t>(d0 + i) * rp + v * S::kLanes), alpha[v]);
  }
  for (int j = 0; j < nk; j += 2) {
    const FlashWord* vr = reinterpret_cast<const FlashWord*>(vw[j / 2]) + d0;
    const uint32_t keep = j + 1 < nk ? 0xFFFFFFFFu : 0x0000FFFFu;
    uint32_t x[DB];
    for (int i = 0; i < DB; ++i) x[i] = vr[i] & keep;
    for (int v = 0; v < NV; ++v) {
      const typename S::VI pr = S::load_words(pw + static_cast<size_t>(j / 2) * rp + v * S::kLanes);
      for (int i = 0; i < DB; ++i) acc[i][v] = S::dot2(acc[i][v], pr, x[i]);
    }
  }
  for (int i = 0; i < DB; ++i) {
    for (int v = 0; v < NV; ++v) S::store(ot + static_cast<size_t>(d0 + i) * rp + v * S::kLanes, acc[i][v]);
  }
}

// One sub-tile of at most kFlashRowVecs * kLanes rows (NV row vectors); BF: a BF16 cache.
template <class S, int NV, bool BF>
void flash_subtile(const AttentionTile& t, int t0, int nt, const KvSpan& kv, const AttentionParams& p, float* work) {
  using V = typename S::V;
  constexpr int L = S::kLanes;
  constexpr int RP = NV * L;
  const int dk = p.head_dim_k, dv = p.head_dim_v;
  const int group = p.n_head / p.n_head_kv;
  const int rows = nt * group;
  float* qt = work;
  float* kf = qt + static_cast<size_t>(RP) * dk;
  float* vf = kf + static_cast<size_t>(kFlashKeys) * dk;
  float* st = vf + static_cast<size_t>(kFlashKeys) * dv;
  float* ot = st + static_cast<size_t>(kFlashKeys) * RP;
  float* lo_f = ot + static_cast<size_t>(RP) * dv;
  float* hi_f = lo_f + RP;
  auto* qw = reinterpret_cast<FlashWord*>(qt);              // BF: Qt as words [dk / 2][RP]
  auto* pw = reinterpret_cast<FlashWord*>(hi_f + 2 * RP);  // BF: the probabilities as words [kFlashKeys / 2][RP]

  // Rows past `rows` repeat the last real row (their results are dropped), so every lane has a
  // finite maximum whenever a real row does.
  const bool round_q = kv.type == DType::kF16;
  for (int r = 0; r < RP; ++r) {
    const int rr = std::min(r, rows - 1);
    const int tok = t0 + rr / group, g = rr % group;
    const float* qh = t.q + static_cast<int64_t>(tok) * t.q_stride + static_cast<int64_t>(t.kv_head * group + g) * dk;
    for (int c = 0; c < dk; ++c) qt[static_cast<size_t>(c) * RP + r] = qh[c];
    const int32_t pos = t.q_pos0 + tok;
    const int32_t hi = p.causal ? std::min(pos, t.n_kv - 1) : t.n_kv - 1;
    const int32_t lo = p.window > 0 ? std::max(0, pos - p.window + 1) : 0;
    lo_f[r] = static_cast<float>(lo);
    hi_f[r] = static_cast<float>(hi);
  }
  if (round_q) S::round_f16(qt, static_cast<size_t>(RP) * dk);
  if constexpr (BF) {  // in place: word row c2 is written after float rows 2 * c2 and 2 * c2 + 1 are read
    for (int c2 = 0; c2 < dk / 2; ++c2) {
      for (int v = 0; v < NV; ++v) {
        const V lo_q = S::load(qt + static_cast<size_t>(2 * c2) * RP + v * L);
        const V hi_q = S::load(qt + static_cast<size_t>(2 * c2 + 1) * RP + v * L);
        S::store_words(qw + static_cast<size_t>(c2) * RP + v * L, S::bf16_pair_words(lo_q, hi_q));
      }
    }
  }
  std::fill(ot, ot + static_cast<size_t>(RP) * dv, 0.0f);
  V m[NV], l[NV], lo[NV], hi[NV];
  for (int v = 0; v < NV; ++v) {
    m[v] = S::set1(-INFINITY);
    l[v] = S::zero();
    lo[v] = S::load(lo_f + v * L);
    hi[v] = S::load(hi_f + v * L);
  }
  const int32_t pos_first = t.q_pos0 + t0, pos_last = t.q_pos0 + t0 + nt - 1;
  const int32_t key_hi = p.causal ? std::min(pos_last, t.n_kv - 1) : t.n_kv - 1;
  // Key tiles start at multiples of kFlashKeys whatever the sub-tile, so a row's arithmetic
  // does not depend on which rows share its tile (tiles fully masked for a row leave it exactly
  // unchanged: alpha = e^0 = 1, no terms added).
  const int32_t key_lo = p.window > 0 ? std::max(0, pos_first - p.window + 1) / kFlashKeys * kFlashKeys : 0;
  const V scale = S::set1(p.scale);
  const V neg_inf = S::set1(-INFINITY);
  const float softcap = p.softcap;  // a local: stores to the score rows could alias p's fields

  const size_t k_head = flash_head_bytes(kv.type, dk), v_head = flash_head_bytes(kv.type, dv);
  const size_t k_off = k_head * static_cast<size_t>(t.kv_head), v_off = v_head * static_cast<size_t>(t.kv_head);
  // A transposed K's group: every element's run of 16 keys, block_tokens apart.
  const bool kt = kv.by_head;
  const size_t k_group_bytes = BF ? 2 * kv_key_paired_index(kv.block_tokens, dk - 2, kFlashKeyGroup)
                                  : 2 * kv_key_transposed_index(kv.block_tokens, dk - 1, kFlashKeyGroup);
  auto k_prefetch = [&](const FlashTileRows& r) {
    return kt || BF ? FlashPrefetch<S>(r.kcols, r.groups, k_group_bytes) : FlashPrefetch<S>(r.k, r.n, k_head);
  };
  // Rows of V a tile reads: a BF16 cache's pair rows hold two keys each.
  auto v_rows = [](const FlashTileRows& r) { return BF ? (r.n + 1) / 2 : r.n; };
  FlashTileRows tiles[2];
  int cur = 0;
  if (key_lo <= key_hi) {
    flash_tile_rows(kv, key_lo, std::min<int32_t>(kFlashKeys, key_hi - key_lo + 1), k_off, v_off, t.kv_head, dk, dv,
                    tiles[0]);
    k_prefetch(tiles[0]).issue(1 << 30);
    FlashPrefetch<S>(tiles[0].v, v_rows(tiles[0]), v_head).issue(1 << 30);
  }
  constexpr int JB = flash_block<S, NV>(4);
  constexpr int DB = std::bit_floor(static_cast<unsigned>(flash_block<S, NV>(4)));  // divides dv (a multiple of 16)

  for (int32_t j0 = key_lo; j0 <= key_hi; j0 += kFlashKeys) {
    const FlashTileRows& rows = tiles[cur];
    FlashTileRows& next = tiles[cur ^ 1];
    const int nk = rows.n;
    const int32_t j1 = j0 + kFlashKeys;
    flash_tile_rows(kv, j1, j1 <= key_hi ? std::min<int32_t>(kFlashKeys, key_hi - j1 + 1) : 0, k_off, v_off, t.kv_head,
                    dk, dv, next);
    FlashPrefetch<S> next_k = k_prefetch(next), next_v(next.v, v_rows(next), v_head);
    // The next tile's K lines spread over this tile's score blocks, its V lines over the value blocks.
    const int k_lines = kt || BF ? next.groups * static_cast<int>((k_group_bytes + 127) / 64)
                                 : next.n * static_cast<int>((k_head + 127) / 64);
    const int v_lines = v_rows(next) * static_cast<int>((v_head + 127) / 64);
    const int k_step = (k_lines + nk / JB) / (nk / JB + 1) + 1, v_step = (v_lines + dv / DB - 1) / (dv / DB) + 1;
    if constexpr (!BF) {
      if (kt) {
        flash_load_key_columns<S>(rows.kcols, rows.groups, kv.block_tokens, dk, kf);
      } else {
        flash_load_rows<S>(kv.type, rows.k, nk, dk, kf);
      }
      flash_load_rows<S>(kv.type, rows.v, nk, dv, vf);
    }
    // Masks are needed only where some row's range cuts the tile.
    const bool full = j0 + nk - 1 <= (p.causal ? std::min(pos_first, t.n_kv - 1) : t.n_kv - 1) &&
                      (p.window <= 0 || j0 >= pos_last - p.window + 1);
    V tile_max[NV];
    for (int v = 0; v < NV; ++v) tile_max[v] = neg_inf;
    // A score leaves its register scaled, masked and counted in the tile's maximum; with a
    // softcap (rare) it is stored raw and a second pass does that.
    const bool capped = softcap != 0.0f;
    auto finish = [&](int jj, int v, V s) __attribute__((always_inline)) {
      float* sp = st + static_cast<size_t>(jj) * RP + v * L;
      if (capped) {
        S::store(sp, s);
        return;
      }
      s = S::mul(s, scale);
      if (!full) s = S::mask_range(s, S::set1(static_cast<float>(j0 + jj)), lo[v], hi[v]);
      S::store(sp, s);
      tile_max[v] = S::max(tile_max[v], s);
    };
    int j = 0;
    for (; j + JB <= nk; j += JB) {
      next_k.issue(k_step);
      if constexpr (BF) {
        flash_scores_bf16<S, JB, NV>(qw, RP, rows.k, kv.block_tokens, dk, j, finish);
      } else if (kt) {
        flash_scores<S, JB, NV, true>(qt, RP, kf, dk, j, finish);
      } else {
        flash_scores<S, JB, NV, false>(qt, RP, kf, dk, j, finish);
      }
    }
    next_k.issue(1 << 30);
    for (; j < nk; ++j) {
      if constexpr (BF) {
        flash_scores_bf16<S, 1, NV>(qw, RP, rows.k, kv.block_tokens, dk, j, finish);
      } else if (kt) {
        flash_scores<S, 1, NV, true>(qt, RP, kf, dk, j, finish);
      } else {
        flash_scores<S, 1, NV, false>(qt, RP, kf, dk, j, finish);
      }
    }
    for (j = 0; j < nk && capped; ++j) {
      const V jf = S::set1(static_cast<float>(j0 + j));
      for (int v = 0; v < NV; ++v) {
        float* sp = st + static_cast<size_t>(j) * RP + v * L;
        S::store(sp, S::mul(S::load(sp), scale));
        for (int i = 0; i < L; ++i) sp[i] = softcap * std::tanh(sp[i] * (1.0f / softcap));
        V s = S::load(sp);
        if (!full) s = S::mask_range(s, jf, lo[v], hi[v]);
        S::store(sp, s);
        tile_max[v] = S::max(tile_max[v], s);
      }
    }
    V alpha[NV], m_use[NV];
    for (int v = 0; v < NV; ++v) {
      const V m_new = S::max(m[v], tile_max[v]);
      m_use[v] = S::finite_or_zero(m_new);
      alpha[v] = S::exp(S::sub(m[v], m_use[v]));  // m = -inf (nothing yet): ~0, and l, Ot are 0
      m[v] = m_new;
    }
    V sum[NV];
    for (int v = 0; v < NV; ++v) sum[v] = S::zero();
    // In a full tile every score is finite, and so is the maximum: no -inf to map to 0.
    auto prob = [&](int jj, int v) {
      const float* sp = st + static_cast<size_t>(jj) * RP + v * L;
      return full ? S::exp(S::sub(S::load(sp), m_use[v])) : S::exp_below(S::load(sp), m_use[v]);
    };
    if constexpr (BF) {  // the probabilities go straight into words of two keys per row
      for (j = 0; j < nk; j += 2) {
        for (int v = 0; v < NV; ++v) {
          const V e0 = prob(j, v);
          sum[v] = S::add(sum[v], e0);
          V e1 = S::zero();
          if (j + 1 < nk) {
            e1 = prob(j + 1, v);
            sum[v] = S::add(sum[v], e1);
          }
          S::store_words(pw + static_cast<size_t>(j / 2) * RP + v * L, S::bf16_pair_words(e0, e1));
        }
      }
    } else {
      for (j = 0; j < nk; ++j) {
        for (int v = 0; v < NV; ++v) {
          const V e = prob(j, v);
          S::store(st + static_cast<size_t>(j) * RP + v * L, e);
          sum[v] = S::add(sum[v], e);
        }
      }
    }
    for (int v = 0; v < NV; ++v) l[v] = S::add(S::mul(l[v], alpha[v]), sum[v]);
    for (int d = 0; d < dv; d += DB) {
      next_v.issue(v_step);
      if constexpr (BF) {
        flash_values_bf16<S, DB, NV>(pw, RP, rows.v, nk, d, alpha, ot);
      } else {
        flash_values<S, DB, NV>(st, RP, vf, dv, nk, d, alpha, ot);
      }
    }
    next_v.issue(1 << 30);
    cur ^= 1;
  }

  float l_out[RP];
  for (int v = 0; v < NV; ++v) S::store(l_out + v * L, l[v]);
  for (int r = 0; r < rows; ++r) {
    const int tok = t0 + r / group, g = r % group;
    float* oh = t.out + static_cast<int64_t>(tok) * t.out_stride + static_cast<int64_t>(t.kv_head * group + g) * dv;
    const float inv = l_out[r] > 0.0f ? 1.0f / l_out[r] : 0.0f;
    for (int d = 0; d < dv; ++d) oh[d] = ot[static_cast<size_t>(d) * RP + r] * inv;
  }
}

template <class S>
bool flash_tile(const AttentionTile& t, const KvSpan& kv, const AttentionParams& p, float* work) {
  const int dk = p.head_dim_k, dv = p.head_dim_v;
  if (p.n_head_kv <= 0 || p.n_head <= 0 || p.n_head % p.n_head_kv != 0) return false;
  const bool blocks = kv.type == DType::kQ8_0 || kv.type == DType::kQ4_0;  // 32-element blocks
  if (dk % 32 != 0 && !(dk % 16 == 0 && !blocks)) return false;
  if (dv % 32 != 0 && !(dv % 16 == 0 && !blocks)) return false;
  if (dk > kFlashMaxHeadDim || dv > kFlashMaxHeadDim) return false;
  const bool bf16 = kv.type == DType::kBF16;
  if (kv.type != DType::kF16 && kv.type != DType::kF32 && !blocks && !bf16) return false;
  if (bf16 && (dk % 2 != 0 || kv.block_tokens % 2 != 0 || kv.block_tokens % kFlashKeyGroup != 0)) return false;
  if (kv.by_head && (kv.type != DType::kF16 || kv.block_tokens % kFlashKeyGroup != 0)) return false;
  const int group = p.n_head / p.n_head_kv;
  constexpr int kMaxRows = kFlashRowVecs * S::kLanes;
  if (group > kMaxRows) return false;
  if (t.n_q <= 0 || t.n_kv <= 0) return true;
  const int per_sub = kMaxRows / group;
  for (int t0 = 0; t0 < t.n_q; t0 += per_sub) {
    const int nt = std::min(per_sub, t.n_q - t0);
    const int nv = (nt * group + S::kLanes - 1) / S::kLanes;
    switch (nv * 2 + (bf16 ? 1 : 0)) {
      case 2: flash_subtile<S, 1, false>(t, t0, nt, kv, p, work); break;
      case 3: flash_subtile<S, 1, true>(t, t0, nt, kv, p, work); break;
      case 4: flash_subtile<S, 2, false>(t, t0, nt, kv, p, work); break;
      case 5: flash_subtile<S, 2, true>(t, t0, nt, kv, p, work); break;
      case 6: flash_subtile<S, 3, false>(t, t0, nt, kv, p, work); break;
      case 7: flash_subtile<S, 3, true>(t, t0, nt, kv, p, work); break;
      case 9: flash_subtile<S, 4, true>(t, t0, nt, kv, p, work); break;
      default: flash_subtile<S, 4, false>(t, t0, nt, kv, p, work); break;
    }
  }
  return true;
}

}  // namespace
}  // namespace hearth::kernels
