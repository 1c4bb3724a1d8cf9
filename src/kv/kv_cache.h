// The paged KV cache: sequences own block tables over a shared KvBlockPool. A sequence grows
// by appending tokens (blocks are taken from the pool as needed), can be truncated (blocks
// past the end go back), and can be forked: the fork shares every block of its source, and
// the first write into a shared block copies it (copy-on-write). The forward pass looks K/V
// rows up through the block table, so several sequences live in one batch at their own
// positions. With prefix sharing on, sequences publish their full blocks into a PrefixCache
// and a new sequence adopts the longest cached prefix of its prompt; cached blocks nobody
// else holds are evicted when the pool runs short, when an idle engine trims the cache, and
// when a lower byte limit asks for memory back.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kv/kv_block_pool.h"
#include "kv/prefix_cache.h"
#include "util/result.h"

namespace hearth::kv {

struct KvCacheOptions {
  KvPoolOptions pool;
  bool prefix_sharing = true;
  uint64_t model_seed = 0;  // the model's identity, seeding block names
};

struct KvCacheStats {
  KvPoolStats pool;
  int32_t blocks_cached = 0;     // blocks the prefix cache names
  int32_t blocks_evictable = 0;  // ... held by it alone
  uint64_t evictions_total = 0;
  uint64_t shrink_events_total = 0;  // trims and limit changes that gave memory back
};

class KvCache {
 public:
  static Result<KvCache> create(const KvLayout& layout, int32_t n_blocks, const KvCacheOptions& options = {});

  // A new empty sequence.
  int32_t seq_create();
  // A new sequence sharing all of src's tokens (no copy until one of them writes).
  Result<int32_t> seq_fork(int32_t src);
  void seq_free(int32_t seq);
  // Keeps the first n_tokens (n_tokens <= length).
  Status seq_truncate(int32_t seq, int32_t n_tokens);
  // Grows the sequence by n_tokens; the caller then writes their K/V rows at positions
  // [old length, old length + n_tokens). Evicts cached prefix blocks when the pool is short;
  // fails without changing the sequence if the pool still cannot supply the blocks.
  Status seq_append(int32_t seq, int32_t n_tokens);

  // Prefix sharing. seq_adopt_prefix: an EMPTY sequence takes the longest cached prefix of
  // `tokens`, at most max_tokens of it; returns the tokens it now holds (0 when nothing
  // matched or sharing is off). seq_publish: names the sequence's full blocks, whose tokens
  // are the first blocks of `tokens` (what the caller wrote into it), in the cache.
  int32_t seq_adopt_prefix(int32_t seq, std::span<const int32_t> tokens, int32_t max_tokens);
  void seq_publish(int32_t seq, std::span<const int32_t> tokens);
  // Tokens of `tokens` a new sequence would adopt (whole blocks), without adopting.
  int32_t cached_prefix(std::span<const int32_t> tokens) const;
  bool prefix_sharing() const { return prefix_sharing_; }

  // Evicts cached blocks held by the cache alone (those emptying whole chunks first) until at
  // most keep_bytes of them remain, then gives every empty chunk beyond the pool's reserve
  // back to the OS. Returns the chunks released.
  int32_t trim_cache(size_t keep_bytes);
  // Brings committed memory under the pool's limit as far as cached blocks allow (running
  // sequences keep theirs). Returns the chunks released.
  int32_t enforce_limit();
  KvCacheStats stats() const;

  bool seq_valid(int32_t seq) const;
  int32_t seq_length(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].length; }
  std::span<const int32_t> block_table(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].blocks; }
  int32_t n_sequences() const;

  // Row of one token (pos < length) in one layer.
  uint8_t* k_row(int32_t layer, int32_t seq, int32_t pos);
  uint8_t* v_row(int32_t layer, int32_t seq, int32_t pos);

  KvBlockPool& pool() { return pool_; }
  const KvBlockPool& pool() const { return pool_; }
  int32_t block_tokens() const { return pool_.layout().block_tokens; }

 private:
  KvCache(KvBlockPool pool, const KvCacheOptions& options)
      : pool_(std::move(pool)), prefix_(options.model_seed, pool_.layout().block_tokens),
        prefix_sharing_(options.prefix_sharing) {}
  struct Sequence {
    bool live = false;
    int32_t length = 0;
    std::vector<int32_t> blocks;
    std::vector<uint64_t> hashes;  // chain hashes of its first full blocks (prefix cache names)
  };
  Sequence& seq(int32_t id) { return seqs_[static_cast<size_t>(id)]; }
  // Evicts cached blocks (least recently used first) until n blocks are free; false if it cannot.
  bool make_free(int32_t n);

  KvBlockPool pool_;
  PrefixCache prefix_;
  bool prefix_sharing_ = true;
  std::vector<Sequence> seqs_;
  uint64_t evictions_total_ = 0;
  uint64_t shrink_events_total_ = 0;
};

}  // namespace hearth::kv
