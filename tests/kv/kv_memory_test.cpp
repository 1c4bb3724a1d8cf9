// Tests for elastic KV memory: reservation costs no resident memory, committed chunks show up
// in this process's RSS and released ones really leave it (measured from /proc/self/status),
// allocation packs blocks into the lowest chunks, empty chunks go back above the low-water
// mark, and the byte limit closes admission without taking blocks away.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "kv/kv_block_pool.h"
#include "kv/kv_memory.h"

namespace hearth::kv {
namespace {

// Anonymous resident memory of this process in bytes (RssAnon in /proc/self/status).
size_t rss_anon() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
  }
  ADD_FAILURE() << "no RssAnon in /proc/self/status";
  return 0;
}

constexpr size_t kMiB = size_t{1} << 20;

// Resident memory that ASan adds for memory the test writes and the pool cannot give back: its
// shadow, one byte per 8 written (a test writing 64 MiB ended 4.3 MiB over its bare tolerance
// under ASan on Linux 6.18, and within it without ASan).
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kShadowPerByteWritten = 8;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr size_t kShadowPerByteWritten = 8;
#else
constexpr size_t kShadowPerByteWritten = 0;
#endif
#else
constexpr size_t kShadowPerByteWritten = 0;
#endif
size_t shadow_of(size_t written) { return kShadowPerByteWritten == 0 ? 0 : written / kShadowPerByteWritten; }

// 16 layers x 16 tokens x (1 KiB K + 1 KiB V) = 512 KiB a block: 4 blocks a chunk.
KvLayout chunky_layout() {
  KvLayout l;
  l.n_layers = 16;
  l.k_row_elems = 512;
  l.v_row_elems = 512;
  l.block_tokens = 16;
  l.type = DType::kF16;
  return l;
}

// Every row of the block: each layer's K rows and V rows (two runs a layer).
void fill_block(KvBlockPool& pool, int32_t block, uint8_t value) {
  const size_t bt = static_cast<size_t>(pool.layout().block_tokens);
  for (int32_t layer = pool.layout().offloaded_layers; layer < pool.layout().n_layers; ++layer) {
    std::memset(pool.k_block(layer, block), value, bt * pool.k_row_bytes());
    std::memset(pool.v_block(layer, block), value, bt * pool.v_row_bytes());
  }
}

TEST(KvMemory, ReservingCostsNothingAndReleasedChunksLeaveRss) {
  const size_t before = rss_anon();
  auto mem = CpuKvMemory::reserve(64 * kMiB);
  ASSERT_TRUE(mem.ok()) << mem.error().to_string();
  EXPECT_LT(rss_anon(), before + 4 * kMiB);
  ASSERT_TRUE((*mem)->commit(0, 32 * kMiB).ok());
  EXPECT_GE(rss_anon(), before + 30 * kMiB);
  (*mem)->base()[5 * kMiB] = 7;
  (*mem)->release(0, 32 * kMiB);
  EXPECT_LT(rss_anon(), before + 6 * kMiB);
  EXPECT_EQ((*mem)->base()[5 * kMiB], 0);  // released memory reads back as zeros
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*mem)->base()) % kKvChunkBytes, 0u);
}

