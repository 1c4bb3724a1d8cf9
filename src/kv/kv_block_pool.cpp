// The KV block pool (see kv_block_pool.h).
#include "kv/kv_block_pool.h"

#include <sys/mman.h>

#include <cassert>
#include <cstring>
#include <utility>

namespace hearth::kv {

Result<KvBlockPool> KvBlockPool::create(const KvLayout& layout, int32_t n_blocks) {
  if (layout.n_layers <= 0 || layout.k_row_elems <= 0 || layout.v_row_elems <= 0 || layout.block_tokens <= 0 ||
      n_blocks <= 0) {
    return make_error(ErrorKind::kInvalidArgument, "KV layout needs positive layers, row sizes, block size and count");
  }
  if (layout.type != DType::kF16 && layout.type != DType::kF32 && layout.type != DType::kQ8_0) {
    return make_error(ErrorKind::kUnsupported,
                      "KV cache type " + std::string(dtype_name(layout.type)) + " is not supported (use f16, f32 or q8_0)");
  }
  HEARTH_ASSIGN(uint64_t k_row, dtype_row_bytes(layout.type, static_cast<uint64_t>(layout.k_row_elems)));
  HEARTH_ASSIGN(uint64_t v_row, dtype_row_bytes(layout.type, static_cast<uint64_t>(layout.v_row_elems)));
  KvBlockPool pool;
  pool.layout_ = layout;
  pool.n_blocks_ = n_blocks;
  pool.k_row_bytes_ = k_row;
  pool.v_row_bytes_ = v_row;
  pool.block_bytes_ = static_cast<size_t>(layout.n_layers) * static_cast<size_t>(layout.block_tokens) * (k_row + v_row);
  pool.bytes_ = pool.block_bytes_ * static_cast<size_t>(n_blocks);
  void* p = mmap(nullptr, pool.bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return make_error(ErrorKind::kOutOfRange, "cannot reserve " + std::to_string(pool.bytes_) + " bytes for the KV cache");
  }
  pool.base_ = static_cast<uint8_t*>(p);
  pool.refcount_.assign(static_cast<size_t>(n_blocks), 0);
  pool.free_.reserve(static_cast<size_t>(n_blocks));
  for (int32_t b = n_blocks - 1; b >= 0; --b) pool.free_.push_back(b);
  return pool;
}

KvBlockPool::~KvBlockPool() { release(); }

void KvBlockPool::release() {
  if (base_ != nullptr) munmap(base_, bytes_);
  base_ = nullptr;
}

KvBlockPool::KvBlockPool(KvBlockPool&& o) noexcept { *this = std::move(o); }

KvBlockPool& KvBlockPool::operator=(KvBlockPool&& o) noexcept {
  if (this != &o) {
    release();
    layout_ = o.layout_;
    n_blocks_ = o.n_blocks_;
    k_row_bytes_ = o.k_row_bytes_;
    v_row_bytes_ = o.v_row_bytes_;
    block_bytes_ = o.block_bytes_;
    bytes_ = o.bytes_;
    base_ = std::exchange(o.base_, nullptr);
    refcount_ = std::move(o.refcount_);
    free_ = std::move(o.free_);
  }
  return *this;
}

Result<int32_t> KvBlockPool::kv_block_alloc() {
  if (free_.empty()) {
    return make_error(ErrorKind::kOutOfRange, "KV cache is full (" + std::to_string(n_blocks_) + " blocks of " +
                                                  std::to_string(layout_.block_tokens) + " tokens in use)");
  }
  int32_t b = free_.back();
  free_.pop_back();
  refcount_[static_cast<size_t>(b)] = 1;
  return b;
}

void KvBlockPool::kv_block_ref(int32_t block) {
  assert(refcount_[static_cast<size_t>(block)] > 0);
  refcount_[static_cast<size_t>(block)]++;
}

void KvBlockPool::kv_block_unref(int32_t block) {
  int32_t& rc = refcount_[static_cast<size_t>(block)];
  assert(rc > 0);
  if (--rc == 0) free_.push_back(block);
}

uint8_t* KvBlockPool::k_block(int32_t layer, int32_t block) {
  size_t per_layer = static_cast<size_t>(layout_.block_tokens) * (k_row_bytes_ + v_row_bytes_);
  return base_ + static_cast<size_t>(block) * block_bytes_ + static_cast<size_t>(layer) * per_layer;
}

uint8_t* KvBlockPool::v_block(int32_t layer, int32_t block) {
  return k_block(layer, block) + static_cast<size_t>(layout_.block_tokens) * k_row_bytes_;
}

void KvBlockPool::kv_block_copy(int32_t src, int32_t dst) {
  std::memcpy(base_ + static_cast<size_t>(dst) * block_bytes_, base_ + static_cast<size_t>(src) * block_bytes_,
              block_bytes_);
}

}  // namespace hearth::kv
