// Tests for the pool's mirror (the device KV of offloaded layers plugs in here): a mirror
// chunk is committed when the pool hands out a block of that chunk and never ahead, released
// with the pool's chunk, copies follow kv_block_copy (copy-on-write through KvCache too), a
// mirror that cannot commit fails the allocation with an error, and the stats count it; a pool
// whose first layers are offloaded keeps only the other layers' rows (none when all are).
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "kv/kv_block_pool.h"
#include "kv/kv_cache.h"

namespace hearth::kv {
namespace {

// Records what the pool asks of it; refuses commits past `capacity` chunks.
class RecordingMirror final : public KvChunkMirror {
 public:
  Status commit_chunk(int32_t chunk) override {
    if (static_cast<int32_t>(live.size()) >= capacity) return make_error(ErrorKind::kUnavailable, "mirror full");
    EXPECT_TRUE(live.insert(chunk).second) << "chunk " << chunk << " committed twice";
    ++commits;
    return ok_status();
  }
  void release_chunk(int32_t chunk) override { EXPECT_EQ(live.erase(chunk), 1u) << "chunk " << chunk << " not live"; }
  Status copy_block(int32_t src, int32_t dst) override {
    copies.emplace_back(src, dst);
    return ok_status();
  }
  size_t chunk_bytes() const override { return 1000; }