TEST(KvBlockPool, CommitsChunksAsBlocksAreHandedOutAndReleasesThemWhenEmpty) {
  KvPoolOptions opts;
  opts.reserve_chunks = 1;
  auto pool = KvBlockPool::create(chunky_layout(), 256, opts);  // 64 chunks, 128 MiB reserved
  ASSERT_TRUE(pool.ok()) << pool.error().to_string();
  EXPECT_EQ(pool->blocks_per_chunk(), 4);
  EXPECT_EQ(pool->bytes_reserved(), 128 * kMiB);
  const size_t idle = rss_anon();
  std::vector<int32_t> blocks;
  for (int i = 0; i < 128; ++i) {  // 64 MiB
    auto b = pool->kv_block_alloc();
    ASSERT_TRUE(b.ok());
    fill_block(*pool, *b, 0x5a);
    blocks.push_back(*b);
  }
  EXPECT_GE(rss_anon(), idle + 60 * kMiB);
  KvPoolStats s = pool->stats();
  EXPECT_EQ(s.used_bytes, 64 * kMiB);
  EXPECT_GE(s.committed_bytes, 64 * kMiB);
  EXPECT_LE(s.committed_bytes, 68 * kMiB);  // at most the reserve chunk ahead
  for (int32_t b : blocks) pool->kv_block_unref(b);
  // The chunk committed ahead by the last allocation may land after the releases: it is then
  // the one kept.
  pool->wait_for_commits();
  s = pool->stats();
  EXPECT_EQ(s.used_bytes, 0u);
  EXPECT_EQ(s.committed_bytes, 2 * kMiB);  // the low-water mark: one empty chunk kept
  EXPECT_GE(s.chunks_released_total, 31u);
  EXPECT_LT(rss_anon(), idle + 6 * kMiB + shadow_of(64 * kMiB));
  EXPECT_EQ(pool->release_empty_chunks(0), s.committed_bytes / (2 * kMiB));
  EXPECT_EQ(pool->stats().committed_bytes, 0u);
}

TEST(KvBlockPool, AllocationPrefersTheLowestCommittedChunk) {
  KvPoolOptions opts;
  opts.reserve_chunks = 0;
  opts.background_commit = false;
  auto pool = KvBlockPool::create(chunky_layout(), 16, opts);  // 4 chunks of 4 blocks
  ASSERT_TRUE(pool.ok());
  std::vector<int32_t> got;
  for (int i = 0; i < 12; ++i) got.push_back(pool->kv_block_alloc().value());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], i);  // chunks 0, 1, 2 in order
  EXPECT_EQ(pool->stats().committed_bytes, 6 * kMiB);
  // Free one block in chunk 0 and all of chunk 1 (released at once: no reserve kept).
  pool->kv_block_unref(2);
  for (int32_t b = 4; b < 8; ++b) pool->kv_block_unref(b);
  EXPECT_FALSE(pool->chunk_committed(1));
  EXPECT_EQ(pool->stats().committed_bytes, 4 * kMiB);
  // The next blocks fill the hole in chunk 0, then recommit chunk 1 before touching chunk 3.
  EXPECT_EQ(pool->kv_block_alloc().value(), 2);
  EXPECT_EQ(pool->kv_block_alloc().value(), 4);
  EXPECT_TRUE(pool->chunk_committed(1));
  EXPECT_FALSE(pool->chunk_committed(3));
}

TEST(KvBlockPool, ALimitClosesAdmissionButNeverTakesBlocksBack) {
  KvPoolOptions opts;
  opts.background_commit = false;
  auto pool = KvBlockPool::create(chunky_layout(), 16, opts);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->limit(), pool->bytes_reserved());
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(pool->kv_block_alloc().ok());  // 3 MiB used
  pool->set_limit(2 * kMiB);
  EXPECT_EQ(pool->limit(), 2 * kMiB);
  EXPECT_FALSE(pool->admits_blocks(1));
  EXPECT_TRUE(pool->kv_block_alloc().ok());  // a running sequence still grows
  EXPECT_EQ(pool->stats().used_bytes, 7 * pool->block_bytes());
  pool->set_limit(8 * kMiB);
  EXPECT_TRUE(pool->admits_blocks(9));
  EXPECT_FALSE(pool->admits_blocks(10));
  pool->set_limit(0);  // no limit
  EXPECT_TRUE(pool->admits_blocks(9));
  EXPECT_FALSE(pool->admits_blocks(10));  // 16 blocks in all
}

