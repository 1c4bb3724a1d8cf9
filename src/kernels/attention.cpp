// Attention of one query token over a paged KV span, and the conversions of KV rows to and
// from the cache's storage type (and of K to and from a block stored by element). The F16 path mimics the ecosystem's CPU arithmetic: Q rounded
// to F16, Q.K products summed in F32, scale and softcap in F32, softmax in F32 (sum in
// double), probabilities rounded to F16 before they weight the F16 V rows. For a Q8_0 or Q4_0
// cache Q is quantized to Q8_0 once per head (as the ecosystem converts Q to the key type's dot
// partner), so Q.K is the matrix kernels' integer block dot product. A BF16 cache (pairs, see
// ops.h) rounds Q and the probabilities to BF16 instead, so every product is exact in F32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/decode_step_span.h"
#include "tensor/fp16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace hearth::kernels {
namespace {

size_t kv_elem_offset_bytes(DType type, int64_t elem) {
  switch (type) {
    case DType::kF16: return static_cast<size_t>(elem) * 2;
    case DType::kF32: return static_cast<size_t>(elem) * 4;
    case DType::kQ4_0: return static_cast<size_t>(elem / kQK) * sizeof(BlockQ4_0);  // elem % 32 == 0
    default: return static_cast<size_t>(elem / kQK) * sizeof(BlockQ8_0);  // Q8_0: elem % 32 == 0
  }
}

bool kv_type_supported(DType type) {
  return type == DType::kF16 || type == DType::kF32 || type == DType::kQ8_0 || type == DType::kQ4_0;
}

const uint8_t* kv_row(const uint8_t* const* blocks, int32_t block_tokens, size_t row_bytes, int32_t pos) {
  return blocks[pos / block_tokens] + static_cast<size_t>(pos % block_tokens) * row_bytes;
}

// Softmax of n scores whose denominator also holds exp(sink): the sink takes probability mass
// and has no value (sum in double, as the softmax kernel).
void softmax_with_sink(float* x, int64_t n, float sink) {
  float m = sink;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  double sum = std::exp(static_cast<double>(sink - m));
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace

static void attention_heads_any(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                         int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                         std::vector<float>& scratch);

void attention(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p, float* out,
               std::vector<float>& scratch) {
  attention_heads(q, q_pos, n_kv, kv, p, 0, p.n_head, out, scratch);
}

void attention_heads(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                     int32_t head_begin, int32_t head_end, float* out, std::vector<float>& scratch) {
  attention_heads_any(q, q_pos, n_kv, kv, p, head_begin, head_end, nullptr, out, scratch);
}

void attention_heads_part(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                          int32_t head_begin, int32_t head_end, const KeyPart& part, float* out,
                          std::vector<float>& scratch) {
  attention_heads_any(q, q_pos, n_kv, kv, p, head_begin, head_end, &part, out, scratch);
}

void attention_merge(int32_t n_parts, const float* const* parts, const float* const* stats, int32_t dv, float* out,
                     float sink) {
  float max = sink;
  for (int32_t i = 0; i < n_parts; ++i) max = std::max(max, stats[i][0]);
  std::fill(out, out + dv, 0.0f);
  if (max == -INFINITY) return;
  double total = sink == -INFINITY ? 0.0 : std::exp(static_cast<double>(sink) - max);  // the sink: a part with no value
  for (int32_t i = 0; i < n_parts; ++i) {
    if (stats[i][1] <= 0.0f) continue;
    total += static_cast<double>(stats[i][1]) * std::exp(static_cast<double>(stats[i][0]) - max);
  }
  for (int32_t i = 0; i < n_parts; ++i) {
    if (stats[i][1] <= 0.0f) continue;
    const auto w = static_cast<float>(static_cast<double>(stats[i][1]) * std::exp(static_cast<double>(stats[i][0]) - max) / total);
    for (int32_t d = 0; d < dv; ++d) out[d] += w * parts[i][d];
  }
}

static void attention_heads_any(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                         int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                         std::vector<float>& scratch) {
  const KernelTable& k = active_kernels();
  if (k.attention_decode != nullptr && k.attention_decode(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch)) {
    return;
  }
  const int dk = p.head_dim_k;
  const int dv = p.head_dim_v;
  const DecodeStepSpan span = begin_decode_step(q_pos, n_kv, p, head_begin, head_end, part, out);
  if (!span.has_work()) return;
  head_begin = span.head_begin;
  head_end = span.head_end;
  const int32_t lo = span.lo, hi = span.hi;
  float* stats = part != nullptr ? part->stats : nullptr;
  const int group = std::max(1, p.n_head / p.n_head_kv);
  const bool f16 = kv.type == DType::kF16;
  const bool bf16 = kv.type == DType::kBF16;  // pairs (kv_key_paired_index), every product exact
  const bool quantized = kv.type == DType::kQ8_0 || kv.type == DType::kQ4_0;
  const float inv_softcap = p.softcap != 0.0f ? 1.0f / p.softcap : 0.0f;  // scale, tanh, scale
  // scores, then (for Q8_0 / Q4_0 caches) one dequantized V head
  scratch.resize(static_cast<size_t>(n_kv) + static_cast<size_t>(std::max(dk, dv)));
  float* scores = scratch.data();
  float* deq = scratch.data() + n_kv;
  thread_local std::vector<uint16_t> q16, k16;  // k16: one key head gathered from a transposed block
  thread_local std::vector<float> qb;           // Q rounded to BF16
  thread_local std::vector<BlockQ8_0> q8;
  q16.resize(static_cast<size_t>(dk));
  k16.resize(static_cast<size_t>(dk));
  qb.resize(static_cast<size_t>(dk));
  q8.resize(static_cast<size_t>(dk / kQK));

  for (int h = head_begin; h < head_end; ++h) {
    const int kvh = std::min(h / group, p.n_head_kv - 1);
    const float* qh = q + static_cast<int64_t>(h) * dk;
    if (f16) fp32_to_fp16_row(qh, q16.data(), dk);
    if (quantized) quantize_row_q8_0(qh, q8.data(), dk);
    if (bf16) {
      for (int c = 0; c < dk; ++c) qb[static_cast<size_t>(c)] = bf16_to_fp32(fp32_to_bf16(qh[c]));
    }
    const size_t k_off = kv_elem_offset_bytes(kv.type, static_cast<int64_t>(kvh) * dk);
    const size_t v_off = kv_elem_offset_bytes(kv.type, static_cast<int64_t>(kvh) * dv);
    for (int32_t j = lo; j <= hi; ++j) {
      float s;
      if (bf16) {
        kv_load_key_paired(kv.k_blocks[j / kv.block_tokens], kv.block_tokens, j % kv.block_tokens,
                           static_cast<int64_t>(kvh) * dk, dk, deq);
        s = 0.0f;
        for (int c = 0; c < dk; ++c) s += qb[static_cast<size_t>(c)] * deq[c];
      } else if (f16 && kv.by_head) {
        kv_load_key_transposed(kv.k_blocks[j / kv.block_tokens], kv.block_tokens, j % kv.block_tokens,
                               static_cast<int64_t>(kvh) * dk, dk, k16.data());
        s = k.dot_f16(dk, q16.data(), k16.data());
      } else if (f16) {
        const uint8_t* krow = kv_row(kv.k_blocks, kv.block_tokens, kv.k_row_bytes, j) + k_off;
        s = k.dot_f16(dk, q16.data(), reinterpret_cast<const uint16_t*>(krow));
      } else {
        const uint8_t* krow = kv_row(kv.k_blocks, kv.block_tokens, kv.k_row_bytes, j) + k_off;
        s = quantized ? k.vec_dot[static_cast<int>(kv.type)](dk, krow, q8.data())
                      : k.vec_dot[static_cast<int>(DType::kF32)](dk, krow, qh);
      }
      s *= p.scale;
      if (p.softcap != 0.0f) s = p.softcap * std::tanh(s * inv_softcap);
      scores[j] = s;
    }
    if (stats != nullptr) {  // the part's maximum and sum, for attention_merge
      const float max = *std::max_element(scores + lo, scores + hi + 1);
      double sum = 0.0;
      for (int32_t j = lo; j <= hi; ++j) sum += std::exp(static_cast<double>(scores[j]) - max);
      stats[2 * h] = max;
      stats[2 * h + 1] = static_cast<float>(sum);
    }
    if (p.sinks != nullptr && stats == nullptr) {  // a part leaves the sink to the merge
      softmax_with_sink(scores + lo, hi - lo + 1, p.sinks[h]);
    } else {
      k.softmax(scores + lo, hi - lo + 1);
    }
    float* oh = out + static_cast<int64_t>(h) * dv;
    for (int32_t j = lo; j <= hi; ++j) {
      const float prob = scores[j];
      if (bf16) {
        kv_load_value_paired(kv.v_blocks[j / kv.block_tokens], kv.block_tokens, dv, j % kv.block_tokens,
                             static_cast<int64_t>(kvh) * dv, dv, deq);
        k.axpy_f32(dv, bf16_to_fp32(fp32_to_bf16(prob)), deq, oh);
        continue;
      }
      const uint8_t* vrow = kv.by_head ? kv.v_blocks[j / kv.block_tokens] +
                                             2 * kv_value_by_head_index(kv.block_tokens, dv, static_cast<int64_t>(kvh) * dv,
                                                                        j % kv.block_tokens)
                                       : kv_row(kv.v_blocks, kv.block_tokens, kv.v_row_bytes, j) + v_off;
      if (f16) {
        k.axpy_f16(dv, fp16_to_fp32(fp32_to_fp16(prob)), reinterpret_cast<const uint16_t*>(vrow), oh);
      } else if (quantized) {
        (void)dequantize_row(kv.type, vrow, deq, dv);
        k.axpy_f32(dv, prob, deq, oh);
      } else {
        k.axpy_f32(dv, prob, reinterpret_cast<const float*>(vrow), oh);
      }
    }
  }
}

Status kv_store_row(DType type, const float* x, void* dst, int64_t n) {
  if (n < 0) return make_error(ErrorKind::kInvalidArgument, "kv_store_row: negative length");
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
      return ok_status();
    case DType::kF16:
      fp32_to_fp16_row(x, static_cast<uint16_t*>(dst), n);
      return ok_status();
    case DType::kQ8_0:
    case DType::kQ4_0:
      if (n % kQK != 0) {
        return make_error(ErrorKind::kInvalidArgument, "kv_store_row: " + std::string(dtype_name(type)) +
                                                           " row length " + std::to_string(n) +
                                                           " is not a multiple of 32");
      }
      if (type == DType::kQ8_0) {
        active_kernels().quantize_act[static_cast<int>(DType::kQ8_0)](x, dst, n);
      } else {
        quantize_row_q4_0(x, static_cast<BlockQ4_0*>(dst), n);
      }
      return ok_status();
    case DType::kBF16:
      return make_error(ErrorKind::kInvalidArgument, "a BF16 KV cache stores pairs, not rows (kv_store_key_paired)");
    default:
      return make_error(ErrorKind::kUnsupported, "KV cache type " + std::string(dtype_name(type)) +
                                                     " is not supported (F16, F32, Q8_0 or Q4_0)");
  }
}

void kv_store_key_transposed(const float* x, uint8_t* block, int32_t block_tokens, int32_t offset, int64_t n) {
  auto* k = reinterpret_cast<uint16_t*>(block);
  for (int64_t e = 0; e < n; ++e) k[kv_key_transposed_index(block_tokens, e, offset)] = fp32_to_fp16(x[e]);
}

void kv_load_key_transposed(const uint8_t* block, int32_t block_tokens, int32_t offset, int64_t first, int64_t n,
                            uint16_t* dst) {
  const auto* k = reinterpret_cast<const uint16_t*>(block);
  for (int64_t e = 0; e < n; ++e) dst[e] = k[kv_key_transposed_index(block_tokens, first + e, offset)];
}

void kv_store_value_by_head(const float* x, uint8_t* block, int32_t block_tokens, int32_t head_dim, int32_t offset,
                            int64_t n) {
  auto* v = reinterpret_cast<uint16_t*>(block);
  for (int64_t e = 0; e < n; ++e) v[kv_value_by_head_index(block_tokens, head_dim, e, offset)] = fp32_to_fp16(x[e]);
}

void kv_store_key_paired(const float* x, uint8_t* block, int32_t block_tokens, int32_t offset, int64_t n) {
  auto* k = reinterpret_cast<uint16_t*>(block);
  for (int64_t e = 0; e < n; ++e) k[kv_key_paired_index(block_tokens, e, offset)] = fp32_to_bf16(x[e]);
}

void kv_store_value_paired(const float* x, uint8_t* block, int32_t block_tokens, int32_t head_dim, int32_t offset,
                           int64_t n) {
  auto* v = reinterpret_cast<uint16_t*>(block);
  for (int64_t e = 0; e < n; ++e) v[kv_value_paired_index(block_tokens, head_dim, e, offset)] = fp32_to_bf16(x[e]);
}

void kv_load_key_paired(const uint8_t* block, int32_t block_tokens, int32_t offset, int64_t first, int64_t n, float* dst) {
  const auto* k = reinterpret_cast<const uint16_t*>(block);
  for (int64_t e = 0; e < n; ++e) dst[e] = bf16_to_fp32(k[kv_key_paired_index(block_tokens, first + e, offset)]);
}

void kv_load_value_paired(const uint8_t* block, int32_t block_tokens, int32_t head_dim, int32_t offset, int64_t first,
                          int64_t n, float* dst) {
  const auto* v = reinterpret_cast<const uint16_t*>(block);
  for (int64_t e = 0; e < n; ++e) {
    dst[e] = bf16_to_fp32(v[kv_value_paired_index(block_tokens, head_dim, first + e, offset)]);
  }
}

Status kv_load_row(DType type, const void* src, float* dst, int64_t n) {
  if (!kv_type_supported(type)) {
    return make_error(ErrorKind::kUnsupported, "KV cache type " + std::string(dtype_name(type)) +
                                                   " is not supported (F16, F32, Q8_0 or Q4_0)");
  }
  return dequantize_row(type, src, dst, n);
}

}  // namespace hearth::kernels
