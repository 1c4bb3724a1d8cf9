// A pool of fixed-size KV blocks. Each block holds K and V for `block_tokens` consecutive
// tokens of one sequence, for every layer, so a chunk of whole blocks holds whole token ranges
// of all layers. Inside a chunk the rows are layer-major: layer 0's K rows of every block of
// the chunk, then their V rows, then layer 1's, ... so a sequence's consecutive blocks (which
// allocation keeps in one chunk where it can) give decode attention one long run of a layer's
// keys instead of a short run per block (block-major, a 1B model's 16 KiB of a layer's keys
// sat 512 KiB apart). Memory is elastic: the pool reserves address space for its maximum (a
// KvMemory) and commits it in chunks (2 MiB) only as blocks are handed out; a chunk whose
// blocks are all free goes back to the OS once more than `reserve_chunks` empty chunks stay
// committed. Allocation takes the lowest free block of the lowest committed chunk that has one,
// so live data packs into low chunks and freed sequences leave whole chunks empty. A
// background committer prefaults the next chunk before it is needed, so decode does not wait
// on page faults. Blocks are reference-counted so sequences (and the prefix cache) share them.
// A byte limit (set_limit, any thread) closes admission of new work past it; it never takes a
// block away from a sequence that holds one. Allocation and reference counting are for one
// thread (the engine's); stats() and set_limit() may be called from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kv/kv_memory.h"
#include "tensor/dtype.h"
#include "util/result.h"

namespace hearth::kv {

struct KvLayout {
  int32_t n_layers = 0;
  int32_t k_row_elems = 0;   // n_kv_heads * head_dim_k: one token's K in one layer
  int32_t v_row_elems = 0;   // n_kv_heads * head_dim_v
  int32_t block_tokens = 16;
  DType type = DType::kF16;  // F16 (default), F32, Q8_0, Q4_0 or BF16 (stored in pairs, see kernels/ops.h)
  // Each block keeps a KV head's keys and values as ranges (kernels::KvSpan::by_head; F16
  // only): K by element, element e of the block's token o at e * block_tokens + o, and V by head,
  // then token. The block's size and place are unchanged.
  bool by_head = false;
  // The first this many layers keep no rows in this pool: they run on a device and their rows
  // live in the pool's mirror there (KvChunkMirror). A chunk then holds as many blocks as if
  // the pool had max(1, n_layers - offloaded_layers) layers, so its memory shrinks with every
  // layer offloaded; with all of them offloaded the pool only keeps the blocks' bookkeeping.
  int32_t offloaded_layers = 0;
  int32_t cpu_layers() const { return n_layers - offloaded_layers; }
};

struct KvPoolOptions {
  // Empty committed chunks kept for the next blocks (the low-water mark): freeing below it
  // keeps memory committed; above it, an empty chunk is released at once.
  int32_t reserve_chunks = 1;
  // Prefault the next chunk on a thread of the pool's own (false: commit on demand only).
  bool background_commit = true;
};

// Memory beside the pool holding more rows of the same blocks where the pool cannot address
// them: the KV of layers offloaded to a device. Its chunk c holds its rows of the pool's chunk
// c's blocks, so it is elastic the same way: the pool commits a mirror chunk when it hands out
// a block of that chunk (on the allocating thread and only then, never ahead: device memory is
// scarcer than RAM), releases it when it releases its own chunk, and copies a block in it when
// it copies one (copy-on-write). chunk_bytes() is a chunk of chunk_slots() blocks; a chunk
// of fewer blocks (the pool's last, blocks_in_chunk) may be smaller, and the pool counts the
// mirror's memory per block.
class KvChunkMirror {
 public:
  virtual ~KvChunkMirror() = default;
  // Errors (the memory is full, the device refuses) make the allocation fail, never a crash.
  virtual Status commit_chunk(int32_t chunk) = 0;
  virtual void release_chunk(int32_t chunk) = 0;
  virtual Status copy_block(int32_t src, int32_t dst) = 0;
  virtual size_t chunk_bytes() const = 0;
};

struct KvPoolStats {
  size_t reserved_bytes = 0;   // address space for every block
  size_t committed_bytes = 0;  // resident chunks
  size_t used_bytes = 0;       // blocks with a reference, times the block size
  size_t limit_bytes = 0;      // set_limit (the reservation when never set)
  size_t block_bytes = 0;
  int32_t blocks_total = 0;
  int32_t blocks_used = 0;
  uint64_t chunks_committed_total = 0;
  uint64_t chunks_released_total = 0;
  uint64_t commits_on_demand_total = 0;  // chunks the allocating thread had to commit itself
  // The mirror's (device KV of offloaded layers; 0 without one): its rows of every chunk, and
  // of the chunks it holds now.
  size_t mirror_reserved_bytes = 0;
  size_t mirror_committed_bytes = 0;
  size_t mirror_block_bytes = 0;  // the mirror's rows of one block
  uint64_t mirror_chunks_released_total = 0;
};

class KvBlockPool {
 public:
  static Result<KvBlockPool> create(const KvLayout& layout, int32_t n_blocks, const KvPoolOptions& options = {});
  // A pool over caller-provided memory (a test double or another backend); `memory` must be
  // at least chunk-count × chunk-stride bytes (bytes_needed()).
  static Result<KvBlockPool> create(const KvLayout& layout, int32_t n_blocks, const KvPoolOptions& options,
                                    std::unique_ptr<KvMemory> memory);
  // Bytes of memory a pool of this layout and size reserves.
  static Result<size_t> bytes_needed(const KvLayout& layout, int32_t n_blocks);
  ~KvBlockPool();
  KvBlockPool(KvBlockPool&& other) noexcept;
  KvBlockPool& operator=(KvBlockPool&& other) noexcept;
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  const KvLayout& layout() const { return layout_; }
  int32_t n_blocks() const { return n_blocks_; }
  int32_t n_free() const { return n_blocks_ - n_used_; }
  int32_t n_used() const { return n_used_; }

