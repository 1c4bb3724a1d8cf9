// Software prefetch for the SIMD decode steps (AVX2, AVX-512), which read a step's keys in
// blocks: first every key row of [lo, hi], then every value row, each block's rows for every KV
// head of the call before the next block. The rows a fixed number of keys ahead are prefetched
// into L2, a share of them before each KV head's turn, so a block's prefetches go out a few at
// a time between loads. Issued all at once at the top of the block (hundreds of lines for a 1B
// model's 1 KiB rows), most of them were lost to the full miss queue and the step waited on
// memory at each row's first touch (measured: F16 at 32k keys, 12.2 -> 7.9 ms per step, one
// thread; no prefetch at all: 15 ms). Past the last key block the prefetch runs on into the
// first value rows, so the value pass does not start cold. Internal linkage (see isa_local.h):
// each ISA file gets its own copy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace hearth::kernels {
namespace {

// Keys between the block a step reads and the block it prefetches (two 16-key blocks measured
// as good as one or four on AVX-512; L1 hints measured slower).
constexpr int32_t kDecodePrefetchKeys = 32;

// The rows to prefetch while the block at stream position j0 is read: n rows from position pos
// of K (or V). The stream is the step's key blocks then its value blocks: K blocks at [0, n_pad),
// V blocks at [n_pad, 2 n_pad) (n keys from lo, n_pad = n rounded up to the block size).
struct RowsAhead {
  const uint8_t* const* blocks = nullptr;
  size_t row_bytes = 0;
  int32_t block_tokens = 1;
  int32_t pos = 0;
  int n = 0;
  bool values = false;  // value rows (else key rows)
};

inline RowsAhead rows_ahead(const KvSpan& kv, int32_t lo, int32_t n, int32_t n_pad, int32_t j0, int block_keys) {
  RowsAhead a;
  int32_t t = j0 + kDecodePrefetchKeys;
  a.values = t >= n_pad;
  if (a.values) t -= n_pad;
  a.blocks = a.values ? kv.v_blocks : kv.k_blocks;
  a.row_bytes = a.values ? kv.v_row_bytes : kv.k_row_bytes;
  a.block_tokens = kv.block_tokens;
  a.pos = lo + t;
  a.n = std::max(0, std::min(block_keys, n - t));
  return a;
}

// Prefetches share `share` of `shares` of the rows ahead into L2: whole rows (bytes [k_begin,
// k_end) of key rows or [v_begin, v_end) of value rows), the block's rows dealt out evenly, so
// that a step taking one share per KV head it reads spreads the block's prefetches over the
// block, each row found once. Always inlined: GCC finds a function that only prefetches "pure"
// and deletes the calls (it did here, silently: no prefetch was left).
[[gnu::always_inline]] inline void prefetch_share(const RowsAhead& a, int share, int shares, size_t k_begin,
                                                  size_t k_end, size_t v_begin, size_t v_end) {
  const size_t begin = a.values ? v_begin : k_begin, end = a.values ? v_end : k_end;
  if (end <= begin || shares <= 0) return;
  const int i1 = a.n * (share + 1) / shares;
  for (int i = a.n * share / shares; i < i1; ++i) {
    const int32_t pos = a.pos + i;
    const uint8_t* row = a.blocks[pos / a.block_tokens] + static_cast<size_t>(pos % a.block_tokens) * a.row_bytes;
    const uint8_t* p = row + begin;
    for (const uint8_t* line = p - (reinterpret_cast<uintptr_t>(p) & 63); line < row + end; line += 64) {
      __builtin_prefetch(line, 0, 2);
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
