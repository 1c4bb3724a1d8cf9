// A pool of fixed-size KV blocks. Each block holds K and V for `block_tokens` consecutive
// tokens of one sequence, for every layer. Storage is one anonymous mapping reserved up front
// and committed by the OS page by page as blocks are first written, so an idle pool costs
// address space, not memory. Blocks are reference-counted so sequences can share a prefix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/dtype.h"
#include "util/result.h"

namespace hearth::kv {

struct KvLayout {
  int32_t n_layers = 0;
  int32_t k_row_elems = 0;   // n_kv_heads * head_dim_k: one token's K in one layer
  int32_t v_row_elems = 0;   // n_kv_heads * head_dim_v
  int32_t block_tokens = 16;
  DType type = DType::kF16;  // F16 (default), F32 or Q8_0
};

class KvBlockPool {
 public:
  static Result<KvBlockPool> create(const KvLayout& layout, int32_t n_blocks);
  ~KvBlockPool();
  KvBlockPool(KvBlockPool&& other) noexcept;
  KvBlockPool& operator=(KvBlockPool&& other) noexcept;
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  const KvLayout& layout() const { return layout_; }
  int32_t n_blocks() const { return n_blocks_; }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t n_used() const { return n_blocks_ - n_free(); }

  // A free block with refcount 1, or kOutOfRange when the pool is exhausted.
  Result<int32_t> kv_block_alloc();
  void kv_block_ref(int32_t block);
  // Drops one reference; the block returns to the free list at zero.
  void kv_block_unref(int32_t block);
  int32_t kv_block_refcount(int32_t block) const { return refcount_[static_cast<size_t>(block)]; }
  // Copies all layers' K and V rows of `src` into `dst` (the copy in copy-on-write).
  void kv_block_copy(int32_t src, int32_t dst);

  // Start of the K (or V) rows of `block` in `layer`; rows of one block are contiguous, each
  // k_row_bytes() (v_row_bytes()) long.
  uint8_t* k_block(int32_t layer, int32_t block);
  uint8_t* v_block(int32_t layer, int32_t block);
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }
  size_t bytes_reserved() const { return bytes_; }

 private:
  KvBlockPool() = default;
  void release();

  KvLayout layout_;
  int32_t n_blocks_ = 0;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  size_t block_bytes_ = 0;  // K and V of all layers for one block
  size_t bytes_ = 0;
  uint8_t* base_ = nullptr;
  std::vector<int32_t> refcount_;
  std::vector<int32_t> free_;  // stack; lowest ids handed out first
};

}  // namespace hearth::kv
