// Flash-style attention of a query tile (ops.h attention_tile): the dispatcher and the scalar
// reference. The reference runs the algorithm of the SIMD variants (flash_tile_simd.h) one row
// at a time: keys in tiles of kFlashKeys, a running maximum and sum per row, the output rescaled
// once per tile. Q is rounded to F16 for an F16 cache (as attention() does); scores,
// probabilities and sums are F32. A BF16 cache rounds Q, and the probabilities that weight V, to
// BF16 (the sums stay F32).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/flash_tile_simd.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth::kernels {

size_t attention_tile_work_floats(const AttentionParams& p) {
  const int dk = std::max(p.head_dim_k, 1), dv = std::max(p.head_dim_v, 1);
  const size_t reference = static_cast<size_t>(kFlashKeys) * (dk + dv + 1) + dk + dv;
  return std::max(reference, flash_work_floats(16, dk, dv));
}

namespace {

// Head kvh's d elements of the row at pos, as floats (any cache type dequantize_row reads).
void load_head(const KvSpan& kv, const uint8_t* const* blocks, size_t row_bytes, int32_t pos, int kvh, int d,
               float* dst) {
  const uint8_t* row = flash_kv_row(blocks, kv.block_tokens, row_bytes, pos);
  const auto offset = dtype_row_bytes(kv.type, static_cast<uint64_t>(kvh) * static_cast<uint64_t>(d));
  if (!offset.ok() || !dequantize_row(kv.type, row + *offset, dst, d).ok()) std::fill(dst, dst + d, 0.0f);
}

// Head kvh's d value elements at pos as floats (rows, by head, or a BF16 cache's token pairs).
void load_value_head(const KvSpan& kv, int32_t pos, int kvh, int d, float* dst) {
  if (kv.by_head) {
    const auto* v = reinterpret_cast<const uint16_t*>(kv.v_blocks[pos / kv.block_tokens]) +
                    kv_value_by_head_index(kv.block_tokens, d, static_cast<int64_t>(kvh) * d, pos % kv.block_tokens);
    for (int c = 0; c < d; ++c) dst[c] = fp16_to_fp32(v[c]);
    return;
  }
  if (kv.type == DType::kBF16) {
    kv_load_value_paired(kv.v_blocks[pos / kv.block_tokens], kv.block_tokens, d, pos % kv.block_tokens,
                         static_cast<int64_t>(kvh) * d, d, dst);
    return;
  }
  load_head(kv, kv.v_blocks, kv.v_row_bytes, pos, kvh, d, dst);
}

// Head kvh's dk key elements at pos as floats, for every K layout (rows, KvSpan::by_head,
// a BF16 cache's element pairs).
void load_key_head(const KvSpan& kv, int32_t pos, int kvh, int dk, float* dst) {
  if (kv.type == DType::kBF16) {
    kv_load_key_paired(kv.k_blocks[pos / kv.block_tokens], kv.block_tokens, pos % kv.block_tokens,
                       static_cast<int64_t>(kvh) * dk, dk, dst);
    return;
  }
  if (!kv.by_head) {
    load_head(kv, kv.k_blocks, kv.k_row_bytes, pos, kvh, dk, dst);
    return;
  }
  thread_local std::vector<uint16_t> k;
  k.resize(static_cast<size_t>(dk));
  kv_load_key_transposed(kv.k_blocks[pos / kv.block_tokens], kv.block_tokens, pos % kv.block_tokens,
                         static_cast<int64_t>(kvh) * dk, dk, k.data());
  for (int c = 0; c < dk; ++c) dst[c] = fp16_to_fp32(k[static_cast<size_t>(c)]);
}

}  // namespace

bool attention_tile_reference(const AttentionTile& t, const KvSpan& kv, const AttentionParams& p, float* work) {
  const int dk = p.head_dim_k, dv = p.head_dim_v;
  if (p.n_head_kv <= 0 || p.n_head <= 0 || dk <= 0 || dv <= 0) return true;
  const int group = std::max(1, p.n_head / p.n_head_kv);
  float* kf = work;                                   // kFlashKeys rows of dk
  float* vf = kf + static_cast<size_t>(kFlashKeys) * dk;  // kFlashKeys rows of dv
  float* s = vf + static_cast<size_t>(kFlashKeys) * dv;   // kFlashKeys scores
  float* qh = s + kFlashKeys;                          // dk
  float* acc = qh + dk;                                // dv
  const float inv_softcap = p.softcap != 0.0f ? 1.0f / p.softcap : 0.0f;
  for (int32_t tok = 0; tok < t.n_q; ++tok) {
    const int32_t pos = t.q_pos0 + tok;
    const int32_t hi = p.causal ? std::min(pos, t.n_kv - 1) : t.n_kv - 1;
    const int32_t lo = p.window > 0 ? std::max(0, pos - p.window + 1) : 0;
    for (int g = 0; g < group; ++g) {
      const int h = t.kv_head * group + g;
      const float* q = t.q + static_cast<int64_t>(tok) * t.q_stride + static_cast<int64_t>(h) * dk;
      for (int c = 0; c < dk; ++c) {
        qh[c] = kv.type == DType::kF16    ? fp16_to_fp32(fp32_to_fp16(q[c]))
                : kv.type == DType::kBF16 ? bf16_to_fp32(fp32_to_bf16(q[c]))
                                          : q[c];
      }
      std::fill(acc, acc + dv, 0.0f);
      float m = -INFINITY, l = 0.0f;
      for (int32_t j0 = lo; j0 <= hi; j0 += kFlashKeys) {
        const int nk = std::min<int32_t>(kFlashKeys, hi - j0 + 1);
        float tile_max = -INFINITY;
        for (int j = 0; j < nk; ++j) {
          load_key_head(kv, j0 + j, t.kv_head, dk, kf);
          float d = 0.0f;
          for (int c = 0; c < dk; ++c) d += qh[c] * kf[c];
          d *= p.scale;
          if (p.softcap != 0.0f) d = p.softcap * std::tanh(d * inv_softcap);
          s[j] = d;
          tile_max = std::max(tile_max, d);
        }
        const float m_new = std::max(m, tile_max);
        const float alpha = m == -INFINITY ? 0.0f : std::exp(m - m_new);
        float sum = 0.0f;
        for (int c = 0; c < dv; ++c) acc[c] *= alpha;
        for (int j = 0; j < nk; ++j) {
          const float e = std::exp(s[j] - m_new);
          sum += e;
          load_value_head(kv, j0 + j, t.kv_head, dv, vf);
          const float w = kv.type == DType::kBF16 ? bf16_to_fp32(fp32_to_bf16(e)) : e;
          for (int c = 0; c < dv; ++c) acc[c] += w * vf[c];
        }
        l = l * alpha + sum;
        m = m_new;
      }
      float* o = t.out + static_cast<int64_t>(tok) * t.out_stride + static_cast<int64_t>(h) * dv;
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      for (int c = 0; c < dv; ++c) o[c] = acc[c] * inv;
    }
  }
  return true;
}

void attention_tile(const AttentionTile& t, const KvSpan& kv, const AttentionParams& p, std::vector<float>& scratch) {
  const size_t need = attention_tile_work_floats(p);
  if (scratch.size() < need) scratch.resize(need);
  const KernelTable& k = active_kernels();
  if (k.attention_tile != nullptr && k.attention_tile(t, kv, p, scratch.data())) return;
  attention_tile_reference(t, kv, p, scratch.data());
}

}  // namespace hearth::kernels
