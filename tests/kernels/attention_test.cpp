// Attention over a paged KV span (F16, F32, Q8_0 and Q4_0 caches; GQA, causal, window, softcap) in
// every CPU variant against a double-precision implementation, plus KV row conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "attention_test_util.h"
#include "kernel_test_util.h"
#include "kernels/cpu_features.h"
#include "kernels/ops.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth::kernels {
namespace {

using test::random_floats;

TEST(Attention, EveryCacheTypeMaskAndVariant) {
  const int n_kv = 11, block_tokens = 4;
  AttentionParams base;
  base.n_head = 4;
  base.n_head_kv = 2;
  base.head_dim_k = 64;
  base.head_dim_v = 64;
  base.scale = 0.125f;
  struct Case {
    const char* name;
    AttentionParams p;
    int q_pos;
  };
  std::vector<Case> cases = {{"causal last", base, 10}, {"causal middle", base, 6}};
  AttentionParams window = base;
  window.window = 3;
  cases.push_back({"window", window, 9});
  AttentionParams cap = base;
  cap.softcap = 2.0f;
  cap.scale = 1.0f;
  cases.push_back({"softcap", cap, 10});
  AttentionParams bidir = base;
  bidir.causal = false;
  cases.push_back({"non-causal", bidir, 2});
  AttentionParams mha = base;
  mha.n_head_kv = 4;
  mha.head_dim_v = 32;
  cases.push_back({"mha, dv 32", mha, 10});
  for (const CacheKind& kind : cache_kinds()) {
    const DType type = kind.type;
    for (const Case& c : cases) {
      const PagedKv kv = make_kv(type, n_kv, block_tokens, c.p.n_head_kv, c.p.head_dim_k, c.p.head_dim_v, 40,
                                 kind.by_head);
      const std::vector<float> q = random_floats(static_cast<size_t>(c.p.n_head) * c.p.head_dim_k, 41, -2.0f, 2.0f);
      const std::vector<double> want = attention_reference(q, c.q_pos, n_kv, kv, c.p, true);
      std::vector<float> scalar_out;
      for (CpuVariant v : test::variants_under_test()) {
        SCOPED_TRACE(kind.name() + " " + c.name + " " + test::variant_label(v));
        test::VariantScope scope(v);
        std::vector<float> out(want.size(), 123.0f), scratch;
        attention(q.data(), c.q_pos, n_kv, kv.span, c.p, out.data(), scratch);
        const double tol = decode_tolerance(type);
        for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], tol) << "at " << i;
        if (v == CpuVariant::kScalar) {
          scalar_out = out;
        } else if (!scalar_out.empty()) {
          for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], scalar_out[i], variant_tolerance(type)) << "at " << i;
        }
      }
    }
  }
}

// Long spans over many 16-token blocks with grouped heads (4 query heads per KV head) and head
// sizes 64 and 128: every variant within rounding of the double-precision reference.
TEST(Attention, LongSpansGroupedHeads) {
  const int n_kv = 300, block_tokens = 16;
  for (int head_dim : {64, 128}) {
    AttentionParams p;
    p.n_head = 8;
    p.n_head_kv = 2;
    p.head_dim_k = head_dim;
    p.head_dim_v = head_dim;
    p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    AttentionParams window = p;
    window.window = 100;
    for (const CacheKind& kind : long_span_kinds()) {
    const PagedKv kv = make_kv(kind.type, n_kv, block_tokens, p.n_head_kv, head_dim, head_dim, 60, kind.by_head);
    const std::vector<float> q = random_floats(static_cast<size_t>(p.n_head) * head_dim, 61, -2.0f, 2.0f);
    for (const auto& [params, q_pos] : {std::pair{p, 299}, std::pair{p, 150}, std::pair{window, 250}}) {
      const std::vector<double> want = attention_reference(q, q_pos, n_kv, kv, params, true);
      for (CpuVariant v : test::variants_under_test()) {
        SCOPED_TRACE("head_dim " + std::to_string(head_dim) + " q_pos " + std::to_string(q_pos) + " " +
                     kind.name() + " " + test::variant_label(v));
        test::VariantScope scope(v);
        std::vector<float> out(want.size(), 123.0f), scratch;
        attention(q.data(), q_pos, n_kv, kv.span, params, out.data(), scratch);
        for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], decode_tolerance(kind.type)) << "at " << i;
      }
    }
    }
  }
}

