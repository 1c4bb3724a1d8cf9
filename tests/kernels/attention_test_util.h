// Test helpers for the attention kernels: a paged KV cache filled with random rows (and the
// floats it holds), and attention of one query token in double precision.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

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

// by_head: K stored by element and V by head (KvSpan::by_head; F16 only).
PagedKv make_kv(DType type, int n_kv, int block_tokens, int n_head_kv, int dk, int dv, uint32_t seed,
                bool by_head = false) {
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
    std::vector<float> kf(k_elems), vf(v_elems);
    if (type == DType::kBF16) {  // pairs: K by element, V by token
      uint8_t* kb = kv.k_storage[j / block_tokens].data();
      uint8_t* vb = kv.v_storage[j / block_tokens].data();
      kv_store_key_paired(k.data(), kb, block_tokens, j % block_tokens, k_elems);
      kv_store_value_paired(v.data(), vb, block_tokens, dv, j % block_tokens, v_elems);
      kv_load_key_paired(kb, block_tokens, j % block_tokens, 0, k_elems, kf.data());
      kv_load_value_paired(vb, block_tokens, dv, j % block_tokens, 0, v_elems, vf.data());
      kv.k_values.push_back(kf);
      kv.v_values.push_back(vf);
      continue;
    }
    if (by_head) {
      uint8_t* block = kv.k_storage[j / block_tokens].data();
      kv_store_key_transposed(k.data(), block, block_tokens, j % block_tokens, k_elems);
      std::vector<uint16_t> k16(k_elems);
      kv_load_key_transposed(block, block_tokens, j % block_tokens, 0, k_elems, k16.data());
      for (int64_t e = 0; e < k_elems; ++e) kf[e] = fp16_to_fp32(k16[e]);
      uint8_t* vb = kv.v_storage[j / block_tokens].data();
      kv_store_value_by_head(v.data(), vb, block_tokens, dv, j % block_tokens, v_elems);
      const auto* v16 = reinterpret_cast<const uint16_t*>(vb);
      for (int64_t e = 0; e < v_elems; ++e) vf[e] = fp16_to_fp32(v16[kv_value_by_head_index(block_tokens, dv, e, j % block_tokens)]);
      kv.k_values.push_back(kf);
      kv.v_values.push_back(vf);
      continue;
    }
    EXPECT_TRUE(kv_store_row(type, k.data(), kd, k_elems).ok());
    EXPECT_TRUE(kv_load_row(type, kd, kf.data(), k_elems).ok());
    EXPECT_TRUE(kv_store_row(type, v.data(), vd, v_elems).ok());
    EXPECT_TRUE(kv_load_row(type, vd, vf.data(), v_elems).ok());
    kv.k_values.push_back(kf);
    kv.v_values.push_back(vf);
  }
  for (auto& b : kv.k_storage) kv.k_ptrs.push_back(b.data());
  for (auto& b : kv.v_storage) kv.v_ptrs.push_back(b.data());
  kv.span = KvSpan{kv.k_ptrs.data(), kv.v_ptrs.data(), block_tokens, k_row, v_row, type, by_head};
  return kv;
}

// The caches the attention tests cover: every storage type, and F16 by head (K transposed, V by head: the
// layout the engine gives an F16 cache); BF16 is always stored in pairs.
struct CacheKind {
  DType type;
  bool by_head;
  std::string name() const { return std::string(dtype_name(type)) + (by_head ? " by head" : ""); }
};
inline std::vector<CacheKind> cache_kinds() {
  return {{DType::kF16, false}, {DType::kF16, true}, {DType::kF32, false}, {DType::kQ8_0, false}, {DType::kQ4_0, false},
          {DType::kBF16, false}};
}

// Two KV heads of head_dim, `group` query heads each, scaled by 1 / sqrt(head_dim).
inline AttentionParams grouped_params(int head_dim, int group) {
  AttentionParams p;
  p.n_head_kv = 2;
  p.n_head = 2 * group;
  p.head_dim_k = p.head_dim_v = head_dim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return p;
}

