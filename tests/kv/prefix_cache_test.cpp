// Tests for the cross-request prefix cache: chained hashes, adoption of the longest cached
// prefix with copy-on-write where a prompt diverges, leaf-first LRU eviction, chunk-emptying
// eviction, trimming to a byte cap and limit enforcement through the KV cache.
#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/kv_cache.h"

namespace hearth::kv {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// 4 tokens a block; 16 layers x 4 tokens x 32 KiB = 2 MiB / 4: 4 blocks a chunk.
KvLayout layout() {
  KvLayout l;
  l.n_layers = 16;
  l.k_row_elems = 2048;
  l.v_row_elems = 2048;
  l.block_tokens = 4;
  l.type = DType::kF16;
  return l;
}

KvCache make_cache(int32_t n_blocks, bool sharing = true) {
  KvCacheOptions o;
  o.prefix_sharing = sharing;
  o.model_seed = 42;
  o.pool.background_commit = false;
  o.pool.reserve_chunks = 0;
  auto kv = KvCache::create(layout(), n_blocks, o);
  EXPECT_TRUE(kv.ok());
  return std::move(kv).value();
}

std::vector<int32_t> iota(int32_t n, int32_t from) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

// A sequence holding `tokens` (K rows stamped with the token id), published.
int32_t evaluated(KvCache& kv, const std::vector<int32_t>& tokens) {
  const int32_t s = kv.seq_create();
  EXPECT_TRUE(kv.seq_append(s, static_cast<int32_t>(tokens.size())).ok());
  for (size_t i = 0; i < tokens.size(); ++i) kv.k_row(0, s, static_cast<int32_t>(i))[0] = static_cast<uint8_t>(tokens[i]);
  kv.seq_publish(s, tokens);
  return s;
}

TEST(PrefixHash, ChainsParentAndTokens) {
  const std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 4, 3};
  EXPECT_EQ(chain_hash(7, a), chain_hash(7, a));
  EXPECT_NE(chain_hash(7, a), chain_hash(8, a));  // another model or another prefix
  EXPECT_NE(chain_hash(7, a), chain_hash(7, b));  // order matters
  EXPECT_NE(chain_hash(7, std::vector<int32_t>{0}), chain_hash(7, std::vector<int32_t>{0, 0}));
}

TEST(PrefixCache, AdoptsTheLongestCachedPrefixOfWholeBlocks) {
  KvCache kv = make_cache(32);
  const std::vector<int32_t> system = iota(10, 100);  // 2 full blocks + 2 tokens
  const int32_t first = evaluated(kv, system);
  EXPECT_EQ(kv.stats().blocks_cached, 2);
  kv.seq_free(first);  // the cache keeps the full blocks
  EXPECT_EQ(kv.pool().n_used(), 2);

  std::vector<int32_t> prompt = system;
  prompt.insert(prompt.end(), {7, 7, 7});
  EXPECT_EQ(kv.cached_prefix(prompt), 8);
  const int32_t second = kv.seq_create();
  EXPECT_EQ(kv.seq_adopt_prefix(second, prompt, static_cast<int32_t>(prompt.size()) - 1), 8);
  EXPECT_EQ(kv.seq_length(second), 8);
  EXPECT_EQ(kv.k_row(0, second, 5)[0], 105);  // the K/V written by the first sequence
  EXPECT_EQ(kv.pool().n_used(), 2);           // stored once

  // Another model's seed (or a different first block) matches nothing.
  std::vector<int32_t> other = prompt;
  other[0] = 1;
  EXPECT_EQ(kv.cached_prefix(other), 0);
  // Sharing off: nothing is adopted or cached.
  KvCache off = make_cache(8, false);
  const int32_t s = evaluated(off, system);
  EXPECT_EQ(off.stats().blocks_cached, 0);
  EXPECT_EQ(off.seq_adopt_prefix(off.seq_create(), system, 9), 0);
  off.seq_free(s);
}