// Head ranges that cut a KV group (the decode split over threads): each range computed alone
// gives exactly what the whole call gives for those heads, and leaves other heads untouched.
TEST(Attention, HeadRangesMatchTheWholeCall) {
  const int n_kv = 70, head_dim = 64;
  AttentionParams p;
  p.n_head = 8;
  p.n_head_kv = 2;
  p.head_dim_k = head_dim;
  p.head_dim_v = head_dim;
  p.scale = 0.125f;
  for (const CacheKind& kind : long_span_kinds()) {
  const PagedKv kv = make_kv(kind.type, n_kv, 16, p.n_head_kv, head_dim, head_dim, 70, kind.by_head);
  const std::vector<float> q = random_floats(static_cast<size_t>(p.n_head) * head_dim, 71, -2.0f, 2.0f);
  for (CpuVariant v : test::variants_under_test()) {
    SCOPED_TRACE(test::variant_label(v) + " " + kind.name());
    test::VariantScope scope(v);
    std::vector<float> whole(static_cast<size_t>(p.n_head) * head_dim), scratch;
    attention(q.data(), 69, n_kv, kv.span, p, whole.data(), scratch);
    for (auto [b, e] : {std::pair{0, 3}, std::pair{3, 6}, std::pair{6, 8}, std::pair{2, 7}}) {
      std::vector<float> part(whole.size(), 123.0f);
      attention_heads(q.data(), 69, n_kv, kv.span, p, b, e, part.data(), scratch);
      for (size_t i = 0; i < part.size(); ++i) {
        const auto head = static_cast<int>(i / head_dim);
        if (head >= b && head < e) {
          ASSERT_EQ(part[i], whole[i]) << "range " << b << "-" << e << " at " << i;
        } else {
          ASSERT_EQ(part[i], 123.0f) << "range " << b << "-" << e << " wrote outside at " << i;
        }
      }
    }
  }
  }
}

// A decode step split by keys (attention_heads_part over parts, then attention_merge) agrees
// with the double-precision reference, for every cache type and variant, including parts that
// hold no visible key (past the query or before its window).
TEST(Attention, KeyPartsMergeToTheWholeAttention) {
  const int n_kv = 150, head_dim = 64;
  AttentionParams p;
  p.n_head = 8;
  p.n_head_kv = 2;
  p.head_dim_k = head_dim;
  p.head_dim_v = head_dim;
  p.scale = 0.125f;
  AttentionParams window = p;
  window.window = 40;
  const std::vector<std::vector<int>> cuts = {{0, 150}, {0, 64, 128, 150}, {0, 1, 100, 101, 150}, {0, 37, 150}};
  for (const CacheKind& kind : cache_kinds()) {
    const DType type = kind.type;
    const PagedKv kv = make_kv(type, n_kv, 16, p.n_head_kv, head_dim, head_dim, 80, kind.by_head);
    const std::vector<float> q = random_floats(static_cast<size_t>(p.n_head) * head_dim, 81, -2.0f, 2.0f);
    for (const auto& [params, q_pos] : {std::pair{p, 149}, std::pair{p, 90}, std::pair{window, 120}}) {
      const std::vector<double> want = attention_reference(q, q_pos, n_kv, kv, params, true);
      for (CpuVariant v : test::variants_under_test()) {
        test::VariantScope scope(v);
        for (const auto& cut : cuts) {
          SCOPED_TRACE(kind.name() + " q_pos " + std::to_string(q_pos) + " parts " +
                       std::to_string(cut.size() - 1) + " " + test::variant_label(v));
          const int n_parts = static_cast<int>(cut.size()) - 1;
          std::vector<std::vector<float>> outs(n_parts, std::vector<float>(want.size(), 123.0f));
          std::vector<std::vector<float>> stats(n_parts, std::vector<float>(2 * p.n_head));
          std::vector<float> scratch;
          for (int i = 0; i < n_parts; ++i) {
            const KeyPart part{cut[i], cut[i + 1], stats[i].data()};
            attention_heads_part(q.data(), q_pos, n_kv, kv.span, params, 0, p.n_head, part, outs[i].data(), scratch);
          }
          std::vector<float> merged(want.size());
          for (int h = 0; h < p.n_head; ++h) {
            std::vector<const float*> parts, part_stats;
            for (int i = 0; i < n_parts; ++i) {
              parts.push_back(outs[i].data() + h * head_dim);
              part_stats.push_back(stats[i].data() + 2 * h);
            }
            attention_merge(n_parts, parts.data(), part_stats.data(), head_dim, merged.data() + h * head_dim);
          }
          const double tol = decode_tolerance(type);
          for (size_t i = 0; i < merged.size(); ++i) ASSERT_NEAR(merged[i], want[i], tol) << "at " << i;
        }
      }
    }
  }
}

