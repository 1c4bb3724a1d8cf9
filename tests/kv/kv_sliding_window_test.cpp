// Tests for sliding-window layers in their own pool: out-of-window blocks are released as a
// sequence grows (memory stays flat), truncation and prefix adoption stop where the window is
// still held, and the cache's references on sliding blocks go when its entries are evicted.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "kv/kv_cache.h"

namespace hearth::kv {
namespace {

// Layers 0 and 2 slide, layer 1 is global.
KvCacheOptions sliding_options(int32_t window) {
  KvCacheOptions o;
  o.sliding.window = window;
  o.sliding.layers = {true, false, true};
  o.pool.background_commit = false;
  return o;
}

KvLayout layout(int32_t row_elems, int32_t block_tokens) {
  KvLayout l;
  l.n_layers = 3;
  l.k_row_elems = row_elems;
  l.v_row_elems = row_elems;
  l.block_tokens = block_tokens;
  l.type = DType::kF32;
  return l;
}

void write_token(KvCache& kv, int32_t seq, int32_t pos, float value) {
  for (int32_t layer = 0; layer < 3; ++layer) {
    const float k = value + static_cast<float>(layer), v = -k;
    std::memcpy(kv.k_row(layer, seq, pos), &k, sizeof k);
    std::memcpy(kv.v_row(layer, seq, pos), &v, sizeof v);
  }
}

float read_k(KvCache& kv, int32_t seq, int32_t pos, int32_t layer) {
  float x;
  std::memcpy(&x, kv.k_row(layer, seq, pos), sizeof x);
  return x;
}

// Appends tokens [length, length + n) one at a time (decode), writing value = position.
void decode(KvCache& kv, int32_t seq, int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    const int32_t pos = kv.seq_length(seq);
    ASSERT_TRUE(kv.seq_append(seq, 1).ok());
    write_token(kv, seq, pos, static_cast<float>(pos));
  }
}

TEST(KvSlidingWindow, CommittedSlidingBytesStayFlatAsTheSequenceGrows) {
  // 1 MiB per sliding block (2 layers × 16 tokens × 2 × 16 KiB): two blocks per 2 MiB chunk.
  auto kv = KvCache::create(layout(4096, 16), 64, sliding_options(32));
  ASSERT_TRUE(kv.ok()) << kv.error().to_string();
  ASSERT_TRUE(kv->has_sliding_pool());
  EXPECT_EQ(kv->sliding_pool()->layout().n_layers, 2);
  EXPECT_EQ(kv->pool().layout().n_layers, 1);
  const int32_t s = kv->seq_create();
  decode(*kv, s, 96);
  const KvCacheStats early = kv->stats();
  decode(*kv, s, 1024 - 96);
  const KvCacheStats late = kv->stats();
  // window + one block: at most 3 blocks of 16 tokens hold the sliding layers' last 32 keys.
  EXPECT_LE(late.sliding.blocks_used, 3);
  EXPECT_EQ(late.sliding.committed_bytes, early.sliding.committed_bytes);
  EXPECT_LE(late.sliding.committed_bytes, size_t{3} * kKvChunkBytes);
  // The global layer keeps everything.
  EXPECT_EQ(late.pool.blocks_used, 64);
  EXPECT_GT(late.pool.committed_bytes, 4 * early.pool.committed_bytes);
  // Rows inside the window (and every global row) read back.
  for (int32_t p = 1024 - 32; p < 1024; ++p) EXPECT_EQ(read_k(*kv, s, p, 2), static_cast<float>(p) + 2);
  EXPECT_EQ(read_k(*kv, s, 3, 1), 4.0f);
  EXPECT_LT(kv->block_table(s, 0)[0], 0);   // released
  EXPECT_GE(kv->block_table(s, 1)[0], 0);   // global
  kv->seq_free(s);
  EXPECT_EQ(kv->stats().sliding.blocks_used, 0);
}

TEST(KvSlidingWindow, ReleasedBlocksReadAsZeros) {
  auto kv = KvCache::create(layout(4, 4), 16, sliding_options(8));
  ASSERT_TRUE(kv.ok());
  const int32_t s = kv->seq_create();
  decode(*kv, s, 20);
  const int32_t released = kv->block_table(s, 0)[0];
  ASSERT_LT(released, 0);
  const auto* k = reinterpret_cast<const float*>(kv->k_block(0, released));
  for (int32_t i = 0; i < 16; ++i) EXPECT_EQ(k[i], 0.0f);
}

TEST(KvSlidingWindow, TruncationStopsWhereTheWindowIsStillHeld) {
  auto kv = KvCache::create(layout(4, 4), 32, sliding_options(8));
  ASSERT_TRUE(kv.ok());
  const int32_t s = kv->seq_create();
  decode(*kv, s, 40);
  // Before the append at 39, blocks wholly before 39 − 8 + 1 = 32 went: 0..7 released.
  EXPECT_EQ(kv->seq_resumable(s, 40), 40);
  EXPECT_EQ(kv->seq_resumable(s, 39), 39);
  // Length 39 needs keys 32..38 (blocks 8, 9): held. Length 38 needs 31..37: block 7 is gone,
  // and so is every shorter length's window, down to the start.
  EXPECT_EQ(kv->seq_resumable(s, 38), 0);
  const Status bad = kv->seq_truncate(s, 20);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("sliding-window"), std::string::npos);
  EXPECT_EQ(kv->seq_length(s), 40);  // unchanged
  ASSERT_TRUE(kv->seq_truncate(s, 39).ok());
  decode(*kv, s, 5);
  for (int32_t p = 44 - 8; p < 44; ++p) EXPECT_EQ(read_k(*kv, s, p, 0), static_cast<float>(p));
  ASSERT_TRUE(kv->seq_truncate(s, 0).ok());
  EXPECT_EQ(kv->stats().sliding.blocks_used, 0);
}

