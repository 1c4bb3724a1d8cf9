// The cross-request prefix cache: chained block hashes, adoption, leaf-first eviction (see
// prefix_cache.h).
#include "kv/prefix_cache.h"

#include <algorithm>
#include <cassert>

namespace hearth::kv {
namespace {

// splitmix64's finalizer: every input bit affects every output bit.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t chain_hash(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent ^ 0x6b76636861696eULL);
  for (int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return mix(h ^ tokens.size());
}

int32_t PrefixCache::peek(std::span<const int32_t> tokens) const {
  const auto bt = static_cast<size_t>(block_tokens_);
  uint64_t parent = seed_;
  size_t n = 0;
  while ((n + 1) * bt <= tokens.size()) {
    auto block = tokens.subspan(n * bt, bt);
    const uint64_t h = chain_hash(parent, block);
    auto it = entries_.find(h);
    if (it == entries_.end() || it->second.parent != parent || !std::equal(block.begin(), block.end(), it->second.tokens.begin())) break;
    parent = h;
    ++n;
  }
  return static_cast<int32_t>(n * bt);
}

std::vector<CachedBlock> PrefixCache::lookup(std::span<const int32_t> tokens) const {
  const auto bt = static_cast<size_t>(block_tokens_);
  std::vector<CachedBlock> blocks;
  uint64_t parent = seed_;
  while ((blocks.size() + 1) * bt <= tokens.size()) {
    auto block = tokens.subspan(blocks.size() * bt, bt);
    const uint64_t h = chain_hash(parent, block);
    auto it = entries_.find(h);
    if (it == entries_.end() || it->second.parent != parent || !std::equal(block.begin(), block.end(), it->second.tokens.begin())) break;
    blocks.push_back({it->second.block, it->second.sliding});
    parent = h;
  }
  return blocks;
}

std::vector<CachedBlock> PrefixCache::match(std::span<const int32_t> tokens) {
  std::vector<CachedBlock> blocks = lookup(tokens);
  const auto bt = static_cast<size_t>(block_tokens_);
  uint64_t parent = seed_;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const uint64_t h = chain_hash(parent, tokens.subspan(i * bt, bt));
    touch(h, entries_.at(h));
    parent = h;
  }
  return blocks;
}

void PrefixCache::touch(uint64_t hash, Entry& e) {
  const uint64_t now = ++clock_;
  if (e.n_children == 0) {
    leaves_.erase({e.last_used, hash});
    leaves_.insert({now, hash});
  }
  e.last_used = now;
}

void PrefixCache::insert(std::span<const int32_t> tokens, std::span<const int32_t> blocks,
                         std::span<const int32_t> sliding, std::vector<uint64_t>& hashes, KvBlockPool& pool) {
  auto sliding_of = [&](size_t i) { return sliding_pool_ != nullptr && i < sliding.size() ? sliding[i] : -1; };
  const auto bt = static_cast<size_t>(block_tokens_);
  const size_t full = std::min(tokens.size() / bt, blocks.size());
  if (hashes.size() > full) hashes.resize(full);
  uint64_t parent = seed_;
  for (size_t i = 0; i < full; ++i) {
    auto block_tokens = tokens.subspan(i * bt, bt);
    if (i == hashes.size()) hashes.push_back(chain_hash(parent, block_tokens));
    const uint64_t h = hashes[i];
    auto it = entries_.find(h);
    if (it != entries_.end()) {
      if (it->second.parent != parent || !std::equal(block_tokens.begin(), block_tokens.end(), it->second.tokens.begin())) {
        return;  // a collision: this chain cannot be named past here
      }
      touch(h, it->second);
      // Named already with another block (two sequences evaluated the same prefix at once): a
      // child is cached only below its own sequence's block, so whoever holds a cached block
      // holds its whole chain and a block the cache alone holds is always evictable.
      if (it->second.block != blocks[i]) return;
      if (it->second.sliding < 0 && sliding_of(i) >= 0) {  // the same rows, still held by this sequence
        it->second.sliding = sliding_of(i);
        sliding_pool_->kv_block_ref(it->second.sliding);
      }
      parent = h;
      continue;
    }
    Entry e;
    e.parent = parent;
    e.block = blocks[i];
    e.sliding = sliding_of(i);
    if (e.sliding >= 0) sliding_pool_->kv_block_ref(e.sliding);
    e.tokens.assign(block_tokens.begin(), block_tokens.end());
    e.last_used = ++clock_;
    pool.kv_block_ref(e.block);
    if (!is_root(parent)) {
      Entry& p = entries_.at(parent);  // present: every earlier block of this chain was named above
      if (p.n_children++ == 0) leaves_.erase({p.last_used, parent});
    }
    leaves_.insert({e.last_used, h});
    entries_.emplace(h, std::move(e));
    parent = h;
  }
}

void PrefixCache::remove(uint64_t hash, KvBlockPool& pool) {
  auto it = entries_.find(hash);
  assert(it != entries_.end() && it->second.n_children == 0);
  leaves_.erase({it->second.last_used, hash});
  const uint64_t parent = it->second.parent;
  const int32_t block = it->second.block;
  if (it->second.sliding >= 0) sliding_pool_->kv_block_unref(it->second.sliding);
  entries_.erase(it);
  if (!is_root(parent)) {
    auto p = entries_.find(parent);
    if (p != entries_.end() && --p->second.n_children == 0) leaves_.insert({p->second.last_used, parent});
  }
  pool.kv_block_unref(block);
}

std::optional<int32_t> PrefixCache::evict_one(KvBlockPool& pool, EvictOrder order) {
  // For kEmptyChunks: per chunk, the used blocks that evicting cannot free (held by a
  // sequence). A leaf in a chunk with none of those is on the way to an empty chunk; among
  // such chunks the fullest-of-cache one is not preferred over a nearly empty one.
  std::unordered_map<int32_t, int32_t> evictable_in_chunk;
  if (order == EvictOrder::kEmptyChunks) {
    for (const auto& [hash, e] : entries_) {
      if (pool.kv_block_refcount(e.block) == 1) ++evictable_in_chunk[pool.chunk_of(e.block)];
    }
  }
  std::optional<uint64_t> victim;
  std::pair<int32_t, int32_t> victim_score;  // (pinned blocks, used blocks) of its chunk
  for (const auto& [stamp, hash] : leaves_) {
    const Entry& e = entries_.at(hash);
    if (pool.kv_block_refcount(e.block) != 1) continue;  // a sequence holds it too
    if (order == EvictOrder::kLeastRecentlyUsed) {
      victim = hash;
      break;
    }
    const int32_t chunk = pool.chunk_of(e.block);
    const int32_t used = pool.chunk_used(chunk);
    const std::pair<int32_t, int32_t> score{used - evictable_in_chunk[chunk], used};
    if (!victim || score < victim_score) {  // leaves_ is in LRU order: ties keep the coldest
      victim = hash;
      victim_score = score;
    }
  }
  if (!victim) return std::nullopt;
  const int32_t block = entries_.at(*victim).block;
  remove(*victim, pool);
  return block;
}

int32_t PrefixCache::n_evictable(const KvBlockPool& pool) const {
  int32_t n = 0;
  for (const auto& [hash, e] : entries_) n += pool.kv_block_refcount(e.block) == 1 ? 1 : 0;
  return n;
}

void PrefixCache::clear(KvBlockPool& pool) {
  for (auto& [hash, e] : entries_) {
    pool.kv_block_unref(e.block);
    if (e.sliding >= 0) sliding_pool_->kv_block_unref(e.sliding);
  }
  entries_.clear();
  leaves_.clear();
}

}  // namespace hearth::kv