// Random shapes for the decode kernels of every variant: head sizes 32 (one quantized block), 64,
// 80, 96 (an odd number of 32-blocks), 128 and 256 (80 only for F16 / F32: quantized caches need
// multiples of 32),
// GQA ratios 1, 4 and 8, lengths that are not a multiple of the 16-token cache block or of the
// kernels' key blocks, softcap on some, attention sinks (gpt-oss) on others; the whole step and a
// split into two key parts merged (the merge adding the sinks), against the double-precision
// reference with the query as decode multiplies it.
TEST(Attention, RandomShapesEveryCacheTypeAndVariant) {
  std::mt19937 rng(2311);
  for (const CacheKind& kind : cache_kinds()) {
    const DType type = kind.type;
    const bool quantized = type == DType::kQ8_0 || type == DType::kQ4_0;
    for (int head_dim : {32, 64, 80, 96, 128, 256}) {
      if (quantized && head_dim % 32 != 0) continue;
      for (int group : {1, 4, 8}) {
        AttentionParams p = grouped_params(head_dim, group);
        p.softcap = group == 4 ? 20.0f : 0.0f;
        // sinks around the scores' range: some heads' sinks dominate, others barely count
        const std::vector<float> sinks = random_floats(static_cast<size_t>(p.n_head), static_cast<uint32_t>(rng()), -3.0f, 6.0f);
        if (group != 4) p.sinks = sinks.data();
        int n_kv = std::uniform_int_distribution<int>(20, 160)(rng);
        if (n_kv % 16 == 0) ++n_kv;
        const int q_pos = std::uniform_int_distribution<int>(n_kv / 2, n_kv - 1)(rng);
        const int cut = std::uniform_int_distribution<int>(1, q_pos)(rng);
        const auto seed = static_cast<uint32_t>(rng());
        const PagedKv kv = make_kv(type, n_kv, 16, p.n_head_kv, head_dim, head_dim, seed, kind.by_head);
        const std::vector<float> q = random_floats(static_cast<size_t>(p.n_head) * head_dim, seed + 1, -2.0f, 2.0f);
        const std::vector<double> want = attention_reference(q, q_pos, n_kv, kv, p, true);
        const double tol = decode_tolerance(type);
        for (CpuVariant v : test::variants_under_test()) {
          SCOPED_TRACE(kind.name() + " head_dim " + std::to_string(head_dim) + " group " +
                       std::to_string(group) + " n_kv " + std::to_string(n_kv) + " q_pos " + std::to_string(q_pos) +
                       " cut " + std::to_string(cut) + " " + test::variant_label(v));
          test::VariantScope scope(v);
          std::vector<float> out(want.size(), 123.0f), scratch;
          attention(q.data(), q_pos, n_kv, kv.span, p, out.data(), scratch);
          for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], tol) << "at " << i;
          std::vector<float> a(want.size()), b(want.size()), sa(2 * p.n_head), sb(2 * p.n_head), merged(want.size());
          attention_heads_part(q.data(), q_pos, n_kv, kv.span, p, 0, p.n_head, KeyPart{0, cut, sa.data()}, a.data(),
                               scratch);
          attention_heads_part(q.data(), q_pos, n_kv, kv.span, p, 0, p.n_head, KeyPart{cut, n_kv, sb.data()}, b.data(),
                               scratch);
          for (int h = 0; h < p.n_head; ++h) {
            const float* parts[2] = {a.data() + h * head_dim, b.data() + h * head_dim};
            const float* stats[2] = {sa.data() + 2 * h, sb.data() + 2 * h};
            attention_merge(2, parts, stats, head_dim, merged.data() + h * head_dim,
                            p.sinks != nullptr ? p.sinks[h] : -INFINITY);
          }
          for (size_t i = 0; i < merged.size(); ++i) ASSERT_NEAR(merged[i], want[i], tol) << "merged at " << i;
        }
      }
    }
  }
}

