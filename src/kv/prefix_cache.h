// The cross-request prefix cache: full KV blocks named by a chained hash of their tokens (each
// block's hash covers its tokens and its parent's hash, seeded with the model's identity), so
// a name stands for the whole prefix up to the block's end. The entries form a tree (a
// parent's children are the blocks that continued it). A new sequence adopts the longest
// chain of cached blocks matching its prompt instead of evaluating it: a system prompt shared
// by many conversations is stored and evaluated once. The cache holds one reference on each
// block it names; a block only the cache holds is evictable, leaves first (a parent is never
// evicted before its children), least recently used first, or, when memory must go back to
// the OS, in the order that empties whole chunks soonest. Tokens are kept with each entry, so
// a hash collision never adopts the wrong K/V. With sliding-window layers in a pool of their own
// (kv_cache.h), an entry may also hold the block's sliding-layer rows; it names them only
// while some sequence still held them when it published (out-of-window rows are released), so
// an entry without them is a hole: good as part of a longer chain, not as a resume point.
// Engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kv/kv_block_pool.h"

namespace hearth::kv {

// The hash of a block whose tokens are `tokens` and whose parent's hash is `parent` (for the
// first block: the model's seed).
uint64_t chain_hash(uint64_t parent, std::span<const int32_t> tokens);

// One cached block: its rows in the main pool and, when the cache holds them, its rows in the
// sliding-window pool (-1: none).
struct CachedBlock {
  int32_t block = -1;
  int32_t sliding = -1;
};

enum class EvictOrder {
  kLeastRecentlyUsed,  // the coldest evictable leaf
  kEmptyChunks,        // the evictable leaf in the chunk with fewest blocks held by sequences,
                       // then fewest used blocks, then the coldest
};

class PrefixCache {
 public:
  PrefixCache(uint64_t model_seed, int32_t block_tokens) : seed_(model_seed), block_tokens_(block_tokens) {}

  // The pool of sliding-window layers' blocks (null: none); it must outlive the cache.
  void set_sliding_pool(KvBlockPool* pool) { sliding_pool_ = pool; }
  uint64_t seed() const { return seed_; }
  int32_t n_blocks() const { return static_cast<int32_t>(entries_.size()); }

  // The blocks holding the longest cached prefix of `tokens` (whole blocks only), in order;
  // marks them used now. No reference is taken: the caller refs what it keeps.
  std::vector<CachedBlock> match(std::span<const int32_t> tokens);
  // What match() would return, without marking anything used.
  std::vector<CachedBlock> lookup(std::span<const int32_t> tokens) const;
  // Tokens of `tokens` that match() would cover, without marking anything used.
  int32_t peek(std::span<const int32_t> tokens) const;

  // Names the full blocks of a sequence: `hashes` holds the chain hashes already computed
  // for its first blocks (extended in place), `tokens` its tokens, `blocks` its block table.
  // A block whose name is new is cached (one reference taken on the pool); a name already
  // cached keeps its block (the sequence's copy stays the sequence's, and the chain is named
  // no further). `sliding` (empty, or one entry per block, -1 for released ones) is the
  // sequence's sliding-window table: an entry takes (a reference on) the sliding block it
  // lacks from a sequence holding the same main block.
  void insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks, std::span<const int32_t> sliding,
              std::vector<uint64_t>& hashes, KvBlockPool& pool);

  // Drops one evictable block (held by the cache alone, no cached children) and returns its
  // id, or nullopt when none is evictable. The pool reference is dropped here.
  std::optional<int32_t> evict_one(KvBlockPool& pool, EvictOrder order);
  // Blocks held by the cache alone: what evicting everything would free.
  int32_t n_evictable(const KvBlockPool& pool) const;
  // Drops every entry (and its references).
  void clear(KvBlockPool& pool);

 private:
  struct Entry {
    uint64_t parent = 0;
    int32_t block = -1;
    int32_t sliding = -1;
    int32_t n_children = 0;
    uint64_t last_used = 0;
    std::vector<int32_t> tokens;
  };
  bool is_root(uint64_t parent) const { return parent == seed_; }
  void touch(uint64_t hash, Entry& e);
  void remove(uint64_t hash, KvBlockPool& pool);

  uint64_t seed_;
  int32_t block_tokens_;
  uint64_t clock_ = 0;
  KvBlockPool* sliding_pool_ = nullptr;
  std::unordered_map<uint64_t, Entry> entries_;
  std::set<std::pair<uint64_t, uint64_t>> leaves_;  // (last_used, hash) of entries without children
};

}  // namespace hearth::kv
