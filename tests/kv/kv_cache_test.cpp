// Tests for the paged KV cache: growth, truncation, fork with copy-on-write, exhaustion.
#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ops.h"
#include "tensor/fp16.h"

namespace hearth::kv {
namespace {

KvLayout small_layout() {
  KvLayout l;
  l.n_layers = 2;
  l.k_row_elems = 8;
  l.v_row_elems = 4;
  l.block_tokens = 4;
  l.type = DType::kF32;
  return l;
}

void write_token(KvCache& kv, int32_t seq, int32_t pos, float value) {
  for (int32_t layer = 0; layer < 2; ++layer) {
    float k[8], v[4];
    for (float& x : k) x = value + static_cast<float>(layer);
    for (float& x : v) x = -value - static_cast<float>(layer);
    std::memcpy(kv.k_row(layer, seq, pos), k, sizeof k);
    std::memcpy(kv.v_row(layer, seq, pos), v, sizeof v);
  }
}

float read_k(KvCache& kv, int32_t seq, int32_t pos, int32_t layer) {
  float x;
  std::memcpy(&x, kv.k_row(layer, seq, pos), sizeof x);
  return x;
}
float read_v(KvCache& kv, int32_t seq, int32_t pos, int32_t layer) {
  float x;
  std::memcpy(&x, kv.v_row(layer, seq, pos) + 3 * sizeof(float), sizeof x);
  return x;
}

TEST(KvCache, AppendAllocatesBlocksAndRowsRoundTrip) {
  auto kv = KvCache::create(small_layout(), 8);
  ASSERT_TRUE(kv.ok());
  int32_t s = kv->seq_create();
  ASSERT_TRUE(kv->seq_append(s, 6).ok());
  EXPECT_EQ(kv->seq_length(s), 6);
  EXPECT_EQ(kv->block_table(s).size(), 2u);
  EXPECT_EQ(kv->pool().n_used(), 2);
  for (int32_t p = 0; p < 6; ++p) write_token(*kv, s, p, static_cast<float>(p));
  for (int32_t p = 0; p < 6; ++p) {
    EXPECT_EQ(read_k(*kv, s, p, 1), static_cast<float>(p) + 1);
    EXPECT_EQ(read_v(*kv, s, p, 0), -static_cast<float>(p));
  }
}

TEST(KvCache, TruncateReturnsBlocks) {
  auto kv = KvCache::create(small_layout(), 8);
  ASSERT_TRUE(kv.ok());
  int32_t s = kv->seq_create();
  ASSERT_TRUE(kv->seq_append(s, 9).ok());
  EXPECT_EQ(kv->pool().n_used(), 3);
  ASSERT_TRUE(kv->seq_truncate(s, 4).ok());
  EXPECT_EQ(kv->pool().n_used(), 1);
  EXPECT_FALSE(kv->seq_truncate(s, 5).ok());
  kv->seq_free(s);
  EXPECT_EQ(kv->pool().n_used(), 0);
}

TEST(KvCache, ForkSharesPrefixAndCopiesOnWrite) {
  auto kv = KvCache::create(small_layout(), 8);
  ASSERT_TRUE(kv.ok());
  int32_t a = kv->seq_create();
  ASSERT_TRUE(kv->seq_append(a, 6).ok());
  for (int32_t p = 0; p < 6; ++p) write_token(*kv, a, p, static_cast<float>(p));
  auto b = kv->seq_fork(a);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(kv->pool().n_used(), 2);  // shared
  EXPECT_EQ(kv->pool().kv_block_refcount(kv->block_table(a)[1]), 2);
  // b appends into the shared, half-full second block: it must get its own copy.
  ASSERT_TRUE(kv->seq_append(*b, 1).ok());
  write_token(*kv, *b, 6, 100.0f);
  EXPECT_EQ(kv->block_table(a)[0], kv->block_table(*b)[0]);
  EXPECT_NE(kv->block_table(a)[1], kv->block_table(*b)[1]);
  EXPECT_EQ(kv->pool().n_used(), 3);
  for (int32_t p = 0; p < 6; ++p) EXPECT_EQ(read_k(*kv, *b, p, 0), static_cast<float>(p));  // copied
  EXPECT_EQ(read_k(*kv, *b, 6, 0), 100.0f);
  // a is untouched and can grow on its own.
  ASSERT_TRUE(kv->seq_append(a, 1).ok());
  write_token(*kv, a, 6, 7.0f);
  EXPECT_EQ(read_k(*kv, a, 6, 0), 7.0f);
  EXPECT_EQ(read_k(*kv, *b, 6, 0), 100.0f);
  kv->seq_free(a);
  kv->seq_free(*b);
  EXPECT_EQ(kv->pool().n_used(), 0);
}

TEST(KvCache, ForkThenTruncateIntoSharedBlockCopies) {
  auto kv = KvCache::create(small_layout(), 8);
  ASSERT_TRUE(kv.ok());
  int32_t a = kv->seq_create();
  ASSERT_TRUE(kv->seq_append(a, 8).ok());
  for (int32_t p = 0; p < 8; ++p) write_token(*kv, a, p, static_cast<float>(p));
  int32_t b = kv->seq_fork(a).value();
  ASSERT_TRUE(kv->seq_truncate(b, 5).ok());
  ASSERT_TRUE(kv->seq_append(b, 1).ok());
  write_token(*kv, b, 5, 50.0f);
  EXPECT_EQ(read_k(*kv, a, 5, 0), 5.0f);  // a keeps its own value
  EXPECT_EQ(read_k(*kv, b, 5, 0), 50.0f);
  EXPECT_EQ(read_k(*kv, b, 4, 0), 4.0f);
}

TEST(KvCache, ExhaustionIsAnErrorThatChangesNothing) {
  auto kv = KvCache::create(small_layout(), 2);
  ASSERT_TRUE(kv.ok());
  int32_t s = kv->seq_create();
  ASSERT_TRUE(kv->seq_append(s, 7).ok());
  auto r = kv->seq_append(s, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kOutOfRange);
  EXPECT_EQ(kv->seq_length(s), 7);
  EXPECT_TRUE(kv->seq_append(s, 1).ok());
}

// The per-token layouts' round trip (write(seq, pos) stores a token's K and V, check(seq,
// pos, as) expects those that sequence `as` wrote): sequences a (7 tokens) and b (3) do not
// overwrite each other, and a fork of a cut back to `keep` tokens that writes position `keep`
// (in the second block, shared until then) keeps a's tokens before it, gets its own at `keep`,
// and leaves a's there unchanged (copy-on-write).
template <class Write, class Check>
void round_trip_and_fork(KvCache& kv, int32_t keep, Write write, Check check) {
  const int32_t a = kv.seq_create(), b = kv.seq_create();
  ASSERT_TRUE(kv.seq_append(a, 7).ok());
  ASSERT_TRUE(kv.seq_append(b, 3).ok());
  for (int32_t p = 0; p < 7; ++p) write(a, p);
  for (int32_t p = 0; p < 3; ++p) write(b, p);
  for (int32_t p = 0; p < 7; ++p) check(a, p, a);
  for (int32_t p = 0; p < 3; ++p) check(b, p, b);
  auto fork = kv.seq_fork(a);
  ASSERT_TRUE(fork.ok());
  ASSERT_TRUE(kv.seq_truncate(*fork, keep).ok());
  ASSERT_TRUE(kv.seq_append(*fork, 1).ok());
  write(*fork, keep);
  for (int32_t p = 0; p < keep; ++p) check(*fork, p, a);
  check(*fork, keep, *fork);
  for (int32_t p = keep; p < 7; ++p) check(a, p, a);
}

// An F16 cache by head: each token's K goes to the block k_block_at names, at its offset
// there, element by element block_tokens apart, and its V to v_block_at's block by head;
// tokens, layers and sequences do not overlap, a fork's copy-on-write carries them, and other
// cache types refuse the layout.
TEST(KvCache, ByHeadBlocksRoundTripPerToken) {
  KvLayout l = small_layout();
  l.type = DType::kF16;
  l.by_head = true;
  auto kv = KvCache::create(l, 8);
  ASSERT_TRUE(kv.ok());
  auto key = [](int32_t seq, int32_t pos, int32_t layer, int e) {
    return static_cast<float>(seq * 512 + layer * 256 + pos * 16 + e);  // exact in F16
  };
  auto write = [&](int32_t seq, int32_t pos) {
    for (int32_t layer = 0; layer < 2; ++layer) {
      float k[8], v[4];
      for (int e = 0; e < 8; ++e) k[e] = key(seq, pos, layer, e);
      for (int e = 0; e < 4; ++e) v[e] = -key(seq, pos, layer, e);
      kernels::kv_store_key_transposed(k, kv->k_block_at(layer, seq, pos), kv->block_tokens(), pos % kv->block_tokens(), 8);
      kernels::kv_store_value_by_head(v, kv->v_block_at(layer, seq, pos), kv->block_tokens(), 2, pos % kv->block_tokens(),
                                      4);  // 2 heads of 2
    }
  };
  auto check = [&](int32_t seq, int32_t pos, int32_t as) {
    for (int32_t layer = 0; layer < 2; ++layer) {
      uint16_t k[8];
      kernels::kv_load_key_transposed(kv->k_block_at(layer, seq, pos), kv->block_tokens(), pos % kv->block_tokens(), 0, 8, k);
      for (int e = 0; e < 8; ++e) ASSERT_EQ(fp16_to_fp32(k[e]), key(as, pos, layer, e)) << seq << " " << pos << " " << e;
      const auto* v = reinterpret_cast<const uint16_t*>(kv->v_block_at(layer, seq, pos));
      for (int e = 0; e < 4; ++e) {
        const size_t at = kernels::kv_value_by_head_index(kv->block_tokens(), 2, e, pos % kv->block_tokens());
        ASSERT_EQ(fp16_to_fp32(v[at]), -key(as, pos, layer, e)) << seq << " " << pos << " " << e;
      }
      // element e sits block_tokens halves after element e - 1
      const auto* block = reinterpret_cast<const uint16_t*>(kv->k_block_at(layer, seq, pos));
      ASSERT_EQ(fp16_to_fp32(block[5 * kv->block_tokens() + pos % kv->block_tokens()]), key(as, pos, layer, 5));
    }
  };
  round_trip_and_fork(*kv, 6, write, check);

  l.type = DType::kF32;
  EXPECT_FALSE(KvBlockPool::create(l, 4).ok());
}

// A BF16 cache's pairs (kernels/ops.h): each token's K and V written through k_block_at and
// v_block_at come back per token, neighbouring tokens of a pair do not overwrite each other's
// halves, a forked block is copied before its first write, and the pool refuses an odd block
// size (a pair would straddle blocks).
TEST(KvCache, Bf16PairsRoundTripPerToken) {
  KvLayout l = small_layout();
  l.type = DType::kBF16;
  auto kv = KvCache::create(l, 8);
  ASSERT_TRUE(kv.ok()) << kv.error().to_string();
  auto value = [](int32_t seq, int32_t pos, int32_t layer, int e) {  // exact in BF16 (8 significant bits)
    return std::ldexp(1.0f + static_cast<float>(pos * 8 + e) / 128.0f, 2 * seq + layer);
  };
  auto write = [&](int32_t seq, int32_t pos) {
    for (int32_t layer = 0; layer < 2; ++layer) {
      float k[8], v[4];
      for (int e = 0; e < 8; ++e) k[e] = value(seq, pos, layer, e);
      for (int e = 0; e < 4; ++e) v[e] = -value(seq, pos, layer, e);
      const int32_t o = pos % kv->block_tokens();
      kernels::kv_store_key_paired(k, kv->k_block_at(layer, seq, pos), kv->block_tokens(), o, 8);
      kernels::kv_store_value_paired(v, kv->v_block_at(layer, seq, pos), kv->block_tokens(), 2, o, 4);  // 2 heads of 2
    }
  };
  auto check = [&](int32_t seq, int32_t pos, int32_t as) {
    for (int32_t layer = 0; layer < 2; ++layer) {
      float k[8], v[4];
      const int32_t o = pos % kv->block_tokens();
      kernels::kv_load_key_paired(kv->k_block_at(layer, seq, pos), kv->block_tokens(), o, 0, 8, k);
      kernels::kv_load_value_paired(kv->v_block_at(layer, seq, pos), kv->block_tokens(), 2, o, 0, 4, v);
      for (int e = 0; e < 8; ++e) ASSERT_EQ(k[e], value(as, pos, layer, e)) << seq << " " << pos << " " << e;
      for (int e = 0; e < 4; ++e) ASSERT_EQ(v[e], -value(as, pos, layer, e)) << seq << " " << pos << " " << e;
    }
  };
  round_trip_and_fork(*kv, 5, write, check);  // position 5: the pair (4, 5) of the shared second block

  l.block_tokens = 5;
  auto odd = KvBlockPool::create(l, 4);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("pairs"), std::string::npos) << odd.error().message;
}

TEST(KvBlockPool, RowSizesFollowTheType) {
  KvLayout l = small_layout();
  l.k_row_elems = 64;
  l.v_row_elems = 64;
  l.type = DType::kF16;
  auto p = KvBlockPool::create(l, 4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->k_row_bytes(), 128u);
  l.type = DType::kQ8_0;
  auto q = KvBlockPool::create(l, 4);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->k_row_bytes(), 68u);
  l.type = DType::kQ4_K;
  EXPECT_FALSE(KvBlockPool::create(l, 4).ok());
  l.type = DType::kF16;
  EXPECT_FALSE(KvBlockPool::create(l, 0).ok());
}

}  // namespace
}  // namespace hearth::kv