// The AVX-512 variant with AVX512_BF16 (vdpbf16ps) and without (two FMAs per instruction, high
// products first) give the same bits for a BF16 cache, decode and prefill tile alike: the
// instruction's arithmetic is what the emulation does (no denormals here). Where the CPU lacks
// the instruction there is nothing to compare, and turning it on must fail.
TEST(Attention, Bf16InstructionAndItsEmulationAgree) {
  if (!cpu_features().avx512bf16 || !cpu_variant_supported(CpuVariant::kAvx512)) {
    if (!cpu_features().avx512bf16) {
      EXPECT_FALSE(set_avx512_bf16_for_testing(true).ok());
    }
    std::printf("[ skipped  ] no AVX512_BF16 on this CPU: only the emulation runs (the other tests)\n");
    return;
  }
  test::VariantScope scope(CpuVariant::kAvx512);
  std::mt19937 rng(77);
  for (int head_dim : {32, 64, 80, 128, 256}) {
    for (int group : {1, 4, 8}) {
      AttentionParams p = grouped_params(head_dim, group);
      p.window = group == 8 ? 40 : 0;
      const int n_kv = std::uniform_int_distribution<int>(70, 200)(rng);
      const auto seed = static_cast<uint32_t>(rng());
      const PagedKv kv = make_kv(DType::kBF16, n_kv, 16, p.n_head_kv, head_dim, head_dim, seed);
      const int n_q = 37, q_pos0 = n_kv - n_q;
      const int64_t q_dim = static_cast<int64_t>(p.n_head) * head_dim;
      const std::vector<float> q = random_floats(static_cast<size_t>(n_q * q_dim), seed + 1, -2.0f, 2.0f);
      std::vector<float> decode[2], tile[2], scratch;
      for (int use = 0; use < 2; ++use) {
        ASSERT_TRUE(set_avx512_bf16_for_testing(use == 1).ok());
        decode[use].assign(static_cast<size_t>(q_dim / head_dim * head_dim), 0.0f);
        const KeyPart part{5, n_kv - 3, nullptr};
        attention_heads_part(q.data(), n_kv - 1, n_kv, kv.span, p, 0, p.n_head, part, decode[use].data(), scratch);
        tile[use].assign(q.size(), 0.0f);
        for (int kvh = 0; kvh < p.n_head_kv; ++kvh) {
          const AttentionTile t{q.data(), q_dim, tile[use].data(), q_dim, q_pos0, n_q, n_kv, kvh};
          attention_tile(t, kv.span, p, scratch);
        }
      }
      SCOPED_TRACE("head_dim " + std::to_string(head_dim) + " group " + std::to_string(group));
      EXPECT_EQ(decode[0], decode[1]);
      EXPECT_EQ(tile[0], tile[1]);
    }
  }
  ASSERT_TRUE(set_avx512_bf16_for_testing(true).ok());
}