  // The lowest free block of the lowest committed chunk with one (else of the lowest chunk,
  // committed now), refcount 1; kOutOfRange when every block is in use.
  Result<int32_t> kv_block_alloc();
  void kv_block_ref(int32_t block);
  // Drops one reference; at zero the block is free, and its chunk is released when it became
  // empty and more than reserve_chunks empty chunks are committed.
  void kv_block_unref(int32_t block);
  int32_t kv_block_refcount(int32_t block) const { return refcount_[static_cast<size_t>(block)]; }
  // Copies all layers' K and V rows of `src` into `dst` (the copy in copy-on-write), in the
  // mirror too when one is attached.
  Status kv_block_copy(int32_t src, int32_t dst);

  // Attaches a mirror (nullptr detaches it, releasing nothing: its owner frees its memory).
  // Only while no block is in use: the mirror cannot hold rows written before it came.
  Status attach_mirror(KvChunkMirror* mirror);

  // Start of the K (or V) rows of `block` in `layer` (one of the CPU layers: at least
  // layout().offloaded_layers); rows of one block are contiguous, each k_row_bytes()
  // (v_row_bytes()) long.
  uint8_t* k_block(int32_t layer, int32_t block);
  uint8_t* v_block(int32_t layer, int32_t block);
  size_t k_row_bytes() const { return k_row_bytes_; }
  size_t v_row_bytes() const { return v_row_bytes_; }
  size_t block_bytes() const { return block_bytes_; }
  // Bytes one block holds here and in the mirror together: what caching a block costs, the
  // same whichever layers are offloaded (engine thread, like allocation).
  size_t block_bytes_with_mirror() const {
    return block_bytes_ + (mirror_ != nullptr ? mirror_->chunk_bytes() / static_cast<size_t>(chunk_slots()) : 0);
  }
  // Blocks a chunk holds rows for: blocks_per_chunk(), or fewer when the whole pool is smaller
  // (a mirror need not size its one chunk for blocks that do not exist).
  int32_t chunk_slots() const { return std::min(blocks_per_chunk_, n_blocks_); }
  // Blocks chunk `chunk` holds: blocks_per_chunk(), fewer for a last chunk past the pool's end.
  int32_t blocks_in_chunk(int32_t chunk) const { return std::min(blocks_per_chunk_, n_blocks_ - chunk * blocks_per_chunk_); }
  size_t bytes_reserved() const { return n_chunks_ * chunk_stride_; }

  // Chunks: blocks [c * blocks_per_chunk, (c + 1) * blocks_per_chunk) live in chunk c.
  int32_t blocks_per_chunk() const { return blocks_per_chunk_; }
  int32_t chunk_of(int32_t block) const { return block / blocks_per_chunk_; }
  int32_t chunk_used(int32_t chunk) const { return chunk_used_[static_cast<size_t>(chunk)]; }
  bool chunk_committed(int32_t chunk) const;

  // Releases every empty committed chunk beyond keep_empty_chunks (highest first; chunks being
  // committed ahead count as kept); the number released. Use keep_empty_chunks = 0 to return
  // everything that can be.
  int32_t release_empty_chunks(int32_t keep_empty_chunks);
  // Returns once no chunk is being committed ahead (the background committer is idle).
  void wait_for_commits() const;

  // Byte limit on used blocks (any thread; 0 or more than the reservation: no limit). Past it
  // admits_blocks() says no; blocks already held are never taken back.
  void set_limit(size_t bytes);
  size_t limit() const;
  // Whether n more blocks fit under the limit (and in the pool).
  bool admits_blocks(int32_t n) const;
  // Whether n more blocks fit under a limit set by set_limit() (true when none is set): a full
  // pool without a limit is the slots' business (an idle slot gives its blocks up when reused),
  // not a reason to hold requests back.
  bool limit_admits_blocks(int32_t n) const;

  KvPoolStats stats() const;  // any thread

 private:
  struct Shared;  // chunk states and the committer thread, shared with that thread
  KvBlockPool() = default;
  // Start of `layer`'s region (chunk_layer_bytes) in the chunk that holds `block`.
  uint8_t* layer_region(int32_t layer, int32_t block);
  size_t k_block_bytes() const { return static_cast<size_t>(layout_.block_tokens) * k_row_bytes_; }
  size_t v_block_bytes() const { return static_cast<size_t>(layout_.block_tokens) * v_row_bytes_; }
  // One CPU layer's region of a chunk: the K rows of every block slot, then their V rows.
  size_t chunk_layer_bytes() const {
    return static_cast<size_t>(blocks_per_chunk_) * (k_block_bytes() + v_block_bytes());
  }
  int32_t pick_chunk();
  void commit_ahead();
  void release_chunk(int32_t chunk);

  KvLayout layout_;
  int32_t n_blocks_ = 0;
  size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
  size_t block_bytes_ = 0;    // K and V of every CPU layer for one block
  int32_t blocks_per_chunk_ = 1;
  size_t chunk_stride_ = 0;   // bytes between chunk starts (whole memory chunks)
  size_t n_chunks_ = 0;
  int32_t reserve_chunks_ = 1;
  uint8_t* base_ = nullptr;
  std::vector<int32_t> refcount_;
  std::vector<int32_t> chunk_used_;  // blocks with a reference, per chunk
  KvChunkMirror* mirror_ = nullptr;
  std::vector<uint8_t> mirror_committed_;  // per chunk
  int32_t n_used_ = 0;
  std::unique_ptr<Shared> shared_;
};

}  // namespace hearth::kv