TEST(PrefixCache, AWriteIntoAnAdoptedBlockCopiesIt) {
  KvCache kv = make_cache(32);
  const std::vector<int32_t> tokens = iota(8, 10);
  kv.seq_free(evaluated(kv, tokens));
  const int32_t s = kv.seq_create();
  // The whole prompt is cached, but one token must be evaluated: 7 adopted, the last block
  // shared and partly overwritten.
  ASSERT_EQ(kv.seq_adopt_prefix(s, tokens, 7), 7);
  const int32_t shared_block = kv.block_table(s)[1];
  ASSERT_TRUE(kv.seq_append(s, 1).ok());
  kv.k_row(0, s, 7)[0] = 99;
  EXPECT_NE(kv.block_table(s)[1], shared_block);
  EXPECT_EQ(kv.k_row(0, s, 6)[0], 16);  // copied
  const int32_t again = kv.seq_create();
  ASSERT_EQ(kv.seq_adopt_prefix(again, tokens, 8), 8);
  EXPECT_EQ(kv.k_row(0, again, 7)[0], 17);  // the cached block is untouched
}

TEST(PrefixCache, EvictsLeastRecentlyUsedLeavesFirst) {
  KvCache kv = make_cache(32);
  // Chain A -> B -> C, then A -> D: the second sequence adopts A and adds D (used last).
  const std::vector<int32_t> abc = iota(12, 0);
  std::vector<int32_t> ad = iota(4, 0);
  for (int32_t t : iota(4, 50)) ad.push_back(t);
  const int32_t s1 = evaluated(kv, abc);
  const int32_t s2 = kv.seq_create();
  ASSERT_EQ(kv.seq_adopt_prefix(s2, ad, 4), 4);
  ASSERT_TRUE(kv.seq_append(s2, 4).ok());
  kv.seq_publish(s2, ad);
  EXPECT_EQ(kv.stats().blocks_cached, 4);
  EXPECT_EQ(kv.pool().n_used(), 4);  // A is stored once
  // While sequences hold the blocks nothing can be evicted.
  EXPECT_EQ(kv.stats().blocks_evictable, 0);
  kv.seq_free(s1);
  kv.seq_free(s2);
  EXPECT_EQ(kv.stats().blocks_evictable, 4);
  // Pool pressure evicts one block at a time, coldest leaf first: C, then B (a leaf now and
  // older than D), then D, and the root A last.
  const int32_t hog = kv.seq_create();
  ASSERT_TRUE(kv.seq_append(hog, 29 * 4).ok());
  EXPECT_EQ(kv.cached_prefix(abc), 8);
  EXPECT_EQ(kv.cached_prefix(ad), 8);
  ASSERT_TRUE(kv.seq_append(hog, 4).ok());
  EXPECT_EQ(kv.cached_prefix(abc), 4);
  EXPECT_EQ(kv.cached_prefix(ad), 8);
  ASSERT_TRUE(kv.seq_append(hog, 4).ok());
  EXPECT_EQ(kv.cached_prefix(ad), 4);
  ASSERT_TRUE(kv.seq_append(hog, 4).ok());
  EXPECT_EQ(kv.cached_prefix(ad), 0);
  EXPECT_EQ(kv.stats().evictions_total, 4u);
  EXPECT_FALSE(kv.seq_append(hog, 4).ok());  // nothing left to evict: a clean error
  EXPECT_EQ(kv.seq_length(hog), 32 * 4);
}

TEST(PrefixCache, MatchingMakesAChainRecentlyUsed) {
  KvCache kv = make_cache(32);
  const std::vector<int32_t> one = iota(4, 0), two = iota(4, 10);
  kv.seq_free(evaluated(kv, one));
  kv.seq_free(evaluated(kv, two));
  EXPECT_EQ(kv.cached_prefix(one), 4);
  const int32_t s = kv.seq_create();
  ASSERT_EQ(kv.seq_adopt_prefix(s, one, 4), 4);  // touches `one`
  kv.seq_free(s);
  ASSERT_TRUE(kv.seq_append(kv.seq_create(), 31 * 4).ok());  // 31 blocks: one cached block must go
  EXPECT_EQ(kv.cached_prefix(one), 4);
  EXPECT_EQ(kv.cached_prefix(two), 0);
  EXPECT_EQ(kv.stats().evictions_total, 1u);
}