TEST(KvRows, RoundTripsAndRejectsBadInput) {
  const std::vector<float> x = random_floats(64, 50, -3.0f, 3.0f);
  std::vector<uint8_t> buf(64 * 4);
  std::vector<float> back(64);
  ASSERT_TRUE(kv_store_row(DType::kF32, x.data(), buf.data(), 64).ok());
  ASSERT_TRUE(kv_load_row(DType::kF32, buf.data(), back.data(), 64).ok());
  EXPECT_EQ(back, x);
  ASSERT_TRUE(kv_store_row(DType::kF16, x.data(), buf.data(), 64).ok());
  ASSERT_TRUE(kv_load_row(DType::kF16, buf.data(), back.data(), 64).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(back[i], fp16_to_fp32(fp32_to_fp16(x[i])));
  ASSERT_TRUE(kv_store_row(DType::kQ8_0, x.data(), buf.data(), 64).ok());
  ASSERT_TRUE(kv_load_row(DType::kQ8_0, buf.data(), back.data(), 64).ok());
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(back[i], x[i], 3.0 / 127);
  EXPECT_FALSE(kv_store_row(DType::kQ8_0, x.data(), buf.data(), 40).ok());
  ASSERT_TRUE(kv_store_row(DType::kQ4_0, x.data(), buf.data(), 64).ok());
  ASSERT_TRUE(kv_load_row(DType::kQ4_0, buf.data(), back.data(), 64).ok());
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(back[i], x[i], 3.0 / 8 + 1e-6);  // one step (max/8): +max clamps to 7
  EXPECT_FALSE(kv_store_row(DType::kQ4_0, x.data(), buf.data(), 48).ok());
  auto r = kv_store_row(DType::kQ4_K, x.data(), buf.data(), 64);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnsupported);
  EXPECT_FALSE(kv_load_row(DType::kBF16, buf.data(), back.data(), 64).ok());
  EXPECT_FALSE(kv_store_row(DType::kBF16, x.data(), buf.data(), 64).ok());  // pairs, not rows
}

// An F16 block by head (KvSpan::by_head): element e of token o's K at e * block_tokens + o, and
// head h's value row of token o at (h * block_tokens + o) * head_dim, so a KV head's keys and
// values of a block are each one range.
TEST(KvRows, F16ByHeadPutsEachHeadInOneRange) {
  const int block_tokens = 16, n_head_kv = 3, dk = 32, dv = 48;
  std::vector<uint8_t> kb(static_cast<size_t>(block_tokens) * n_head_kv * dk * 2),
      vb(static_cast<size_t>(block_tokens) * n_head_kv * dv * 2);
  std::vector<std::vector<float>> ks, vs;
  for (int o = 0; o < block_tokens; ++o) {
    ks.push_back(random_floats(static_cast<size_t>(n_head_kv) * dk, 300 + o, -3.0f, 3.0f));
    vs.push_back(random_floats(static_cast<size_t>(n_head_kv) * dv, 400 + o, -3.0f, 3.0f));
    kv_store_key_transposed(ks.back().data(), kb.data(), block_tokens, o, n_head_kv * dk);
    kv_store_value_by_head(vs.back().data(), vb.data(), block_tokens, dv, o, n_head_kv * dv);
  }
  const auto* k16 = reinterpret_cast<const uint16_t*>(kb.data());
  const auto* v16 = reinterpret_cast<const uint16_t*>(vb.data());
  for (int o = 0; o < block_tokens; ++o) {
    for (int e = 0; e < n_head_kv * dk; ++e) ASSERT_EQ(k16[e * block_tokens + o], fp32_to_fp16(ks[o][e])) << o << " " << e;
    for (int h = 0; h < n_head_kv; ++h) {
      for (int d = 0; d < dv; ++d) {
        ASSERT_EQ(v16[(h * block_tokens + o) * dv + d], fp32_to_fp16(vs[o][h * dv + d])) << o << " " << h << " " << d;
      }
    }
  }
}

