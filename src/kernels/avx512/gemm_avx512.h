// The loop nest shared by the AVX-512 whole-matrix kernels (GemmKernel in kernel_table.h) and
// the register transposes their weight packers use. A kernel type supplies how to pack a run of
// blocks of 16 weight rows into the interleaved tile (lane r of every register = row r) and a
// micro-kernel that multiplies such a tile with up to 8 tokens; this driver walks tokens in
// chunks that stay in L2, 16-row panels, and runs of blocks that stay in L1, keeping each
// token's 16 row sums in a small buffer between runs. Include only from files compiled with the
// AVX-512 flags; everything has internal linkage (see isa_local.h).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/avx512/vector_math_avx512.h"
#include "kernels/interleaved_layout.h"
#include "kernels/kernel_table.h"

namespace hearth::kernels {
namespace {

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The 16 weight rows of one panel; rows past the matrix repeat its last row (their results are
// computed and dropped), so packers never branch on a short panel.
struct PanelRows {
  const uint8_t* base = nullptr;  // row 0 of the panel
  const uint8_t* row[16] = {};
  int valid = 0;                  // rows that exist

  PanelRows(const GemmArgs& a, int64_t panel) : PanelRows(a.w, a.w_row_bytes, a.rows, panel) {}
  PanelRows(const uint8_t* w, size_t row_bytes, int64_t rows, int64_t panel) {
    const int64_t r0 = panel * kGemmPanelRows;
    valid = static_cast<int>(std::min<int64_t>(kGemmPanelRows, rows - r0));
    base = w + static_cast<size_t>(r0) * row_bytes;
    for (int r = 0; r < 16; ++r) row[r] = base + static_cast<size_t>(std::min(r, valid - 1)) * row_bytes;
  }
  // A whole panel of a matrix (for the interleavers, which only see whole panels).
  static PanelRows whole(const uint8_t* w, size_t row_bytes, int64_t panel) {
    return PanelRows(w, row_bytes, (panel + 1) * kGemmPanelRows, panel);
  }

  // Per-row fields are read with 16 scalar loads, not VPGATHERDD: on the AMD EPYC the gather
  // limited the compute-bound decode kernels (llama-1b-q4_0 decode +5%, qwen2-0.5b-q4_0 +9%).
  // The 16-bit value at byte offset `at` of each row, as floats (an F16 field of every row's block).
  __m512 gather_f16(size_t at) const {
    alignas(32) uint16_t h[16];
    for (int r = 0; r < 16; ++r) std::memcpy(&h[r], row[r] + at, 2);
    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)));
  }
  // The 32-bit word at byte offset `at` of each row.
  __m512i gather_i32(size_t at) const {
    alignas(64) int32_t w[16];
    for (int r = 0; r < 16; ++r) std::memcpy(&w[r], row[r] + at, 4);
    return _mm512_load_si512(w);
  }
};

// One panel of an interleaved matrix (interleaved_layout.h): its 16 rows' bytes, reordered,
// from base on.
struct InterleavedPanel {
  const uint8_t* base = nullptr;
  int valid = 16;         // interleaved matrices have whole panels only
  int64_t n_blocks = 0;   // blocks (or steps of columns) per row
  int64_t block_cols = 1;
  InterleavedPanel(const GemmArgs& a, int64_t panel, int64_t cols_per_block)
      : base(a.w + static_cast<size_t>(panel * kGemmPanelRows) * a.w_row_bytes),
        n_blocks(a.cols / cols_per_block),
        block_cols(cols_per_block) {}
  const uint8_t* at(size_t offset) const { return base + offset; }
};

// Prefetches of what follows in memory at the rate a multiply reads: after a step has read
// `bytes` of its panel, read(bytes) asks for as many bytes of the next panel (into L2). Spread
// this way memory keeps streaming, and no burst of prefetches waits for fill buffers ahead of
// the loads the multiply needs now. Nothing at or past `end` is asked for.
struct StreamAhead {
  const uint8_t* next = nullptr;
  const uint8_t* end = nullptr;
  void read(size_t bytes) {
    const uint8_t* to = std::min(end, next + bytes);
    for (; next < to; next += 64) _mm_prefetch(reinterpret_cast<const char*>(next), _MM_HINT_T1);
  }
};

// Asks for [p, p + bytes) in L2.
inline void prefetch_l2(const uint8_t* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T1);
}

