// Attention over a paged KV span (F16, F32 and Q8_0 caches; GQA, causal, window, softcap) in
// every CPU variant against a double-precision implementation, plus KV row conversions.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth::kernels {
namespace {

using test::random_floats;

struct PagedKv {
  std::vector<std::vector<uint8_t>> k_storage, v_storage;
  std::vector<const uint8_t*> k_ptrs, v_ptrs;
  KvSpan span;
  std::vector<std::vector<float>> k_values, v_values;  // what the cache holds, as floats
};

PagedKv make_kv(DType type, int n_kv, int block_tokens, int n_head_kv, int dk, int dv, uint32_t seed) {
  PagedKv kv;
  const int64_t k_elems = static_cast<int64_t>(n_head_kv) * dk, v_elems = static_cast<int64_t>(n_head_kv) * dv;
  const size_t k_row = *dtype_row_bytes(type, k_elems), v_row = *dtype_row_bytes(type, v_elems);
  const int n_blocks = (n_kv + block_tokens - 1) / block_tokens;
  kv.k_storage.assign(n_blocks, std::vector<uint8_t>(k_row * block_tokens));
  kv.v_storage.assign(n_blocks, std::vector<uint8_t>(v_row * block_tokens));
  for (int j = 0; j < n_kv; ++j) {
    const std::vector<float> k = random_floats(k_elems, seed + 2 * j, -2.0f, 2.0f);
    const std::vector<float> v = random_floats(v_elems, seed + 2 * j + 1, -2.0f, 2.0f);
    uint8_t* kd = kv.k_storage[j / block_tokens].data() + (j % block_tokens) * k_row;
    uint8_t* vd = kv.v_storage[j / block_tokens].data() + (j % block_tokens) * v_row;
    EXPECT_TRUE(kv_store_row(type, k.data(), kd, k_elems).ok());
    EXPECT_TRUE(kv_store_row(type, v.data(), vd, v_elems).ok());
    std::vector<float> kf(k_elems), vf(v_elems);
    EXPECT_TRUE(kv_load_row(type, kd, kf.data(), k_elems).ok());
    EXPECT_TRUE(kv_load_row(type, vd, vf.data(), v_elems).ok());
    kv.k_values.push_back(kf);
    kv.v_values.push_back(vf);
  }
  for (auto& b : kv.k_storage) kv.k_ptrs.push_back(b.data());
  for (auto& b : kv.v_storage) kv.v_ptrs.push_back(b.data());
  kv.span = KvSpan{kv.k_ptrs.data(), kv.v_ptrs.data(), block_tokens, k_row, v_row, type};
  return kv;
}

std::vector<double> attention_reference(const std::vector<float>& q, int q_pos, int n_kv, const PagedKv& kv,
                                        const AttentionParams& p) {
  std::vector<double> out(static_cast<size_t>(p.n_head) * p.head_dim_v, 0.0);
  const int group = p.n_head / p.n_head_kv;
  for (int h = 0; h < p.n_head; ++h) {
    const int kvh = h / group;
    std::vector<double> s(n_kv, -INFINITY);
    double max = -INFINITY;
    for (int j = 0; j < n_kv; ++j) {
      if (p.causal && j > q_pos) continue;
      if (p.window > 0 && j < q_pos - p.window + 1) continue;
      double d = 0.0;
      for (int c = 0; c < p.head_dim_k; ++c) {
        double qv = q[h * p.head_dim_k + c];
        if (kv.span.type == DType::kF16) qv = fp16_to_fp32(fp32_to_fp16(q[h * p.head_dim_k + c]));
        d += qv * kv.k_values[j][kvh * p.head_dim_k + c];
      }
      d *= p.scale;
      if (p.softcap != 0.0f) d = p.softcap * std::tanh(d / p.softcap);
      s[j] = d;
      max = std::max(max, d);
    }
    double sum = 0.0;
    for (int j = 0; j < n_kv; ++j) sum += std::isinf(s[j]) ? 0.0 : std::exp(s[j] - max);
    for (int j = 0; j < n_kv; ++j) {
      if (std::isinf(s[j])) continue;
      const double prob = std::exp(s[j] - max) / sum;
      for (int c = 0; c < p.head_dim_v; ++c) out[h * p.head_dim_v + c] += prob * kv.v_values[j][kvh * p.head_dim_v + c];
    }
  }
  return out;
}

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
  for (DType type : {DType::kF16, DType::kF32, DType::kQ8_0}) {
    for (const Case& c : cases) {
      const PagedKv kv = make_kv(type, n_kv, block_tokens, c.p.n_head_kv, c.p.head_dim_k, c.p.head_dim_v, 40);
      const std::vector<float> q = random_floats(static_cast<size_t>(c.p.n_head) * c.p.head_dim_k, 41, -2.0f, 2.0f);
      const std::vector<double> want = attention_reference(q, c.q_pos, n_kv, kv, c.p);
      std::vector<float> scalar_out;
      for (CpuVariant v : test::variants_under_test()) {
        SCOPED_TRACE(std::string(dtype_name(type)) + " " + c.name + " " + test::variant_label(v));
        test::VariantScope scope(v);
        std::vector<float> out(want.size(), 123.0f), scratch;
        attention(q.data(), c.q_pos, n_kv, kv.span, c.p, out.data(), scratch);
        // F16 probabilities carry a relative rounding of 2^-11
        const double tol = type == DType::kF16 ? 2e-3 : 2e-5;
        for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], tol) << "at " << i;
        if (v == CpuVariant::kScalar) {
          scalar_out = out;
        } else if (!scalar_out.empty()) {
          for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], scalar_out[i], 2e-5) << "at " << i;
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
    const PagedKv kv = make_kv(DType::kF16, n_kv, block_tokens, p.n_head_kv, head_dim, head_dim, 60);
    const std::vector<float> q = random_floats(static_cast<size_t>(p.n_head) * head_dim, 61, -2.0f, 2.0f);
    for (const auto& [params, q_pos] : {std::pair{p, 299}, std::pair{p, 150}, std::pair{window, 250}}) {
      const std::vector<double> want = attention_reference(q, q_pos, n_kv, kv, params);
      for (CpuVariant v : test::variants_under_test()) {
        SCOPED_TRACE("head_dim " + std::to_string(head_dim) + " q_pos " + std::to_string(q_pos) + " " +
                     test::variant_label(v));
        test::VariantScope scope(v);
        std::vector<float> out(want.size(), 123.0f), scratch;
        attention(q.data(), q_pos, n_kv, kv.span, params, out.data(), scratch);
        for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 2e-3) << "at " << i;
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
  const PagedKv kv = make_kv(DType::kF16, n_kv, 16, p.n_head_kv, head_dim, head_dim, 70);
  const std::vector<float> q = random_floats(static_cast<size_t>(p.n_head) * head_dim, 71, -2.0f, 2.0f);
  for (CpuVariant v : test::variants_under_test()) {
    SCOPED_TRACE(test::variant_label(v));
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
  auto r = kv_store_row(DType::kQ4_K, x.data(), buf.data(), 64);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnsupported);
  EXPECT_FALSE(kv_load_row(DType::kBF16, buf.data(), back.data(), 64).ok());
}

}  // namespace
}  // namespace hearth::kernels