// A BF16 cache's pairs: each token's K and V come back as their BF16 roundings, tokens do not
// overwrite each other, and the layout is the one the SIMD kernels read: a 16-key group's
// elements 2i and 2i + 1 are one 64-byte run, each KV head's values of the block one range, and
// in it an element of two neighbouring tokens one 32-bit word.
TEST(KvRows, Bf16PairsRoundTripAndInterleave) {
  const int block_tokens = 16, k_elems = 96, v_elems = 80, v_head = 40;
  std::vector<uint8_t> kb(static_cast<size_t>(block_tokens) * k_elems * 2), vb(static_cast<size_t>(block_tokens) * v_elems * 2);
  std::vector<std::vector<float>> ks, vs;
  for (int o = 0; o < block_tokens; ++o) {
    ks.push_back(random_floats(k_elems, 90 + o, -3.0f, 3.0f));
    vs.push_back(random_floats(v_elems, 190 + o, -3.0f, 3.0f));
    kv_store_key_paired(ks.back().data(), kb.data(), block_tokens, o, k_elems);
    kv_store_value_paired(vs.back().data(), vb.data(), block_tokens, v_head, o, v_elems);
  }
  std::vector<float> back(std::max(k_elems, v_elems));
  for (int o = 0; o < block_tokens; ++o) {
    kv_load_key_paired(kb.data(), block_tokens, o, 0, k_elems, back.data());
    for (int e = 0; e < k_elems; ++e) ASSERT_EQ(back[e], bf16_to_fp32(fp32_to_bf16(ks[o][e]))) << o << " " << e;
    kv_load_value_paired(vb.data(), block_tokens, v_head, o, 0, v_elems, back.data());
    for (int e = 0; e < v_elems; ++e) ASSERT_EQ(back[e], bf16_to_fp32(fp32_to_bf16(vs[o][e]))) << o << " " << e;
    kv_load_key_paired(kb.data(), block_tokens, o, 64, 32, back.data());  // a head's slice alone
    for (int e = 0; e < 32; ++e) ASSERT_EQ(back[e], bf16_to_fp32(fp32_to_bf16(ks[o][64 + e])));
  }
  const auto* k16 = reinterpret_cast<const uint16_t*>(kb.data());
  const auto* v16 = reinterpret_cast<const uint16_t*>(vb.data());
  for (int i = 0; i < k_elems / 2; ++i) {  // run i: keys 0..15, elements 2i and 2i + 1 of each
    for (int o = 0; o < block_tokens; ++o) {
      ASSERT_EQ(k16[i * 32 + 2 * o], fp32_to_bf16(ks[o][2 * i]));
      ASSERT_EQ(k16[i * 32 + 2 * o + 1], fp32_to_bf16(ks[o][2 * i + 1]));
    }
  }
  for (int pair = 0; pair < block_tokens / 2; ++pair) {  // head h's pair rows: element d of both tokens side by side
    for (int e = 0; e < v_elems; ++e) {
      const int h = e / v_head, d = e % v_head;
      const size_t at = static_cast<size_t>(h) * block_tokens * v_head + static_cast<size_t>(pair) * 2 * v_head + 2 * d;
      ASSERT_EQ(v16[at], fp32_to_bf16(vs[2 * pair][e]));
      ASSERT_EQ(v16[at + 1], fp32_to_bf16(vs[2 * pair + 1][e]));
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