// The 16-bit caches in each layout the engine uses: F16 in rows and transposed, BF16 in pairs.
inline std::vector<CacheKind> long_span_kinds() {
  return {{DType::kF16, false}, {DType::kF16, true}, {DType::kBF16, false}};
}

// How far a decode step may be from the double-precision reference: rounding the probabilities
// to F16 moves each by up to 2^-11 of itself, to BF16 by up to 2^-8 (a value carries its
// probability times |v| <= 2); F32 and the quantized caches (whose reference holds the values
// they store) keep theirs in F32.
inline double decode_tolerance(DType type) {
  return type == DType::kF16 ? 2e-3 : type == DType::kBF16 ? 1e-2 : 2e-5;
}
// ... and two variants from each other: the same roundings, but a probability a variant's exp
// puts one F32 step away can round to the neighbouring BF16 (F16) value.
inline double variant_tolerance(DType type) { return type == DType::kBF16 ? 4e-3 : 2e-5; }

// The query as a decode step multiplies it with the keys: rounded to F16 (BF16) for an F16 (BF16) cache and
// quantized to Q8_0 per head for a Q8_0 / Q4_0 cache (decode_query); as given otherwise (and
// in the prefill tile, which keeps Q in F32 for every cache type).
std::vector<double> attention_reference(const std::vector<float>& q, int q_pos, int n_kv, const PagedKv& kv,
                                        const AttentionParams& p, bool decode_query = false) {
  std::vector<double> out(static_cast<size_t>(p.n_head) * p.head_dim_v, 0.0);
  const int group = p.n_head / p.n_head_kv;
  const bool q8 = decode_query && (kv.span.type == DType::kQ8_0 || kv.span.type == DType::kQ4_0);
  std::vector<float> q_used = q;
  if (q8) {
    std::vector<BlockQ8_0> blocks(p.head_dim_k / kQK);
    for (int h = 0; h < p.n_head; ++h) {
      quantize_row_q8_0(q.data() + static_cast<size_t>(h) * p.head_dim_k, blocks.data(), p.head_dim_k);
      dequantize_row_q8_0(blocks.data(), q_used.data() + static_cast<size_t>(h) * p.head_dim_k, p.head_dim_k);
    }
  }
  for (int h = 0; h < p.n_head; ++h) {
    const int kvh = h / group;
    std::vector<double> s(n_kv, -INFINITY);
    double max = -INFINITY;
    for (int j = 0; j < n_kv; ++j) {
      if (p.causal && j > q_pos) continue;
      if (p.window > 0 && j < q_pos - p.window + 1) continue;
      double d = 0.0;
      for (int c = 0; c < p.head_dim_k; ++c) {
        double qv = q_used[h * p.head_dim_k + c];
        if (kv.span.type == DType::kF16) qv = fp16_to_fp32(fp32_to_fp16(q[h * p.head_dim_k + c]));
        if (kv.span.type == DType::kBF16) qv = bf16_to_fp32(fp32_to_bf16(q[h * p.head_dim_k + c]));
        d += qv * kv.k_values[j][kvh * p.head_dim_k + c];
      }
      d *= p.scale;
      if (p.softcap != 0.0f) d = p.softcap * std::tanh(d / p.softcap);
      s[j] = d;
      max = std::max(max, d);
    }
    double sum = 0.0;
    if (p.sinks != nullptr) {  // the sink joins the denominator and carries no value
      max = std::max(max, static_cast<double>(p.sinks[h]));
      sum += std::exp(p.sinks[h] - max);
    }
    for (int j = 0; j < n_kv; ++j) sum += std::isinf(s[j]) ? 0.0 : std::exp(s[j] - max);
    for (int j = 0; j < n_kv; ++j) {
      if (std::isinf(s[j])) continue;
      const double prob = std::exp(s[j] - max) / sum;
      for (int c = 0; c < p.head_dim_v; ++c) out[h * p.head_dim_v + c] += prob * kv.v_values[j][kvh * p.head_dim_v + c];
    }
  }
  return out;
}

}  // namespace
}  // namespace hearth::kernels
