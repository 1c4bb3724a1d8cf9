// The paged KV cache: sequences own block tables over a shared KvBlockPool. A sequence grows
// by appending tokens (blocks are taken from the pool as needed), can be truncated (blocks
// past the end go back), and can be forked: the fork shares every block of its source, and
// the first write into a shared block copies it (copy-on-write). The forward pass looks K/V
// rows up through the block table, so several sequences live in one batch at their own
// positions. With prefix sharing on, sequences publish their full blocks into a PrefixCache
// and a new sequence adopts the longest cached prefix of its prompt; cached blocks nobody
// else holds are evicted when the pool runs short, when an idle engine trims the cache, and
// when a lower byte limit asks for memory back.
//
// Sliding-window layers (gemma2/3, gpt-oss) keep their rows in a second pool with a block
// table of its own per sequence: a block there holds the sliding layers' rows of the same 16
// tokens. Before a sequence grows, the sliding blocks wholly before the first key its next
// query can see (position − window + 1) are released (the table entry becomes a hole, read as
// zeros and masked by the window), so a sequence holds at most window + one block + the batch
// of sliding rows however long it grows. A sequence can then only be truncated to (and a
// cached prefix adopted up to) a length whose window is still held: seq_resumable() says which.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kv/kv_block_pool.h"
#include "kv/prefix_cache.h"
#include "util/result.h"

namespace hearth::kv {

// Which layers attend through a sliding window (a layer at position p sees keys
// p − window + 1 .. p). Applied when some but not all layers slide; otherwise every layer lives
// in the main pool (nothing to release while a global layer needs the same blocks, or an
// all-sliding model, which the main pool's table serves as before).
struct KvSliding {
  int32_t window = 0;       // 0: none
  std::vector<bool> layers;  // one flag per layer
};

struct KvCacheOptions {
  KvPoolOptions pool;
  KvSliding sliding;
  bool prefix_sharing = true;
  uint64_t model_seed = 0;  // the model's identity, seeding block names
};

struct KvCacheStats {
  KvPoolStats pool;
  KvPoolStats sliding;  // the sliding-window layers' pool (zeros when there is none)
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
  // Keeps the first n_tokens (n_tokens <= length, and resumable: see seq_resumable).
  Status seq_truncate(int32_t seq, int32_t n_tokens);
  // The longest length <= n_tokens the sequence can be truncated to and continued from: one
  // whose sliding window is still held (n_tokens itself without sliding layers).
  int32_t seq_resumable(int32_t seq, int32_t n_tokens) const;
  // Grows the sequence by n_tokens; the caller then writes their K/V rows at positions
  // [old length, old length + n_tokens). Evicts cached prefix blocks when the pool is short;
  // fails without changing the sequence if the pool still cannot supply the blocks.
  Status seq_append(int32_t seq, int32_t n_tokens);

  // Prefix sharing. seq_adopt_prefix: an EMPTY sequence takes the longest cached prefix of
  // `tokens`, at most max_tokens of it; returns the tokens it now holds (0 when nothing
  // matched or sharing is off; shorter than the match when the sliding window at its end was
  // released before it was published). seq_publish: names the sequence's full blocks, whose tokens
  // are the first blocks of `tokens` (what the caller wrote into it), in the cache.
  int32_t seq_adopt_prefix(int32_t seq, std::span<const int32_t> tokens, int32_t max_tokens);
  void seq_publish(int32_t seq, std::span<const int32_t> tokens);
  // Tokens of `tokens` a new sequence would adopt (whole blocks), without adopting.
  int32_t cached_prefix(std::span<const int32_t> tokens) const;
  bool prefix_sharing() const { return prefix_sharing_; }

  // Evicts cached blocks held by the cache alone (those emptying whole chunks first) until at
  // most keep_bytes of them remain (a block's bytes here and in the device mirror), then gives every empty chunk beyond the pool's reserve
  // back to the OS. Returns the chunks released.
  int32_t trim_cache(size_t keep_bytes);
  // trim_cache(cap) only when the evictable cached blocks are over `cap` bytes; otherwise
  // nothing (no chunk is released either). One count of the evictable blocks serves both the
  // check and the trim (the engine calls it after every finished request).
  int32_t trim_cache_if_over(size_t cap_bytes);
  // Brings committed memory under the pool's limit as far as cached blocks allow (running
  // sequences keep theirs). Returns the chunks released.
  int32_t enforce_limit();
  KvCacheStats stats() const;

