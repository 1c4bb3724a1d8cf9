// The interleaved weight layout: a matrix of 16-row panels in which each panel's bytes are
// reordered so that a SIMD kernel reads 16 rows at once with plain contiguous loads, instead of
// transposing 16 scattered rows at every block (the transpose was most of the cost of the
// compute-bound Q4_0 decode), and so that a thread multiplying a run of panels reads one
// sequential stream of memory. Interleaving is a permutation of each panel's bytes (Q8_0 also
// flips its quants' sign bit, which deinterleaving undoes): an interleaved panel is exactly as
// long as the 16 GGUF rows it came from, and the kernels that read it give results bit-identical
// to those they give on the GGUF rows.
//
// Layouts (a "register" is 64 bytes whose 4-byte lane r belongs to row r of the panel):
// - Q4_0, Q8_0: blocks go in groups of two (a last odd block alone). A group holds, per block,
//   the quant registers (Q4_0: 4, register j = bytes 4j..4j+3 of every row's qs; Q8_0: 8, register
//   c = quants 4c..4c+3 as unsigned bytes q + 128), then per block the 16 rows' F16 scales (32
//   bytes each), so every register starts on a cache line when the panel does.
// - Q4_K: per super-block, 32 registers of qs (register c = bytes 4c..4c+3 of every row's qs), 3
//   registers of the 12 scale bytes, then the 16 rows' d and the 16 rows' dmin (32 bytes each).
// - Q6_K: super-blocks go in pairs (a last odd one alone); per super-block 32 registers of ql, 16
//   of qh and 4 of the 16 scale bytes, then per super-block the 16 rows' d (32 bytes each).
// - F16: per 16 columns, the 16 rows' 16 values (32 bytes per row, 512 per step).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace hearth::kernels {

inline constexpr int64_t kInterleavedPanelRows = 16;

// Where block b (of n_blocks in a row) of an interleaved panel keeps its registers and its 16-bit
// fields, for the layouts that put `group` blocks' registers (register_bytes each) and then their
// fields (field_bytes each) together; a last short group holds the blocks that are left.
struct GroupedBlock {
  size_t registers = 0;
  size_t fields = 0;
  GroupedBlock(int64_t n_blocks, int64_t b, int group, size_t register_bytes, size_t field_bytes) {
    const int64_t g = b / group;
    const int64_t first = g * group;
    const int64_t in_group = std::min<int64_t>(group, n_blocks - first);
    const size_t base = static_cast<size_t>(g) * static_cast<size_t>(group) * (register_bytes + field_bytes);
    registers = base + static_cast<size_t>(b - first) * register_bytes;
    fields = base + static_cast<size_t>(in_group) * register_bytes + static_cast<size_t>(b - first) * field_bytes;
  }
};

// Whether matrices of this type and shape have an interleaved layout (whole panels only: rows must be
// a multiple of 16 and cols a whole number of blocks).
bool interleaved_layout_supports(DType type, int64_t cols, int64_t rows);

// Interleaves panel `panel` of a matrix stored as GGUF rows (src, row_bytes apart) into dst (16 *
// row_bytes bytes). The caller checked interleaved_layout_supports.
void interleave_panel(DType type, const uint8_t* src, size_t row_bytes, int64_t cols, int64_t panel, uint8_t* dst);

// Writes row `row` of an interleaved matrix (data: the whole interleaved matrix) to dst as GGUF stores it
// (row_bytes bytes).
void deinterleave_row(DType type, const uint8_t* data, size_t row_bytes, int64_t cols, int64_t row, uint8_t* dst);

}  // namespace hearth::kernels
