// Sequences over the KV block pool, prefix adoption and cache trimming (see kv_cache.h).
#include "kv/kv_cache.h"

#include <algorithm>
#include <cassert>

namespace hearth::kv {

Result<KvCache> KvCache::create(const KvLayout& layout, int32_t n_blocks, const KvCacheOptions& options) {
  HEARTH_ASSIGN(KvBlockPool pool, KvBlockPool::create(layout, n_blocks, options.pool));
  return KvCache(std::move(pool), options);
}

int32_t KvCache::seq_create() {
  for (size_t i = 0; i < seqs_.size(); ++i) {
    if (!seqs_[i].live) {
      seqs_[i] = Sequence{true, 0, {}, {}};
      return static_cast<int32_t>(i);
    }
  }
  seqs_.push_back(Sequence{true, 0, {}, {}});
  return static_cast<int32_t>(seqs_.size() - 1);
}

bool KvCache::seq_valid(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < seqs_.size() && seqs_[static_cast<size_t>(id)].live;
}

int32_t KvCache::n_sequences() const {
  int32_t n = 0;
  for (const auto& s : seqs_) n += s.live ? 1 : 0;
  return n;
}

Result<int32_t> KvCache::seq_fork(int32_t src) {
  if (!seq_valid(src)) return make_error(ErrorKind::kNotFound, "no KV sequence " + std::to_string(src));
  int32_t id = seq_create();
  Sequence& from = seq(src);  // after seq_create: the vector may have grown
  Sequence& to = seq(id);
  to.length = from.length;
  to.blocks = from.blocks;
  to.hashes = from.hashes;
  for (int32_t b : to.blocks) pool_.kv_block_ref(b);
  return id;
}

void KvCache::seq_free(int32_t id) {
  if (!seq_valid(id)) return;
  Sequence& s = seq(id);
  for (int32_t b : s.blocks) pool_.kv_block_unref(b);
  s = Sequence{};
}

Status KvCache::seq_truncate(int32_t id, int32_t n_tokens) {
  if (!seq_valid(id)) return make_error(ErrorKind::kNotFound, "no KV sequence " + std::to_string(id));
  Sequence& s = seq(id);
  if (n_tokens < 0 || n_tokens > s.length) {
    return make_error(ErrorKind::kOutOfRange, "cannot truncate a sequence of " + std::to_string(s.length) +
                                                  " tokens to " + std::to_string(n_tokens));
  }
  const int32_t bt = block_tokens();
  const size_t keep_blocks = static_cast<size_t>((n_tokens + bt - 1) / bt);
  while (s.blocks.size() > keep_blocks) {
    pool_.kv_block_unref(s.blocks.back());
    s.blocks.pop_back();
  }
  s.hashes.resize(std::min(s.hashes.size(), static_cast<size_t>(n_tokens / bt)));
  s.length = n_tokens;
  return ok_status();
}

bool KvCache::make_free(int32_t n) {
  while (pool_.n_free() < n) {
    if (!prefix_.evict_one(pool_, EvictOrder::kLeastRecentlyUsed)) return false;
    ++evictions_total_;
  }
  return true;
}

Status KvCache::seq_append(int32_t id, int32_t n_tokens) {
  if (!seq_valid(id)) return make_error(ErrorKind::kNotFound, "no KV sequence " + std::to_string(id));
  if (n_tokens < 0) return make_error(ErrorKind::kInvalidArgument, "cannot append a negative token count");
  if (n_tokens == 0) return ok_status();
  const int32_t bt = block_tokens();
  const int32_t length = seq(id).length;
  const size_t need_blocks = static_cast<size_t>((length + n_tokens + bt - 1) / bt);
  // The block holding the first new token is written into: if it is shared, copy it first.
  const bool cow = (length % bt) != 0 && pool_.kv_block_refcount(seq(id).blocks.back()) > 1;
  const size_t extra = need_blocks - seq(id).blocks.size() + (cow ? 1 : 0);
  if (!make_free(static_cast<int32_t>(extra))) {
    return make_error(ErrorKind::kOutOfRange, "KV cache is full: " + std::to_string(extra) + " more blocks needed, " +
                                                  std::to_string(pool_.n_free()) + " free");
  }
  Sequence& s = seq(id);
  if (cow) {
    HEARTH_ASSIGN(int32_t copy, pool_.kv_block_alloc());
    if (Status st = pool_.kv_block_copy(s.blocks.back(), copy); !st.ok()) {
      pool_.kv_block_unref(copy);
      return st;
    }
    pool_.kv_block_unref(s.blocks.back());
    s.blocks.back() = copy;
  }
  // A mirror (device KV) that cannot commit fails here: the blocks taken by this call go back,
  // so the sequence keeps one block per started block_tokens positions.
  const size_t had = s.blocks.size();
  while (s.blocks.size() < need_blocks) {
    auto b = pool_.kv_block_alloc();
    if (!b.ok()) {
      while (s.blocks.size() > had) {
        pool_.kv_block_unref(s.blocks.back());
        s.blocks.pop_back();
      }
      return b.error();
    }
    s.blocks.push_back(*b);
  }
  s.length += n_tokens;
  return ok_status();
}

int32_t KvCache::seq_adopt_prefix(int32_t id, std::span<const int32_t> tokens, int32_t max_tokens) {
  if (!prefix_sharing_ || !seq_valid(id) || seq(id).length != 0 || max_tokens <= 0) return 0;
  const std::vector<int32_t> blocks = prefix_.match(tokens);
  const int32_t bt = block_tokens();
  const int32_t n = std::min(static_cast<int32_t>(blocks.size()) * bt, max_tokens);
  if (n <= 0) return 0;
  Sequence& s = seq(id);
  const auto n_blocks = static_cast<size_t>((n + bt - 1) / bt);
  for (size_t i = 0; i < n_blocks; ++i) {
    pool_.kv_block_ref(blocks[i]);
    s.blocks.push_back(blocks[i]);
  }
  s.length = n;
  return n;
}

void KvCache::seq_publish(int32_t id, std::span<const int32_t> tokens) {
  if (!prefix_sharing_ || !seq_valid(id)) return;
  Sequence& s = seq(id);
  const auto n = std::min(tokens.size(), static_cast<size_t>(s.length));
  prefix_.insert(tokens.first(n), s.blocks, s.hashes, pool_);
}

int32_t KvCache::cached_prefix(std::span<const int32_t> tokens) const {
  return prefix_sharing_ ? prefix_.peek(tokens) : 0;
}

int32_t KvCache::trim_cache(size_t keep_bytes) {
  const uint64_t released_before = pool_.stats().chunks_released_total;  // evicting may release too
  int32_t evictable = prefix_.n_evictable(pool_);
  const size_t block = pool_.block_bytes();
  while (evictable > 0 && static_cast<size_t>(evictable) * block > keep_bytes) {
    if (!prefix_.evict_one(pool_, EvictOrder::kEmptyChunks)) break;
    ++evictions_total_;
    --evictable;
  }
  pool_.release_empty_chunks(0);
  const auto released = static_cast<int32_t>(pool_.stats().chunks_released_total - released_before);
  if (released > 0) ++shrink_events_total_;
  return released;
}

int32_t KvCache::enforce_limit() {
  const uint64_t released_before = pool_.stats().chunks_released_total;
  while (pool_.stats().committed_bytes > pool_.limit()) {
    if (pool_.release_empty_chunks(0) > 0) continue;
    if (!prefix_.evict_one(pool_, EvictOrder::kEmptyChunks)) break;
    ++evictions_total_;
  }
  const auto released = static_cast<int32_t>(pool_.stats().chunks_released_total - released_before);
  if (released > 0) ++shrink_events_total_;
  return released;
}

KvCacheStats KvCache::stats() const {
  KvCacheStats s;
  s.pool = pool_.stats();
  s.blocks_cached = prefix_.n_blocks();
  s.blocks_evictable = prefix_.n_evictable(pool_);
  s.evictions_total = evictions_total_;
  s.shrink_events_total = shrink_events_total_;
  return s;
}

uint8_t* KvCache::k_row(int32_t layer, int32_t id, int32_t pos) {
  const Sequence& s = seq(id);
  assert(pos >= 0 && pos < s.length);
  const int32_t bt = block_tokens();
  return pool_.k_block(layer, s.blocks[static_cast<size_t>(pos / bt)]) + static_cast<size_t>(pos % bt) * pool_.k_row_bytes();
}

uint8_t* KvCache::v_row(int32_t layer, int32_t id, int32_t pos) {
  const Sequence& s = seq(id);
  assert(pos >= 0 && pos < s.length);
  const int32_t bt = block_tokens();
  return pool_.v_block(layer, s.blocks[static_cast<size_t>(pos / bt)]) + static_cast<size_t>(pos % bt) * pool_.v_row_bytes();
}

}  // namespace hearth::kv