  std::set<int32_t> live;
  std::vector<std::pair<int32_t, int32_t>> copies;
  int32_t commits = 0;
  int32_t capacity = 1 << 30;
};

// 16 layers x 16 tokens x (1 KiB K + 1 KiB V) = 512 KiB a block: 4 blocks a chunk.
KvLayout chunky_layout() {
  KvLayout l;
  l.n_layers = 16;
  l.k_row_elems = 512;
  l.v_row_elems = 512;
  l.block_tokens = 16;
  return l;
}

TEST(KvMirror, CommitsOnHandOutReleasesWithThePoolAndCounts) {
  KvPoolOptions opts;
  opts.reserve_chunks = 1;
  auto pool = KvBlockPool::create(chunky_layout(), 32, opts);  // 8 chunks
  ASSERT_TRUE(pool.ok()) << pool.error().to_string();
  RecordingMirror m;
  ASSERT_TRUE(pool->attach_mirror(&m).ok());
  EXPECT_EQ(pool->stats().mirror_reserved_bytes, 8000u);
  EXPECT_EQ(pool->stats().mirror_committed_bytes, 0u);  // the CPU reserve chunk is not mirrored
  std::vector<int32_t> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(pool->kv_block_alloc().value());  // chunks 0, 1, 2
  EXPECT_EQ(m.live, (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(pool->stats().mirror_committed_bytes, 3000u);
  // Blocks in use cannot be mirrored after the fact.
  RecordingMirror late;
  EXPECT_EQ(pool->attach_mirror(&late).error().kind, ErrorKind::kInvalidArgument);
  ASSERT_TRUE(pool->kv_block_copy(blocks[0], blocks[9]).ok());
  EXPECT_EQ(m.copies, (std::vector<std::pair<int32_t, int32_t>>{{blocks[0], blocks[9]}}));
  for (int32_t b : blocks) pool->kv_block_unref(b);
  // The pool keeps one empty chunk (its low-water mark) and the mirror's rows with it.
  EXPECT_LE(m.live.size(), 1u);
  EXPECT_EQ(pool->stats().mirror_committed_bytes, m.live.size() * 1000);
  pool->release_empty_chunks(0);
  EXPECT_TRUE(m.live.empty());
  EXPECT_EQ(pool->stats().mirror_committed_bytes, 0u);
  EXPECT_GE(pool->stats().mirror_chunks_released_total, 3u);
  ASSERT_TRUE(pool->attach_mirror(nullptr).ok());
  EXPECT_EQ(pool->stats().mirror_reserved_bytes, 0u);
}

TEST(KvMirror, AMirrorThatCannotCommitFailsTheAllocationNotTheProcess) {
  auto cache = KvCache::create(chunky_layout(), 32);
  ASSERT_TRUE(cache.ok()) << cache.error().to_string();
  RecordingMirror m;
  m.capacity = 1;  // one chunk: 4 blocks, 64 tokens
  ASSERT_TRUE(cache->pool().attach_mirror(&m).ok());
  const int32_t a = cache->seq_create();
  ASSERT_TRUE(cache->seq_append(a, 40).ok());
  auto more = cache->seq_append(a, 40);  // needs a fifth block, in chunk 1
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.error().kind, ErrorKind::kOutOfRange);
  EXPECT_NE(more.error().message.find("device"), std::string::npos) << more.error().message;
  EXPECT_EQ(cache->seq_length(a), 40);
  EXPECT_EQ(cache->block_table(a).size(), 3u);  // the block the failed call took went back
  m.capacity = 2;
  // Copy-on-write of a shared partial block goes through the mirror.
  auto b = cache->seq_fork(a);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(cache->seq_append(*b, 1).ok());
  ASSERT_EQ(m.copies.size(), 1u);
  EXPECT_EQ(m.copies[0].first, cache->block_table(a).back());
  EXPECT_EQ(m.copies[0].second, cache->block_table(*b).back());
  cache->seq_free(a);
  cache->seq_free(*b);
  ASSERT_TRUE(cache->pool().attach_mirror(nullptr).ok());
}

// The offloaded layers' rows are the mirror's: the CPU block holds the rest, a chunk holds as
// many blocks as a pool of those layers would, and with every layer offloaded nothing is
// committed at all while blocks are still handed out (and mirrored).
TEST(KvMirror, OffloadedLayersKeepNoRowsInThePool) {
  KvPoolOptions opts;
  opts.background_commit = false;
  auto full = KvBlockPool::create(chunky_layout(), 64, opts);
  ASSERT_TRUE(full.ok()) << full.error().to_string();
  KvLayout split_layout = chunky_layout();
  split_layout.offloaded_layers = 12;  // 4 CPU layers: 128 KiB a block, 16 a chunk
  auto split = KvBlockPool::create(split_layout, 64, opts);
  ASSERT_TRUE(split.ok()) << split.error().to_string();
  EXPECT_EQ(split->block_bytes() * 4, full->block_bytes());
  EXPECT_EQ(split->blocks_per_chunk(), 4 * full->blocks_per_chunk());
  EXPECT_EQ(split->bytes_reserved() * 4, full->bytes_reserved());
  // The CPU layers' rows tile the chunk, layer by layer: layer 12's region (its K rows of the
  // chunk's 16 blocks, then their V rows) starts it, layer 15's V rows of its last block end it.
  const int32_t b = split->kv_block_alloc().value();
  ASSERT_EQ(b, 0);
  const size_t region = size_t{16} * 16 * 2 * 1024;
  EXPECT_EQ(split->k_block(12, b) + 4 * region, split->v_block(15, 15) + size_t{16} * split->v_row_bytes());
  EXPECT_EQ(split->k_block(13, b) - split->k_block(12, b), static_cast<ptrdiff_t>(region));
  EXPECT_EQ(split->v_block(12, b) - split->k_block(12, b), static_cast<ptrdiff_t>(region / 2));
  // The same 20 blocks in use commit a quarter of the memory (whole 2 MiB chunks: 2 vs 5).
  std::vector<int32_t> in_full, in_split = {b};
  for (int i = 0; i < 20; ++i) in_full.push_back(full->kv_block_alloc().value());
  for (int i = 1; i < 20; ++i) in_split.push_back(split->kv_block_alloc().value());
  EXPECT_EQ(full->stats().committed_bytes, size_t{5} << 21);
  EXPECT_EQ(split->stats().committed_bytes, size_t{2} << 21);

  KvLayout all_layout = chunky_layout();
  all_layout.offloaded_layers = 16;
  auto all = KvBlockPool::create(all_layout, 64, opts);
  ASSERT_TRUE(all.ok()) << all.error().to_string();
  RecordingMirror m;
  ASSERT_TRUE(all->attach_mirror(&m).ok());
  std::vector<int32_t> in_all;
  for (int i = 0; i < 20; ++i) in_all.push_back(all->kv_block_alloc().value());
  EXPECT_EQ(all->block_bytes(), 0u);
  EXPECT_EQ(all->stats().committed_bytes, 0u);
  EXPECT_EQ(all->stats().blocks_used, 20);
  EXPECT_EQ(all->blocks_per_chunk(), 16 * full->blocks_per_chunk());  // shaped like a one-layer pool
  EXPECT_EQ(m.live, (std::set<int32_t>{0}));
  for (int32_t x : in_all) all->kv_block_unref(x);
  all->release_empty_chunks(0);
  EXPECT_TRUE(m.live.empty());
  ASSERT_TRUE(all->attach_mirror(nullptr).ok());

  // A pool of fewer blocks than a chunk holds: the mirror's one chunk needs rows for those only.
  auto small = KvBlockPool::create(all_layout, 20, opts);
  ASSERT_TRUE(small.ok()) << small.error().to_string();
  EXPECT_EQ(small->chunk_slots(), 20);
  RecordingMirror sm;
  ASSERT_TRUE(small->attach_mirror(&sm).ok());
  EXPECT_EQ(small->block_bytes_with_mirror(), 1000u / 20);
  EXPECT_EQ(small->stats().mirror_block_bytes, 1000u / 20);
  ASSERT_TRUE(small->attach_mirror(nullptr).ok());

  KvLayout bad = chunky_layout();
  bad.offloaded_layers = 17;
  EXPECT_EQ(KvBlockPool::create(bad, 64, opts).error().kind, ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace hearth::kv