// 16 rows of 8 dwords (row r at in[r]) to 8 registers of 16 dwords: out[c] lane r = in[r] dword c.
inline void transpose_16x8_epi32(const __m256i in[16], __m512i out[8]) {
  __m512i r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm512_inserti64x4(_mm512_castsi256_si512(in[i]), in[i + 8], 1);
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // u[k] (k < 4) holds column k of rows 0-3 / 8-11 in its 128-bit lanes 0 / 2 and column k+4 in
  // lanes 1 / 3; u[k+4] the same for rows 4-7 / 12-15. Interleave the lanes into row order.
  const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm512_permutex2var_epi64(u[k], lo, u[k + 4]);
    out[k + 4] = _mm512_permutex2var_epi64(u[k], hi, u[k + 4]);
  }
}

// 16 rows of 4 dwords (16 bytes at row[r] + at) to 4 registers of 16 dwords: out[c] lane r =
// dword c of row r.
inline void transpose_16x4_epi32(const uint8_t* const row[16], size_t at, __m512i out[4]) {
  __m512i z[4];
  for (int g = 0; g < 4; ++g) {
    // 128-bit lane k of z[g] holds row g + 4k, so that the in-lane transpose below leaves lane
    // 4k + g holding row 4k + g.
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[g] + at)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[g + 4] + at)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[g + 8] + at)), 2);
    z[g] = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[g + 12] + at)), 3);
  }
  const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]);
  const __m512i t1 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]);
  const __m512i t3 = _mm512_unpackhi_epi32(z[2], z[3]);
  out[0] = _mm512_unpacklo_epi64(t0, t2);
  out[1] = _mm512_unpackhi_epi64(t0, t2);
  out[2] = _mm512_unpacklo_epi64(t1, t3);
  out[3] = _mm512_unpackhi_epi64(t1, t3);
}

// The 16 levels of a non-linear 4-bit type (IQ4, MXFP4) plus 128, as unsigned bytes in every
// 128-bit lane, for _mm512_shuffle_epi8 (VPDPBUSD wants unsigned weights).
inline __m512i offset_level_table(const int8_t* levels) {
  alignas(16) uint8_t biased[16];
  for (int i = 0; i < 16; ++i) biased[i] = static_cast<uint8_t>(levels[i] + 128);
  return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(biased)));
}

inline __m256i load256u(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// Most tokens whose activations and row sums one pass over a panel keeps at hand.
inline constexpr int64_t kMaxTokenChunk = 256;

// Each token's 16 row sums of panel p to the output (rows past the matrix dropped).
inline void store_panel(const GemmArgs& a, int valid, int64_t p, int64_t t0, int64_t nt, const float* sums) {
  const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1);
  float* out = a.y + static_cast<size_t>(t0) * static_cast<size_t>(a.y_stride) + p * kGemmPanelRows;
  for (int64_t t = 0; t < nt; ++t) {
    _mm512_mask_storeu_ps(out + t * a.y_stride, keep, _mm512_load_ps(sums + 16 * t));
  }
}

// Kernel requirements (see the kernel files):
//   kBlockCols: elements per weight block; kPackedBlockBytes: one packed block of 16 rows;
//   kRunBlocks: blocks packed at a time (the packed run stays in L1); kTile: tokens per
//   micro-kernel call (at most 8; fewer where the micro-kernel needs more registers per token);
//   static void pack(const PanelRows&, int64_t first_block, int n_blocks, uint8_t* out);
//   template <int T> static void micro(const uint8_t* packed, int n_blocks, int64_t first_block,
//       const uint8_t* act, size_t act_stride, int64_t cols, float* sums, bool first_run);
//   micro multiplies the packed run with T tokens (act, act + act_stride, ...) and adds into
//   sums[16 * t + r] (set instead when first_run).
// Optionally kDirectTokens and
//   static void direct(const PanelRows&, int n_blocks, const uint8_t* act, size_t act_stride,
//       int64_t cols, int n_tokens, float* sums, StreamAhead&);
//   which multiplies the whole panel as stored (all n_blocks) with up to kDirectTokens tokens
//   without packing, sets sums[16 * t + r], and calls StreamAhead::read with the bytes of
//   weights each step has read.
// The panel a kernel reads: its own kind (Kernel::panel, e.g. an InterleavedPanel) or GGUF rows.
template <class Kernel>
auto panel_of(const GemmArgs& a, int64_t p) {
  if constexpr (requires { Kernel::panel(a, p); }) {
    return Kernel::panel(a, p);
  } else {
    return PanelRows(a, p);
  }
}