TEST(KvBlockPool, BlocksLargerThanAChunkGetWholeChunksEach) {
  KvLayout l = chunky_layout();
  l.n_layers = 80;  // 2.5 MiB a block
  auto pool = KvBlockPool::create(l, 3);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->blocks_per_chunk(), 1);
  EXPECT_EQ(pool->bytes_reserved(), 12 * kMiB);
  int32_t a = pool->kv_block_alloc().value();
  int32_t b = pool->kv_block_alloc().value();
  fill_block(*pool, a, 1);
  fill_block(*pool, b, 2);
  EXPECT_EQ(pool->v_block(79, a)[16 * pool->v_row_bytes() - 1], 1);
  EXPECT_EQ(pool->k_block(0, a)[0], 1);
  EXPECT_EQ(pool->k_block(0, b)[0], 2);
}

// Inside a chunk the rows are layer-major, so one layer's keys of a chunk's consecutive blocks
// are one run (what decode attention streams); every (layer, block) run lies in its block's
// chunk and no two overlap, and a copy moves every run of the block and nothing else.
TEST(KvBlockPool, ChunksHoldEachLayersRowsOfTheirBlocksTogether) {
  KvLayout l = chunky_layout();
  l.v_row_elems = 256;  // V rows shorter than K rows: the regions must not assume equal sizes
  l.offloaded_layers = 3;
  auto pool = KvBlockPool::create(l, 10);
  ASSERT_TRUE(pool.ok()) << pool.error().to_string();
  const int32_t bpc = pool->blocks_per_chunk();
  ASSERT_GT(bpc, 2);
  const size_t k_run = 16 * pool->k_row_bytes(), v_run = 16 * pool->v_row_bytes();
  std::vector<std::pair<const uint8_t*, size_t>> runs;
  for (int32_t layer = 3; layer < l.n_layers; ++layer) {
    for (int32_t b = 0; b < pool->n_blocks(); ++b) {
      if (b % bpc != 0) {
        EXPECT_EQ(pool->k_block(layer, b), pool->k_block(layer, b - 1) + k_run) << layer << " " << b;
        EXPECT_EQ(pool->v_block(layer, b), pool->v_block(layer, b - 1) + v_run) << layer << " " << b;
      }
      runs.emplace_back(pool->k_block(layer, b), k_run);
      runs.emplace_back(pool->v_block(layer, b), v_run);
    }
  }
  std::sort(runs.begin(), runs.end());
  for (size_t i = 1; i < runs.size(); ++i) EXPECT_LE(runs[i - 1].first + runs[i - 1].second, runs[i].first);
  const uint8_t* base = pool->k_block(3, 0);
  for (const auto& [p, n] : runs) EXPECT_LE(static_cast<size_t>(p + n - base), pool->bytes_reserved());
  // Chunk c's runs lie in [c * stride, (c + 1) * stride).
  const size_t stride = pool->bytes_reserved() / static_cast<size_t>((pool->n_blocks() + bpc - 1) / bpc);
  for (int32_t b = 0; b < pool->n_blocks(); ++b) {
    const size_t lo = static_cast<size_t>(b / bpc) * stride;
    for (int32_t layer = 3; layer < l.n_layers; ++layer) {
      EXPECT_GE(static_cast<size_t>(pool->k_block(layer, b) - base), lo);
      EXPECT_LE(static_cast<size_t>(pool->v_block(layer, b) + v_run - base), lo + stride);
    }
  }

  std::vector<int32_t> held;
  for (int i = 0; i < 10; ++i) held.push_back(pool->kv_block_alloc().value());
  for (int32_t b : held) fill_block(*pool, b, static_cast<uint8_t>(b + 1));
  ASSERT_TRUE(pool->kv_block_copy(1, bpc + 1).ok());  // across chunks
  for (int32_t layer = 3; layer < l.n_layers; ++layer) {
    EXPECT_EQ(pool->k_block(layer, bpc + 1)[0], 2);
    EXPECT_EQ(pool->v_block(layer, bpc + 1)[v_run - 1], 2);
    EXPECT_EQ(pool->k_block(layer, bpc)[k_run - 1], bpc + 1);      // its neighbours untouched
    EXPECT_EQ(pool->k_block(layer, bpc + 2)[0], bpc + 3);
    EXPECT_EQ(pool->v_block(layer, bpc + 2)[0], bpc + 3);
  }
}

}  // namespace
}  // namespace hearth::kv