  bool seq_valid(int32_t seq) const;
  int32_t seq_length(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].length; }
  // Sliding-window pool blocks the sequence holds now (0 without a sliding pool).
  int32_t seq_sliding_blocks(int32_t seq) const;
  std::span<const int32_t> block_table(int32_t seq) const { return seqs_[static_cast<size_t>(seq)].blocks; }
  // The table that holds `layer`'s rows: the main one or the sliding one (-1: released).
  std::span<const int32_t> block_table(int32_t seq, int32_t layer) const;
  // Start of `layer`'s K (V) rows in a block of block_table(seq, layer); a released block
  // reads as zeros (such keys are outside every window, so masked).
  const uint8_t* k_block(int32_t layer, int32_t block) const;
  const uint8_t* v_block(int32_t layer, int32_t block) const;
  bool has_sliding_pool() const { return sliding_ != nullptr; }
  const KvBlockPool* sliding_pool() const { return sliding_.get(); }
  int32_t n_sequences() const;

  // Row of one token (pos < length) in one layer (a transposed K and a BF16 cache's pairs have
  // no rows: k_block_at, v_block_at).
  uint8_t* k_row(int32_t layer, int32_t seq, int32_t pos);
  // The block holding the token's K (V) in one layer (its offset in it: pos % block_tokens()).
  uint8_t* k_block_at(int32_t layer, int32_t seq, int32_t pos);
  uint8_t* v_block_at(int32_t layer, int32_t seq, int32_t pos);
  uint8_t* v_row(int32_t layer, int32_t seq, int32_t pos);

  KvBlockPool& pool() { return pool_; }
  const KvBlockPool& pool() const { return pool_; }
  int32_t block_tokens() const { return pool_.layout().block_tokens; }

 private:
  // trim_cache with the evictable block count already known.
  int32_t trim_evictable(int32_t evictable, size_t keep_bytes);
  KvCache(KvBlockPool pool, const KvCacheOptions& options)
      : pool_(std::move(pool)), prefix_(options.model_seed, pool_.layout().block_tokens),
        prefix_sharing_(options.prefix_sharing) {}
  struct Sequence {
    bool live = false;
    int32_t length = 0;
    std::vector<int32_t> blocks;
    std::vector<uint64_t> hashes;  // chain hashes of its first full blocks (prefix cache names)
    std::vector<int32_t> sliding;  // with a sliding pool: one per block, -1 once released
    size_t sliding_released = 0;   // sliding[0, this) are all released
  };
  // Whether `length` tokens can be continued from when sliding block i is held iff held(i).
  template <typename Held>
  bool window_held(int32_t length, Held held) const;
  // Tokens of a matched chain a new sequence can take: at most max_tokens, ending where the
  // cache still holds the sliding window.
  int32_t adoptable(const std::vector<CachedBlock>& blocks, int32_t max_tokens) const;
  // Releases the sliding blocks no query from position `next_pos` on can see.
  void release_out_of_window(Sequence& s, int32_t next_pos);
  // Where `layer`'s rows live: its pool and its index there.
  const KvBlockPool& layer_pool(int32_t layer) const { return layer_sliding(layer) ? *sliding_ : pool_; }
  bool layer_sliding(int32_t layer) const {
    return sliding_ != nullptr && layer_index_.size() > static_cast<size_t>(layer) && sliding_layers_[static_cast<size_t>(layer)];
  }
  int32_t layer_index(int32_t layer) const {
    return layer_index_.empty() ? layer : layer_index_[static_cast<size_t>(layer)];
  }
  Sequence& seq(int32_t id) { return seqs_[static_cast<size_t>(id)]; }
  // Evicts cached blocks (least recently used first) until n blocks are free; false if it cannot.
  bool make_free(int32_t n);

  KvBlockPool pool_;
  std::unique_ptr<KvBlockPool> sliding_;  // the sliding-window layers' blocks (null: none)
  int32_t window_ = 0;
  std::vector<bool> sliding_layers_;
  std::vector<int32_t> layer_index_;      // per layer: its index in its pool (empty: identity)
  std::vector<uint8_t> hole_;             // zeros standing in for released blocks
  PrefixCache prefix_;
  bool prefix_sharing_ = true;
  std::vector<Sequence> seqs_;
  uint64_t evictions_total_ = 0;
  uint64_t shrink_events_total_ = 0;
};

}  // namespace hearth::kv
