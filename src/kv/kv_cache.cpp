// Sequences over the KV block pool, prefix adoption and cache trimming (see kv_cache.h).
#include "kv/kv_cache.h"

#include <algorithm>
#include <cassert>

namespace hearth::kv {

Result<KvCache> KvCache::create(const KvLayout& layout, int32_t n_blocks, const KvCacheOptions& options) {
  const KvSliding& sw = options.sliding;
  if (sw.window < 0) return make_error(ErrorKind::kInvalidArgument, "the sliding window must not be negative");
  if (sw.window > 0 && sw.layers.size() != static_cast<size_t>(layout.n_layers)) {
    return make_error(ErrorKind::kInvalidArgument, "the sliding-window flags need one entry per layer (" +
                                                       std::to_string(layout.n_layers) + ")");
  }
  const auto n_sliding = static_cast<int32_t>(std::count(sw.layers.begin(), sw.layers.end(), true));
  if (sw.window > 0 && n_sliding > 0 && n_sliding < layout.n_layers && layout.offloaded_layers > 0) {
    return make_error(ErrorKind::kUnsupported, "sliding-window layers with layers offloaded to a device");
  }
  if (sw.window == 0 || n_sliding == 0 || n_sliding == layout.n_layers) {
    HEARTH_ASSIGN(KvBlockPool pool, KvBlockPool::create(layout, n_blocks, options.pool));
    return KvCache(std::move(pool), options);
  }
  KvLayout main_layout = layout, sliding_layout = layout;
  main_layout.n_layers = layout.n_layers - n_sliding;
  sliding_layout.n_layers = n_sliding;
  HEARTH_ASSIGN(KvBlockPool pool, KvBlockPool::create(main_layout, n_blocks, options.pool));
  // As many blocks as the main pool: every sliding block is paired with a main block of the
  // same tokens held by the same holders, so this pool never runs out first.
  HEARTH_ASSIGN(KvBlockPool sliding, KvBlockPool::create(sliding_layout, n_blocks, options.pool));
  KvCache cache(std::move(pool), options);
  cache.sliding_ = std::make_unique<KvBlockPool>(std::move(sliding));
  cache.window_ = sw.window;
  cache.sliding_layers_ = sw.layers;
  int32_t next_main = 0, next_sliding = 0;
  for (bool slides : sw.layers) cache.layer_index_.push_back(slides ? next_sliding++ : next_main++);
  cache.hole_.assign(static_cast<size_t>(layout.block_tokens) *
                         std::max(cache.pool_.k_row_bytes(), cache.pool_.v_row_bytes()), 0);
  cache.prefix_.set_sliding_pool(cache.sliding_.get());
  return cache;
}

template <typename Held>
bool KvCache::window_held(int32_t length, Held held) const {
  if (sliding_ == nullptr || length == 0) return true;
  const int32_t bt = block_tokens();
  const int32_t first_key = std::max(0, length - window_ + 1);  // the next query's first key
  for (int32_t b = first_key / bt; b <= (length - 1) / bt; ++b) {
    if (!held(static_cast<size_t>(b))) return false;
  }
  return true;
}

int32_t KvCache::seq_resumable(int32_t id, int32_t n_tokens) const {
  if (!seq_valid(id)) return 0;
  const Sequence& s = seqs_[static_cast<size_t>(id)];
  n_tokens = std::clamp(n_tokens, 0, s.length);
  auto held = [&](size_t b) { return s.sliding[b] >= 0; };
  if (window_held(n_tokens, held)) return n_tokens;
  // Below n_tokens, the end of each earlier block is the longest length that block can serve.
  const int32_t bt = block_tokens();
  for (int32_t n = (n_tokens - 1) / bt * bt; n > 0; n -= bt) {
    if (window_held(n, held)) return n;
  }
  return 0;
}

void KvCache::release_out_of_window(Sequence& s, int32_t next_pos) {
  if (sliding_ == nullptr) return;
  const int32_t first_key = std::max(0, next_pos - window_ + 1);
  const auto end = std::min(s.sliding.size(), static_cast<size_t>(first_key / block_tokens()));
  for (size_t b = s.sliding_released; b < end; ++b) {
    if (s.sliding[b] >= 0) sliding_->kv_block_unref(s.sliding[b]);
    s.sliding[b] = -1;
  }
  s.sliding_released = std::max(s.sliding_released, end);
}

std::span<const int32_t> KvCache::block_table(int32_t id, int32_t layer) const {
  const Sequence& s = seqs_[static_cast<size_t>(id)];
  return layer_sliding(layer) ? std::span<const int32_t>(s.sliding) : std::span<const int32_t>(s.blocks);
}

const uint8_t* KvCache::k_block(int32_t layer, int32_t block) const {
  if (block < 0) return hole_.data();
  return const_cast<KvBlockPool&>(layer_pool(layer)).k_block(layer_index(layer), block);
}

const uint8_t* KvCache::v_block(int32_t layer, int32_t block) const {
  if (block < 0) return hole_.data();
  return const_cast<KvBlockPool&>(layer_pool(layer)).v_block(layer_index(layer), block);
}

int32_t KvCache::seq_create() {
  for (size_t i = 0; i < seqs_.size(); ++i) {
    if (!seqs_[i].live) {
      seqs_[i] = Sequence{true, 0, {}, {}, {}, 0};
      return static_cast<int32_t>(i);
    }
  }
  seqs_.push_back(Sequence{true, 0, {}, {}, {}, 0});
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
  to.sliding = from.sliding;
  to.sliding_released = from.sliding_released;
  for (int32_t b : to.blocks) pool_.kv_block_ref(b);
  for (int32_t b : to.sliding) {
    if (b >= 0) sliding_->kv_block_ref(b);
  }
  return id;
}

void KvCache::seq_free(int32_t id) {
  if (!seq_valid(id)) return;
  Sequence& s = seq(id);
  for (int32_t b : s.blocks) pool_.kv_block_unref(b);
  for (int32_t b : s.sliding) {
    if (b >= 0) sliding_->kv_block_unref(b);
  }
  s = Sequence{};
}

Status KvCache::seq_truncate(int32_t id, int32_t n_tokens) {
  if (!seq_valid(id)) return make_error(ErrorKind::kNotFound, "no KV sequence " + std::to_string(id));
  Sequence& s = seq(id);
  if (n_tokens < 0 || n_tokens > s.length) {
    return make_error(ErrorKind::kOutOfRange, "cannot truncate a sequence of " + std::to_string(s.length) +
                                                  " tokens to " + std::to_string(n_tokens));
  }
  if (seq_resumable(id, n_tokens) != n_tokens) {
    return make_error(ErrorKind::kOutOfRange,
                      "cannot truncate a sequence of " + std::to_string(s.length) + " tokens to " +
                          std::to_string(n_tokens) + ": its sliding-window layers released the keys that far back (" +
                          std::to_string(seq_resumable(id, n_tokens)) + " is the longest length it can resume from)");
  }
  const int32_t bt = block_tokens();
  const size_t keep_blocks = static_cast<size_t>((n_tokens + bt - 1) / bt);
  while (s.blocks.size() > keep_blocks) {
    pool_.kv_block_unref(s.blocks.back());
    s.blocks.pop_back();
  }
  while (s.sliding.size() > keep_blocks) {
    if (s.sliding.back() >= 0) sliding_->kv_block_unref(s.sliding.back());
    s.sliding.pop_back();
  }
  s.sliding_released = std::min(s.sliding_released, s.sliding.size());
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
  // The first new token's window starts here: nothing before it is read again.
  release_out_of_window(seq(id), length);
  const size_t need_blocks = static_cast<size_t>((length + n_tokens + bt - 1) / bt);
  // The block holding the first new token is written into: if it is shared, copy it first.
  const bool partial = (length % bt) != 0;
  const bool cow = partial && pool_.kv_block_refcount(seq(id).blocks.back()) > 1;
  const bool cow_sliding = partial && sliding_ != nullptr && seq(id).sliding.back() >= 0 &&
                           sliding_->kv_block_refcount(seq(id).sliding.back()) > 1;
  const size_t grow = need_blocks - seq(id).blocks.size();
  const size_t extra = grow + (cow ? 1 : 0);
  if (!make_free(static_cast<int32_t>(extra))) {
    return make_error(ErrorKind::kOutOfRange, "KV cache is full: " + std::to_string(extra) + " more blocks needed, " +
                                                  std::to_string(pool_.n_free()) + " free");
  }
  if (sliding_ != nullptr && sliding_->n_free() < static_cast<int32_t>(grow + (cow_sliding ? 1 : 0))) {
    return make_error(ErrorKind::kOutOfRange, "KV cache is full: the sliding-window layers' pool has " +
                                                  std::to_string(sliding_->n_free()) + " free blocks");
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
  if (cow_sliding) {
    HEARTH_ASSIGN(int32_t copy, sliding_->kv_block_alloc());
    if (Status st = sliding_->kv_block_copy(s.sliding.back(), copy); !st.ok()) {
      sliding_->kv_block_unref(copy);
      return st;
    }
    sliding_->kv_block_unref(s.sliding.back());
    s.sliding.back() = copy;
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
  if (sliding_ != nullptr) {
    while (s.sliding.size() < need_blocks) s.sliding.push_back(sliding_->kv_block_alloc().value());
  }
  s.length += n_tokens;
  return ok_status();
}

int32_t KvCache::seq_adopt_prefix(int32_t id, std::span<const int32_t> tokens, int32_t max_tokens) {
  if (!prefix_sharing_ || !seq_valid(id) || seq(id).length != 0 || max_tokens <= 0) return 0;
  const int32_t bt = block_tokens();
  const int32_t n = adoptable(prefix_.lookup(tokens), max_tokens);
  if (n <= 0) return 0;
  const std::vector<CachedBlock> blocks = prefix_.match(tokens.first(static_cast<size_t>((n + bt - 1) / bt * bt)));
  Sequence& s = seq(id);
  const auto n_blocks = static_cast<size_t>((n + bt - 1) / bt);
  // Sliding rows before the window of the next query are not taken (nor needed).
  const auto first_sliding = static_cast<size_t>(std::max(0, n - window_ + 1) / bt);
  for (size_t i = 0; i < n_blocks; ++i) {
    pool_.kv_block_ref(blocks[i].block);
    s.blocks.push_back(blocks[i].block);
    if (sliding_ == nullptr) continue;
    const int32_t sb = i >= first_sliding ? blocks[i].sliding : -1;
    if (sb >= 0) sliding_->kv_block_ref(sb);
    s.sliding.push_back(sb);
  }
  s.sliding_released = sliding_ != nullptr ? first_sliding : 0;
  s.length = n;
  return n;
}

int32_t KvCache::adoptable(const std::vector<CachedBlock>& blocks, int32_t max_tokens) const {
  const int32_t bt = block_tokens();
  const int32_t n = std::min(static_cast<int32_t>(blocks.size()) * bt, max_tokens);
  if (n <= 0 || sliding_ == nullptr) return std::max(0, n);
  auto held = [&](size_t b) { return blocks[b].sliding >= 0; };
  if (window_held(n, held)) return n;
  for (int32_t m = (n - 1) / bt * bt; m > 0; m -= bt) {
    if (window_held(m, held)) return m;
  }
  return 0;
}

void KvCache::seq_publish(int32_t id, std::span<const int32_t> tokens) {
  if (!prefix_sharing_ || !seq_valid(id)) return;
  Sequence& s = seq(id);
  const auto n = std::min(tokens.size(), static_cast<size_t>(s.length));
  prefix_.insert(tokens.first(n), s.blocks, s.sliding, s.hashes, pool_);
}

int32_t KvCache::cached_prefix(std::span<const int32_t> tokens) const {
  if (!prefix_sharing_) return 0;
  if (sliding_ == nullptr) return prefix_.peek(tokens);
  return adoptable(prefix_.lookup(tokens), static_cast<int32_t>(tokens.size()));
}

int32_t KvCache::trim_cache(size_t keep_bytes) { return trim_evictable(prefix_.n_evictable(pool_), keep_bytes); }

int32_t KvCache::trim_cache_if_over(size_t cap_bytes) {
  const int32_t evictable = prefix_.n_evictable(pool_);
  if (static_cast<size_t>(evictable) * pool_.block_bytes_with_mirror() <= cap_bytes) return 0;
  return trim_evictable(evictable, cap_bytes);
}

int32_t KvCache::trim_evictable(int32_t evictable, size_t keep_bytes) {
  const uint64_t released_before = pool_.stats().chunks_released_total;  // evicting may release too
  const size_t block = pool_.block_bytes_with_mirror();
  while (evictable > 0 && static_cast<size_t>(evictable) * block > keep_bytes) {
    if (!prefix_.evict_one(pool_, EvictOrder::kEmptyChunks)) break;
    ++evictions_total_;
    --evictable;
  }
  pool_.release_empty_chunks(0);
  if (sliding_ != nullptr) sliding_->release_empty_chunks(0);
  const auto released = static_cast<int32_t>(pool_.stats().chunks_released_total - released_before);
  if (released > 0) ++shrink_events_total_;
  return released;
}

int32_t KvCache::enforce_limit() {
  const uint64_t released_before = pool_.stats().chunks_released_total;
  if (sliding_ != nullptr) sliding_->release_empty_chunks(0);
  while (pool_.stats().committed_bytes > pool_.limit()) {
    if (pool_.release_empty_chunks(0) > 0) continue;
    if (!prefix_.evict_one(pool_, EvictOrder::kEmptyChunks)) break;
    ++evictions_total_;
  }
  const auto released = static_cast<int32_t>(pool_.stats().chunks_released_total - released_before);
  if (released > 0) ++shrink_events_total_;
  return released;
}

int32_t KvCache::seq_sliding_blocks(int32_t id) const {
  const std::vector<int32_t>& table = seqs_[static_cast<size_t>(id)].sliding;
  return static_cast<int32_t>(std::count_if(table.begin(), table.end(), [](int32_t b) { return b >= 0; }));
}

KvCacheStats KvCache::stats() const {
  KvCacheStats s;
  s.pool = pool_.stats();
  if (sliding_ != nullptr) s.sliding = sliding_->stats();
  s.blocks_cached = prefix_.n_blocks();
  s.blocks_evictable = prefix_.n_evictable(pool_);
  s.evictions_total = evictions_total_;
  s.shrink_events_total = shrink_events_total_;
  return s;
}

uint8_t* KvCache::k_block_at(int32_t layer, int32_t id, int32_t pos) {
  assert(pos >= 0 && pos < seq(id).length);
  const int32_t block = block_table(id, layer)[static_cast<size_t>(pos / block_tokens())];
  assert(block >= 0);
  return const_cast<uint8_t*>(k_block(layer, block));
}

uint8_t* KvCache::v_block_at(int32_t layer, int32_t id, int32_t pos) {
  assert(pos >= 0 && pos < seq(id).length);
  const int32_t block = block_table(id, layer)[static_cast<size_t>(pos / block_tokens())];
  assert(block >= 0);
  return const_cast<uint8_t*>(v_block(layer, block));
}

uint8_t* KvCache::k_row(int32_t layer, int32_t id, int32_t pos) {
  assert(!pool_.layout().by_head && pool_.layout().type != DType::kBF16);
  return k_block_at(layer, id, pos) + static_cast<size_t>(pos % block_tokens()) * pool_.k_row_bytes();
}

uint8_t* KvCache::v_row(int32_t layer, int32_t id, int32_t pos) {
  assert(!pool_.layout().by_head && pool_.layout().type != DType::kBF16);
  return v_block_at(layer, id, pos) + static_cast<size_t>(pos % block_tokens()) * pool_.v_row_bytes();
}

}  // namespace hearth::kv