template <class Kernel>
void gemm_drive(const GemmArgs& a) {
  alignas(64) uint8_t packed[Kernel::kRunBlocks * Kernel::kPackedBlockBytes];
  alignas(64) float sums[kMaxTokenChunk * kGemmPanelRows];
  const int64_t n_blocks = a.cols / Kernel::kBlockCols;
  // Token chunks whose activations fit comfortably in L2 next to the packed weights.
  int64_t chunk = static_cast<int64_t>((size_t{1} << 20) / std::max<size_t>(a.act_stride, 1));
  chunk = std::clamp<int64_t>(chunk / 8 * 8, 8, kMaxTokenChunk);
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += chunk) {
    const int64_t nt = std::min(chunk, a.n_tokens - t0);
    const uint8_t* act = a.act + static_cast<size_t>(t0) * a.act_stride;
    for (int64_t p = a.panel_begin; p < a.panel_end; ++p) {
      const auto rows = panel_of<Kernel>(a, p);
      // The next panel's rows follow this panel's in memory: prefetch them while this panel is
      // packed and multiplied (the last panel handed to this call prefetches nothing).
      const size_t panel_bytes = static_cast<size_t>(kGemmPanelRows) * a.w_row_bytes;
      const uint8_t* next = rows.base + panel_bytes;
      const uint8_t* next_end = p + 1 < a.panel_end ? next + panel_bytes : next;
      if (p + 1 == a.panel_end && a.follow != nullptr && t0 + chunk >= a.n_tokens) {
        next = a.follow;
        next_end = a.follow + a.follow_bytes;
      }
      if constexpr (requires { Kernel::kDirectTokens; }) {
        // Few tokens: a kernel may multiply the rows as stored rather than pack them first.
        // Memory is then the limit, so the kernel prefetches as it reads (StreamAhead).
        if (nt <= Kernel::kDirectTokens) {
          // The first panel of a call has had no one to prefetch it: ask for all of it at once
          // (memory may wait on a burst here, but otherwise the first steps wait on every load).
          if (p == a.panel_begin && !a.first_prefetched) prefetch_l2(rows.base, static_cast<size_t>(rows.valid) * a.w_row_bytes);
          StreamAhead ahead{next, next_end};
          Kernel::direct(rows, static_cast<int>(n_blocks), act, a.act_stride, a.cols, static_cast<int>(nt), sums, ahead);
          store_panel(a, rows.valid, p, t0, nt, sums);
          continue;
        }
      }
      // Packing: a slice of the next panel per run, one burst before the run is packed.
      const int64_t n_runs = (n_blocks + Kernel::kRunBlocks - 1) / Kernel::kRunBlocks;
      const size_t slice = (panel_bytes / static_cast<size_t>(n_runs) + 63) / 64 * 64;
      for (int64_t b0 = 0; b0 < n_blocks; b0 += Kernel::kRunBlocks) {
        const int nb = static_cast<int>(std::min<int64_t>(Kernel::kRunBlocks, n_blocks - b0));
        const uint8_t* run_next = next;
        next += slice;
        for (size_t off = 0; off < slice && run_next + off < next_end; off += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(run_next + off), _MM_HINT_T1);
        }
        const bool first = b0 == 0;
        Kernel::pack(rows, b0, nb, packed);
        int64_t t = 0;
        constexpr int kTile = Kernel::kTile;
        for (; t + kTile <= nt; t += kTile) {
          Kernel::template micro<kTile>(packed, nb, b0, act + t * a.act_stride, a.act_stride, a.cols, sums + 16 * t,
                                        first);
        }
        const uint8_t* at = act + t * a.act_stride;
        float* st = sums + 16 * t;
        switch (nt - t) {
          case 7: if constexpr (kTile > 7) Kernel::template micro<7>(packed, nb, b0, at, a.act_stride, a.cols, st, first); break;
          case 6: if constexpr (kTile > 6) Kernel::template micro<6>(packed, nb, b0, at, a.act_stride, a.cols, st, first); break;
          case 5: Kernel::template micro<5>(packed, nb, b0, at, a.act_stride, a.cols, st, first); break;
          case 4: Kernel::template micro<4>(packed, nb, b0, at, a.act_stride, a.cols, st, first); break;
          case 3: Kernel::template micro<3>(packed, nb, b0, at, a.act_stride, a.cols, st, first); break;
          case 2: Kernel::template micro<2>(packed, nb, b0, at, a.act_stride, a.cols, st, first); break;
          case 1: Kernel::template micro<1>(packed, nb, b0, at, a.act_stride, a.cols, st, first); break;
          default: break;
        }
      }
      store_panel(a, rows.valid, p, t0, nt, sums);
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