TEST(KvSlidingWindow, AdoptionNeedsTheWindowAtTheEndOfThePrefix) {
  auto kv = KvCache::create(layout(4, 4), 64, sliding_options(8));
  ASSERT_TRUE(kv.ok());
  std::vector<int32_t> tokens(64);
  std::iota(tokens.begin(), tokens.end(), 100);
  const int32_t a = kv->seq_create();
  decode(*kv, a, 64);
  kv->seq_publish(a, tokens);  // holds sliding blocks 14 and 15 only

  // The whole conversation plus one token: its window (keys 57..63) is cached.
  std::vector<int32_t> next = tokens;
  next.push_back(7);
  EXPECT_EQ(kv->cached_prefix(next), 64);
  const int32_t b = kv->seq_create();
  EXPECT_EQ(kv->seq_adopt_prefix(b, next, 64), 64);
  for (int32_t p = 56; p < 64; ++p) EXPECT_EQ(read_k(*kv, b, p, 2), static_cast<float>(p) + 2);
  EXPECT_EQ(kv->block_table(b, 0)[13], -1);  // outside b's window: not taken
  decode(*kv, b, 3);
  EXPECT_EQ(read_k(*kv, b, 66, 0), 66.0f);
  EXPECT_EQ(read_k(*kv, a, 63, 0), 63.0f);  // a's rows are its own (b wrote into new blocks)

  // A prompt sharing only the first 24 tokens: the match is 6 blocks, but the window at each
  // of their ends was released before a published, so nothing can be adopted.
  std::vector<int32_t> other(tokens.begin(), tokens.begin() + 24);
  other.push_back(1);
  EXPECT_EQ(kv->cached_prefix(other), 0);
  const int32_t c = kv->seq_create();
  EXPECT_EQ(kv->seq_adopt_prefix(c, other, 24), 0);

  kv->seq_free(c);

  // A fork that still holds a window its source released fills the entries' holes when it
  // publishes (same main blocks, so the pairing of main and sliding blocks holds).
  std::vector<int32_t> tokens2(40);
  std::iota(tokens2.begin(), tokens2.end(), 500);
  const int32_t x = kv->seq_create();
  decode(*kv, x, 24);
  auto forked = kv->seq_fork(x);
  ASSERT_TRUE(forked.ok());
  const int32_t y = *forked;
  decode(*kv, x, 16);          // x releases sliding blocks 0..7; y still holds 4 and 5
  kv->seq_publish(x, tokens2);
  std::vector<int32_t> prompt2(tokens2.begin(), tokens2.begin() + 24);
  prompt2.push_back(1);
  EXPECT_EQ(kv->cached_prefix(prompt2), 0);
  kv->seq_publish(y, std::span<const int32_t>(tokens2).first(24));
  EXPECT_EQ(kv->cached_prefix(prompt2), 24);
  kv->seq_free(x);
  kv->seq_free(y);

  // Evicting everything gives the cache's sliding blocks back.
  kv->seq_free(a);
  kv->seq_free(b);
  kv->trim_cache(0);
  EXPECT_EQ(kv->stats().blocks_cached, 0);
  EXPECT_EQ(kv->stats().sliding.blocks_used, 0);
  EXPECT_EQ(kv->stats().pool.blocks_used, 0);
}

TEST(KvSlidingWindow, ForkCopiesSharedSlidingBlocksOnWrite) {
  auto kv = KvCache::create(layout(4, 4), 32, sliding_options(8));
  ASSERT_TRUE(kv.ok());
  const int32_t a = kv->seq_create();
  decode(*kv, a, 18);
  auto fork = kv->seq_fork(a);
  ASSERT_TRUE(fork.ok());
  const int32_t b = *fork;
  ASSERT_TRUE(kv->seq_append(b, 1).ok());
  write_token(*kv, b, 18, 1000.0f);
  ASSERT_TRUE(kv->seq_append(a, 1).ok());
  write_token(*kv, a, 18, 2000.0f);
  EXPECT_EQ(read_k(*kv, b, 18, 0), 1000.0f);
  EXPECT_EQ(read_k(*kv, a, 18, 0), 2000.0f);
  EXPECT_EQ(read_k(*kv, b, 17, 2), 19.0f);
  EXPECT_NE(kv->block_table(a, 0)[4], kv->block_table(b, 0)[4]);
}

TEST(KvSlidingWindow, AllOrNoSlidingLayersUseOnePoolAndBadFlagsAreErrors) {
  KvCacheOptions all = sliding_options(8);
  all.sliding.layers = {true, true, true};
  auto one = KvCache::create(layout(4, 4), 8, all);
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->has_sliding_pool());
  KvCacheOptions bad = sliding_options(8);
  bad.sliding.layers = {true};
  auto err = KvCache::create(layout(4, 4), 8, bad);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().message.find("one entry per layer"), std::string::npos);
}

}  // namespace
}  // namespace hearth::kv
