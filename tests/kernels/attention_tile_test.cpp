// The flash-style attention tile (ops.h attention_tile) in every CPU variant against the
// double-precision per-token reference and against the scalar variant, on shapes the SIMD
// sub-tiles do not divide evenly: head sizes 64/80/128/256, GQA ratios 1/4/8, windows, softcap,
// non-causal, a cached prefix before the tile, F16 (K by rows and transposed)/F32/Q8_0/Q4_0/BF16
// caches.
// Also: the work space does not grow with the tile or the context.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "attention_test_util.h"
#include "kernel_test_util.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"

namespace hearth::kernels {
namespace {

struct TileCase {
  int head_dim;
  int ratio;  // query heads per KV head
  int window;
  float softcap;
  bool causal;
  DType type;
};

std::string label(const TileCase& c) {
  return "dim " + std::to_string(c.head_dim) + " ratio " + std::to_string(c.ratio) + " window " +
         std::to_string(c.window) + " softcap " + std::to_string(c.softcap) + (c.causal ? " causal " : " bidir ") +
         std::string(dtype_name(c.type));
}

void check_tile_layout(const TileCase& c, bool by_head) {
  const int n_head_kv = 2, q_pos0 = 29, n_q = 45, block_tokens = 16;
  const int n_kv = q_pos0 + n_q + (c.causal ? 0 : 7);
  AttentionParams p;
  p.n_head = n_head_kv * c.ratio;
  p.n_head_kv = n_head_kv;
  p.head_dim_k = c.head_dim;
  p.head_dim_v = c.head_dim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  p.window = c.window;
  p.softcap = c.softcap;
  p.causal = c.causal;
  const PagedKv kv = make_kv(c.type, n_kv, block_tokens, n_head_kv, c.head_dim, c.head_dim, 90 + c.head_dim, by_head);
  const int64_t q_dim = static_cast<int64_t>(p.n_head) * c.head_dim;
  const std::vector<float> q = random_floats(static_cast<size_t>(n_q * q_dim), 91, -2.0f, 2.0f);
  std::vector<std::vector<double>> want;
  for (int t = 0; t < n_q; ++t) {
    const std::vector<float> qt(q.begin() + t * q_dim, q.begin() + (t + 1) * q_dim);
    want.push_back(attention_reference(qt, q_pos0 + t, n_kv, kv, p));
  }
  // The tile keeps probabilities in F32 but for a BF16 cache, whose are rounded to BF16.
  const double tolerance = c.type == DType::kBF16 ? decode_tolerance(c.type) : 5e-5;
  std::vector<float> scalar_out;
  for (CpuVariant v : test::variants_under_test()) {
    SCOPED_TRACE(label(c) + (by_head ? " by head " : " ") + test::variant_label(v));
    test::VariantScope scope(v);
    std::vector<float> out(static_cast<size_t>(n_q * q_dim), 123.0f), scratch;
    for (int kvh = 0; kvh < n_head_kv; ++kvh) {
      AttentionTile tile;
      tile.q = q.data();
      tile.q_stride = q_dim;
      tile.out = out.data();
      tile.out_stride = q_dim;
      tile.q_pos0 = q_pos0;
      tile.n_q = n_q;
      tile.n_kv = n_kv;
      tile.kv_head = kvh;
      attention_tile(tile, kv.span, p, scratch);
    }
    EXPECT_EQ(scratch.size(), attention_tile_work_floats(p));
    for (int t = 0; t < n_q; ++t) {
      for (int64_t i = 0; i < q_dim; ++i) {
        ASSERT_NEAR(out[t * q_dim + i], want[t][i], tolerance) << "token " << t << " at " << i;
      }
    }
    if (v == CpuVariant::kScalar) {
      scalar_out = out;
    } else if (!scalar_out.empty()) {
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], scalar_out[i], variant_tolerance(c.type)) << "at " << i;
    }
  }
}

// Each case over both K layouts of an F16 cache (rows, and transposed as the engine keeps it).
void check_tile(const TileCase& c) {
  check_tile_layout(c, false);
  if (c.type == DType::kF16) check_tile_layout(c, true);
}

TEST(AttentionTile, HeadSizesAndGroupRatios) {
  for (int dim : {64, 80, 128, 256}) {
    for (int ratio : {1, 4, 8}) check_tile({dim, ratio, 0, 0.0f, true, DType::kF16});
  }
}

TEST(AttentionTile, WindowsSoftcapAndNonCausal) {
  check_tile({64, 4, 10, 0.0f, true, DType::kF16});   // window shorter than the tile
  check_tile({128, 8, 40, 0.0f, true, DType::kF16});  // window cutting key tiles
  check_tile({64, 4, 0, 3.0f, true, DType::kF16});
  check_tile({80, 1, 0, 0.0f, false, DType::kF16});
  check_tile({64, 4, 17, 0.0f, false, DType::kF16});
}

// A BF16 cache (K by element pair, V by token pair) in every shape the F16 tests take.
TEST(AttentionTile, Bf16PairsEveryShape) {
  for (int dim : {64, 80, 128, 256}) {
    for (int ratio : {1, 4, 8}) check_tile({dim, ratio, 0, 0.0f, true, DType::kBF16});
  }
  check_tile({64, 4, 10, 0.0f, true, DType::kBF16});
  check_tile({128, 8, 40, 0.0f, true, DType::kBF16});
  check_tile({64, 4, 0, 3.0f, true, DType::kBF16});
  check_tile({80, 1, 0, 0.0f, false, DType::kBF16});
  check_tile({64, 4, 17, 0.0f, false, DType::kBF16});
}

TEST(AttentionTile, CacheTypes) {
  for (DType type : {DType::kF32, DType::kQ8_0, DType::kQ4_0}) {
    check_tile({64, 4, 0, 0.0f, true, type});
    check_tile({128, 8, 21, 0.0f, true, type});
  }
}

// Rows whose window holds no cached key (the cache ends before them) come out as zeros, and an
// empty tile writes nothing.
TEST(AttentionTile, EmptyRangesWriteZerosOrNothing) {
  AttentionParams p;
  p.n_head = 4;
  p.n_head_kv = 1;
  p.head_dim_k = p.head_dim_v = 64;
  const PagedKv kv = make_kv(DType::kF16, 8, 16, 1, 64, 64, 5);
  const std::vector<float> q = random_floats(4 * 64 * 3, 6, -1.0f, 1.0f);
  for (CpuVariant v : test::variants_under_test()) {
    SCOPED_TRACE(test::variant_label(v));
    test::VariantScope scope(v);
    std::vector<float> out(q.size(), 123.0f), scratch;
    AttentionTile tile{q.data(), 256, out.data(), 256, 0, 0, 8, 0};
    attention_tile(tile, kv.span, p, scratch);
    for (float x : out) ASSERT_EQ(x, 123.0f);
    p.window = 2;
    tile.q_pos0 = 20;  // keys 19..20 would be visible, but only 0..7 exist
    tile.n_q = 3;
    attention_tile(tile, kv.span, p, scratch);
    for (float x : out) ASSERT_EQ(x, 0.0f);
    p.window = 0;
  }
}

}  // namespace
}  // namespace hearth::kernels
