// Interleaving and deinterleaving of weight panels (see interleaved_layout.h). The block-quantized layouts
// are all described the same way: a block's per-row bytes are split into segments that become
// registers (4 bytes per row per register), and its 16-bit fields are gathered 16 rows at a
// time after the registers of a group of blocks.
#include "kernels/interleaved_layout.h"

#include <cstring>

#include "tensor/quant_blocks.h"

namespace hearth::kernels {
namespace {

constexpr int kRows = static_cast<int>(kInterleavedPanelRows);

struct Segment {
  int offset = 0;     // in the GGUF block
  int bytes = 0;      // a multiple of 4
  uint8_t flip = 0;   // xor applied to every byte when interleaving (and again when deinterleaving)
};

struct BlockLayout {
  int block_bytes = 0;
  int block_cols = 0;
  int group = 1;  // blocks per group
  Segment seg[3];
  int n_seg = 0;
  int field[2] = {};  // offsets of the 16-bit fields
  int n_field = 0;
  // Bytes of one block's registers in an interleaved panel.
  int register_bytes() const {
    int n = 0;
    for (int s = 0; s < n_seg; ++s) n += seg[s].bytes * kRows;
    return n;
  }
};

bool layout_of(DType type, BlockLayout& l) {
  switch (type) {
    case DType::kQ4_0:
      l = {sizeof(BlockQ4_0), kQK, 2, {{2, 16, 0}}, 1, {0}, 1};
      return true;
    case DType::kQ8_0:
      l = {sizeof(BlockQ8_0), kQK, 2, {{2, 32, 0x80}}, 1, {0}, 1};
      return true;
    case DType::kQ4_K:
      l = {sizeof(BlockQ4_K), kQK_K, 1, {{16, 128, 0}, {4, 12, 0}}, 2, {0, 2}, 2};
      return true;
    case DType::kQ6_K:
      l = {sizeof(BlockQ6_K), kQK_K, 2, {{0, 128, 0}, {128, 64, 0}, {192, 16, 0}}, 3, {208}, 1};
      return true;
    default:
      return false;
  }
}

// Calls copy(interleaved_offset, gguf_offset, bytes, flip) for every piece of row r of block b.
template <typename Copy>
void for_each_piece(const BlockLayout& l, int64_t n_blocks, int64_t b, int r, Copy&& copy) {
  const GroupedBlock at(n_blocks, b, l.group, static_cast<size_t>(l.register_bytes()),
                       static_cast<size_t>(l.n_field) * 2 * kRows);
  size_t reg = at.registers;
  for (int s = 0; s < l.n_seg; ++s) {
    const Segment& seg = l.seg[s];
    for (int c = 0; c < seg.bytes / 4; ++c) {
      copy(reg + static_cast<size_t>(64 * c + 4 * r), static_cast<size_t>(b * l.block_bytes + seg.offset + 4 * c), 4,
           seg.flip);
    }
    reg += static_cast<size_t>(seg.bytes) * kRows;
  }
  for (int f = 0; f < l.n_field; ++f) {
    copy(at.fields + static_cast<size_t>(f * 2 * kRows + 2 * r), static_cast<size_t>(b * l.block_bytes + l.field[f]), 2,
         0);
  }
}

void copy_flipped(uint8_t* dst, const uint8_t* src, int bytes, uint8_t flip) {
  for (int i = 0; i < bytes; ++i) dst[i] = static_cast<uint8_t>(src[i] ^ flip);
}

constexpr int64_t kF16StepCols = 16;

}  // namespace

bool interleaved_layout_supports(DType type, int64_t cols, int64_t rows) {
  if (rows <= 0 || rows % kInterleavedPanelRows != 0 || cols <= 0) return false;
  if (type == DType::kF16) return cols % kF16StepCols == 0;
  BlockLayout l;
  return layout_of(type, l) && cols % l.block_cols == 0;
}

void interleave_panel(DType type, const uint8_t* src, size_t row_bytes, int64_t cols, int64_t panel, uint8_t* dst) {
  const uint8_t* rows = src + static_cast<size_t>(panel * kInterleavedPanelRows) * row_bytes;
  if (type == DType::kF16) {
    for (int64_t c = 0; c < cols; c += kF16StepCols) {
      for (int r = 0; r < kRows; ++r) {
        std::memcpy(dst + static_cast<size_t>(c / kF16StepCols) * 512 + 32 * r, rows + r * row_bytes + 2 * c, 32);
      }
    }
    return;
  }
  BlockLayout l;
  if (!layout_of(type, l)) return;
  const int64_t n_blocks = cols / l.block_cols;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int r = 0; r < kRows; ++r) {
      const uint8_t* row = rows + r * row_bytes;
      for_each_piece(l, n_blocks, b, r, [&](size_t il, size_t gguf, int bytes, uint8_t flip) {
        copy_flipped(dst + il, row + gguf, bytes, flip);
      });
    }
  }
}

void deinterleave_row(DType type, const uint8_t* data, size_t row_bytes, int64_t cols, int64_t row, uint8_t* dst) {
  const uint8_t* panel = data + static_cast<size_t>(row / kInterleavedPanelRows * kInterleavedPanelRows) * row_bytes;
  const int r = static_cast<int>(row % kInterleavedPanelRows);
  if (type == DType::kF16) {
    for (int64_t c = 0; c < cols; c += kF16StepCols) {
      std::memcpy(dst + 2 * c, panel + static_cast<size_t>(c / kF16StepCols) * 512 + 32 * r, 32);
    }
    return;
  }
  BlockLayout l;
  if (!layout_of(type, l)) return;
  const int64_t n_blocks = cols / l.block_cols;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for_each_piece(l, n_blocks, b, r, [&](size_t il, size_t gguf, int bytes, uint8_t flip) {
      copy_flipped(dst + gguf, panel + il, bytes, flip);
    });
  }
}

}  // namespace hearth::kernels