TEST(PrefixCache, TrimEvictsTheBlocksThatEmptyWholeChunks) {
  KvCache kv = make_cache(16);  // 4 chunks of 4 blocks
  // Chunk 0: a running sequence (3 blocks) and one cached block; chunk 1: 4 cached blocks.
  const int32_t running = kv.seq_create();
  ASSERT_TRUE(kv.seq_append(running, 12).ok());
  const std::vector<int32_t> p1 = iota(4, 100);
  const std::vector<int32_t> p2 = iota(16, 200);
  kv.seq_free(evaluated(kv, p1));
  kv.seq_free(evaluated(kv, p2));
  EXPECT_EQ(kv.stats().pool.committed_bytes, 4 * kMiB);
  // Keep one block: the four in chunk 1 go (chunk 1 empties), the lone one in chunk 0 stays.
  const int32_t released = kv.trim_cache(kv.pool().block_bytes());
  EXPECT_EQ(released, 1);
  EXPECT_EQ(kv.cached_prefix(p1), 4);
  EXPECT_EQ(kv.cached_prefix(p2), 0);
  EXPECT_EQ(kv.stats().pool.committed_bytes, 2 * kMiB);
  EXPECT_EQ(kv.stats().shrink_events_total, 1u);
  EXPECT_EQ(kv.seq_length(running), 12);  // a running sequence never loses anything
  EXPECT_EQ(kv.trim_cache(0), 0);        // chunk 0 still holds the running sequence
  EXPECT_EQ(kv.cached_prefix(p1), 0);
}

// The engine's trim after each finished request: nothing at all while the evictable cached
// blocks fit the cap (not even an empty chunk goes back), the same trim as trim_cache beyond it.
TEST(PrefixCache, TrimIfOverTouchesNothingUnderTheCapAndTrimsOverIt) {
  KvCacheOptions o;
  o.model_seed = 42;
  o.pool.background_commit = false;
  o.pool.reserve_chunks = 1;  // one empty chunk stays committed after a free
  auto made = KvCache::create(layout(), 16, o);  // 4 chunks of 4 blocks
  ASSERT_TRUE(made.ok());
  KvCache kv = std::move(made).value();
  const std::vector<int32_t> p1 = iota(8, 100);
  kv.seq_free(evaluated(kv, p1));  // chunk 0: 2 cached blocks
  const int32_t scratch = kv.seq_create();
  ASSERT_TRUE(kv.seq_append(scratch, 16).ok());  // 4 blocks: the rest of chunk 0, half of chunk 1
  kv.seq_free(scratch);                          // unpublished: chunk 1 is empty, kept as the reserve
  EXPECT_EQ(kv.stats().pool.committed_bytes, 4 * kMiB);
  EXPECT_EQ(kv.stats().blocks_evictable, 2);
  EXPECT_EQ(kv.trim_cache_if_over(2 * kv.pool().block_bytes()), 0);
  EXPECT_EQ(kv.stats().pool.committed_bytes, 4 * kMiB);  // under the cap even the empty chunk stays
  EXPECT_EQ(kv.stats().evictions_total, 0u);
  EXPECT_EQ(kv.cached_prefix(p1), 8);
  // One block over the cap: the cache keeps one block and the empty chunk goes back.
  EXPECT_EQ(kv.trim_cache_if_over(kv.pool().block_bytes()), 1);
  EXPECT_EQ(kv.stats().blocks_evictable, 1);
  EXPECT_EQ(kv.stats().evictions_total, 1u);
  EXPECT_EQ(kv.cached_prefix(p1), 4);
  EXPECT_EQ(kv.stats().pool.committed_bytes, 2 * kMiB);
}

TEST(PrefixCache, LoweringTheLimitEvictsCachedBlocksAndKeepsRunningOnes) {
  KvCache kv = make_cache(16);
  const int32_t running = kv.seq_create();
  ASSERT_TRUE(kv.seq_append(running, 20).ok());  // 5 blocks: chunks 0 and 1
  kv.seq_free(evaluated(kv, iota(24, 300)));      // 6 cached blocks: chunks 1 and 2
  EXPECT_EQ(kv.stats().pool.committed_bytes, 6 * kMiB);
  kv.pool().set_limit(2 * kMiB);
  kv.enforce_limit();
  // Everything cached is gone; the running sequence's 4 MiB stay, over the limit.
  EXPECT_EQ(kv.stats().blocks_cached, 0);
  EXPECT_EQ(kv.stats().pool.committed_bytes, 4 * kMiB);
  EXPECT_EQ(kv.seq_length(running), 20);
  EXPECT_FALSE(kv.pool().admits_blocks(1));
  kv.seq_free(running);
  EXPECT_TRUE(kv.pool().admits_blocks(4));
  EXPECT_FALSE(kv.pool().admits_blocks(5));
}

}  // namespace
}  // namespace hearth::kv
