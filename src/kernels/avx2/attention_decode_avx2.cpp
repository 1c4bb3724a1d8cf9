// AVX2 attention of one query token (a decode step) over an F16, Q8_0 or Q4_0 paged KV cache,
// which otherwise takes the portable path (one dot_f16 / dequantized row per key and head) on
// AVX2 machines; F32 caches keep that path, and a transposed K (as the engine keeps an F16
// cache) and a BF16 cache's pairs go to attention_decode_kt_avx2.cpp.
// - F16: Q rounded to F16, each converted 8-element key (value) chunk used by up to 4 query
//   heads of the GQA group, Q.K and the values multiply-added in F32 (FMA: one rounding where
//   the scalar path multiplies, then adds), probabilities rounded to F16, as the scalar path;
// - Q is quantized to Q8_0 once per head per step; each key's Q.K is an integer dot product per
//   32-element block (maddubs/madd: |k| x q with k's sign for Q8_0 keys, the unsigned nibbles
//   x q minus 8 x sum(q) for Q4_0), reduced over lanes in integers for 8 keys at once and then
//   scaled by the two block scales: the scalar reference's arithmetic, the same integers;
// - keys are walked in blocks of 8, every KV head of the call per block, the rows
//   32 keys ahead prefetched into L2 a share of the rows per KV head (kernels/decode_prefetch.h); the
//   query heads of a GQA group (up to 4 per pass) share each loaded key;
// - the 8 keys' lane sums end in one register, where scale, softcap, maximum and exp run 8
//   lanes wide; the softmax sum is in double, as the scalar kernel; attention sinks (gpt-oss)
//   join each head's maximum and sum (a key part leaves them to attention_merge);
// - each value row is converted to F32 once and multiply-added into the accumulators of up to 4
//   heads of the group (times probability, or probability x block scale), which stay in
//   registers over the 8 keys of a block (before: loaded and stored per key and head, F16 decode
//   1.45-2x slower).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/avx2/attention_decode_kt_avx2.h"
#include "kernels/avx2/avx2_helpers.h"
#include "kernels/avx2/simd_traits_avx2.h"
#include "kernels/avx2/vector_math_avx2.h"
#include "kernels/decode_prefetch.h"
#include "kernels/decode_softmax_simd.h"
#include "kernels/decode_step_span.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "tensor/fp16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace hearth::kernels {
namespace {

constexpr int kMaxHeadDim = 256;
constexpr int kKeyBlock = 8;
constexpr int kHeadsPerPass = 4;

inline const uint8_t* kv_row(const uint8_t* const* blocks, int32_t block_tokens, size_t row_bytes, int32_t pos) {
  return blocks[pos / block_tokens] + static_cast<size_t>(pos % block_tokens) * row_bytes;
}

template <DType T>
size_t head_offset(int kvh, int d) {
  if constexpr (T == DType::kF16) return static_cast<size_t>(kvh) * d * 2;
  return static_cast<size_t>(kvh) * d / kQK * (T == DType::kQ8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ4_0));
}

// One 32-element block of a query head quantized to Q8_0: its bytes (element order, which is
// also the order nibbles_32 gives a Q4_0 key block), -8 x the sum of each lane's 4 bytes (the
// offset of Q4_0's unsigned nibbles) and its scale.
struct alignas(32) QBlock {
  int8_t q[32];
  int32_t corr[8];
  float d;
};

void prepare_q_blocks(const float* qh, int dk, QBlock* out) {
  BlockQ8_0 b[kMaxHeadDim / kQK];
  quantize_row_q8_0(qh, b, dk);
  for (int i = 0; i < dk / kQK; ++i) {
    for (int e = 0; e < kQK; ++e) out[i].q[e] = b[i].qs[e];
    for (int l = 0; l < 8; ++l) {
      out[i].corr[l] = -8 * (out[i].q[4 * l] + out[i].q[4 * l + 1] + out[i].q[4 * l + 2] + out[i].q[4 * l + 3]);
    }
    out[i].d = fp16_to_fp32(b[i].d);
  }
}

// Lane r of the result = the sum of the 8 lanes of part[r].
inline __m256 reduce_rows_8(const __m256 part[8]) {
  const __m256 t0 = _mm256_hadd_ps(part[0], part[1]), t1 = _mm256_hadd_ps(part[2], part[3]);
  const __m256 t2 = _mm256_hadd_ps(part[4], part[5]), t3 = _mm256_hadd_ps(part[6], part[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// Lane r of the result = the (exact) sum of the 8 int32 lanes of part[r].
inline __m256i reduce_rows_8_epi32(const __m256i part[8]) {
  const __m256i t0 = _mm256_hadd_epi32(part[0], part[1]), t1 = _mm256_hadd_epi32(part[2], part[3]);
  const __m256i t2 = _mm256_hadd_epi32(part[4], part[5]), t3 = _mm256_hadd_epi32(part[6], part[7]);
  const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
  return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

// One head's 8 scores: scaled, soft-capped where the model does (the first m), stored.
inline void store_score_row(__m256 s, int m, const AttentionParams& p, float* dst) {
  s = _mm256_mul_ps(s, _mm256_set1_ps(p.scale));
  if (p.softcap != 0.0f) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    for (int i = 0; i < m; ++i) lanes[i] = p.softcap * std::tanh(lanes[i] * (1.0f / p.softcap));
    s = _mm256_load_ps(lanes);
  }
  _mm256_storeu_ps(dst, s);
}

// The scores of gn heads from their per-key partial sums (part[h][i]: key i's 8 lanes): summed,
// scaled, soft-capped where the model does, stored n_pad apart.
void store_scores(const __m256 (*part)[kKeyBlock], int gn, int m, const AttentionParams& p, int32_t n_pad, float* dst) {
  for (int h = 0; h < gn; ++h) store_score_row(reduce_rows_8(part[h]), m, p, dst + static_cast<size_t>(h) * n_pad);
}

// Scores of the m (<= 8) keys at rows for gn (<= 4) query heads (their QBlocks nb apart) into
// dst (the heads' rows n_pad apart). Block by block: each key's integer products per head
// (maddubs/madd), reduced over lanes in integers for the 8 keys at once, so only the 8 exact
// block sums are converted and scaled (key scales x the head's query scale) per head and block
// (before: convert, scale and multiply-add per key, head and block).
template <DType T>
void score_block(const uint8_t* const* rows, int m, size_t k_off, int nb, const QBlock* qb, int gn,
                 const AttentionParams& p, int32_t n_pad, float* dst) {
  __m256 acc[kHeadsPerPass];
  for (int h = 0; h < kHeadsPerPass; ++h) acc[h] = _mm256_setzero_ps();
  for (int b = 0; b < nb; ++b) {
    __m256i part[kHeadsPerPass][kKeyBlock];
    uint16_t ds[kKeyBlock] = {};  // the 8 keys' scales of block b (0 past m)
    for (int i = 0; i < kKeyBlock; ++i) {
      if (i >= m) {
        for (int h = 0; h < gn; ++h) part[h][i] = _mm256_setzero_si256();
        continue;
      }
      const uint8_t* head = rows[i] + k_off;
      __m256i k, k_abs;
      if constexpr (T == DType::kQ8_0) {
        const BlockQ8_0& x = reinterpret_cast<const BlockQ8_0*>(head)[b];
        k = load256(x.qs);
        k_abs = _mm256_sign_epi8(k, k);
        ds[i] = x.d;
      } else {
        const BlockQ4_0& x = reinterpret_cast<const BlockQ4_0*>(head)[b];
        k = k_abs = nibbles_32(x.qs);
        ds[i] = x.d;
      }
      for (int h = 0; h < gn; ++h) {
        const QBlock& x = qb[static_cast<size_t>(h) * nb + b];
        const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(x.q));
        if constexpr (T == DType::kQ8_0) {
          part[h][i] = dot_u8_s8(k_abs, _mm256_sign_epi8(q, k));
        } else {
          part[h][i] = _mm256_add_epi32(dot_u8_s8(k_abs, q), _mm256_load_si256(reinterpret_cast<const __m256i*>(x.corr)));
        }
      }
    }
    const __m256 dk = _mm256_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(ds[0]), static_cast<int16_t>(ds[1]),
                                                     static_cast<int16_t>(ds[2]), static_cast<int16_t>(ds[3]),
                                                     static_cast<int16_t>(ds[4]), static_cast<int16_t>(ds[5]),
                                                     static_cast<int16_t>(ds[6]), static_cast<int16_t>(ds[7])));
    for (int h = 0; h < gn; ++h) {
      const __m256 sums = _mm256_cvtepi32_ps(reduce_rows_8_epi32(part[h]));
      acc[h] = _mm256_fmadd_ps(sums, _mm256_mul_ps(dk, _mm256_set1_ps(qb[static_cast<size_t>(h) * nb + b].d)), acc[h]);
    }
  }
  for (int h = 0; h < gn; ++h) store_score_row(acc[h], m, p, dst + static_cast<size_t>(h) * n_pad);
}

// out[h] += probs[h][i] * V(rows[i]) for the m (<= 8) keys at rows and gn heads (output rows
// dv apart, probabilities n_pad apart) of a Q8_0 / Q4_0 cache. The weights probability x block
// scale are formed 8 keys at a time; then, half a block (16 values) at a time, each key's half
// is converted once and multiply-added into the accumulators of up to 4 heads, which stay in
// registers over the 8 keys (8 independent chains: the FMA units stay busy).
template <DType T>
void value_block(const uint8_t* const* rows, int m, size_t v_off, int nb, const float* probs, int32_t n_pad, int gn,
                 float* out, int dv) {
  alignas(32) float w[kHeadsPerPass][kKeyBlock];
  for (int h0 = 0; h0 < gn; h0 += kHeadsPerPass) {
    const int hn = std::min(kHeadsPerPass, gn - h0);
    for (int b = 0; b < nb; ++b) {
      alignas(16) uint16_t d16[kKeyBlock] = {};
      for (int i = 0; i < m; ++i) {
        const uint8_t* head = rows[i] + v_off;
        d16[i] = kv_block_scale_bits<T>(head, b);
      }
      const __m256 d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d16)));
      for (int h = 0; h < hn; ++h) {
        _mm256_store_ps(w[h], _mm256_mul_ps(_mm256_loadu_ps(probs + static_cast<size_t>(h0 + h) * n_pad), d));
      }
      for (int half = 0; half < 2; ++half) {
        __m256 acc[kHeadsPerPass][2] = {};
        for (int h = 0; h < kHeadsPerPass; ++h) {
          if (h >= hn) break;
          const float* o = out + static_cast<int64_t>(h0 + h) * dv + 32 * b + 16 * half;
          acc[h][0] = _mm256_loadu_ps(o);
          acc[h][1] = _mm256_loadu_ps(o + 8);
        }
        for (int i = 0; i < m; ++i) {
          const uint8_t* head = rows[i] + v_off;
          __m128i x;
          if constexpr (T == DType::kQ8_0) {
            x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const BlockQ8_0*>(head)[b].qs + 16 * half));
          } else {
            const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const BlockQ4_0*>(head)[b].qs));
            x = _mm_sub_epi8(_mm_and_si128(half == 0 ? q : _mm_srli_epi16(q, 4), _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
          }
          const __m256 v0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x));
          const __m256 v1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(x, 8)));
          for (int h = 0; h < kHeadsPerPass; ++h) {
            if (h >= hn) break;
            const __m256 wt = _mm256_broadcast_ss(&w[h][i]);
            acc[h][0] = _mm256_fmadd_ps(v0, wt, acc[h][0]);
            acc[h][1] = _mm256_fmadd_ps(v1, wt, acc[h][1]);
          }
        }
        for (int h = 0; h < kHeadsPerPass; ++h) {
          if (h >= hn) break;
          float* o = out + static_cast<int64_t>(h0 + h) * dv + 32 * b + 16 * half;
          _mm256_storeu_ps(o, acc[h][0]);
          _mm256_storeu_ps(o + 8, acc[h][1]);
        }
      }
    }
  }
}

// F16 cache: scores of the m (<= 8) keys at rows for gn (<= 4) query heads (Q rounded to F16,
// as F32, dk floats apart): each 8-element key chunk is converted once for all gn heads and
// multiply-added in F32 (the scalar dot_f16 multiplies, then adds, in another order).
void score_block_f16(const uint8_t* const* rows, int m, size_t k_off, int dk, const float* qf, int gn,
                     const AttentionParams& p, int32_t n_pad, float* dst) {
  __m256 part[kHeadsPerPass][kKeyBlock];
  for (int i = 0; i < kKeyBlock; ++i) {
    if (i >= m) {
      for (int h = 0; h < gn; ++h) part[h][i] = _mm256_setzero_ps();
      continue;
    }
    const auto* k16 = reinterpret_cast<const uint16_t*>(rows[i] + k_off);
    __m256 acc[kHeadsPerPass];
    for (int c = 0; c < dk; c += 8) {
      const __m256 k = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k16 + c)));
      for (int h = 0; h < gn; ++h) {
        const __m256 qc = _mm256_loadu_ps(qf + static_cast<size_t>(h) * dk + c);
        acc[h] = c == 0 ? _mm256_mul_ps(qc, k) : _mm256_fmadd_ps(qc, k, acc[h]);
      }
    }
    for (int h = 0; h < gn; ++h) part[h][i] = acc[h];
  }
  store_scores(part, gn, m, p, n_pad, dst);
}

// F16 cache: out[h] += probs[h][i] * V(rows[i]) (probabilities already F16-rounded), 16 values
// at a time: each key's two 8-value chunks converted once and multiply-added (one rounding, as
// the AVX-512 kernel) into the accumulators of up to 4 heads, which stay in registers over the
// 8 keys (8 independent chains).
void value_block_f16(const uint8_t* const* rows, int m, size_t v_off, const float* probs, int32_t n_pad, int gn,
                     float* out, int dv) {
  for (int h0 = 0; h0 < gn; h0 += kHeadsPerPass) {
    const int hn = std::min(kHeadsPerPass, gn - h0);
    for (int c = 0; c < dv; c += 16) {
      const bool two = c + 8 < dv;  // dv is a multiple of 8: the last chunk may be single
      __m256 acc[kHeadsPerPass][2] = {};
      for (int h = 0; h < kHeadsPerPass; ++h) {
        if (h >= hn) break;
        const float* o = out + static_cast<int64_t>(h0 + h) * dv + c;
        acc[h][0] = _mm256_loadu_ps(o);
        acc[h][1] = two ? _mm256_loadu_ps(o + 8) : _mm256_setzero_ps();
      }
      for (int i = 0; i < m; ++i) {
        const auto* v16 = reinterpret_cast<const uint16_t*>(rows[i] + v_off) + c;
        const __m256 v0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v16)));
        const __m256 v1 = two ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v16 + 8))) : _mm256_setzero_ps();
        for (int h = 0; h < kHeadsPerPass; ++h) {
          if (h >= hn) break;
          const __m256 pr = _mm256_broadcast_ss(probs + static_cast<size_t>(h0 + h) * n_pad + i);
          acc[h][0] = _mm256_fmadd_ps(v0, pr, acc[h][0]);
          acc[h][1] = _mm256_fmadd_ps(v1, pr, acc[h][1]);
        }
      }
      for (int h = 0; h < kHeadsPerPass; ++h) {
        if (h >= hn) break;
        float* o = out + static_cast<int64_t>(h0 + h) * dv + c;
        _mm256_storeu_ps(o, acc[h][0]);
        if (two) _mm256_storeu_ps(o + 8, acc[h][1]);
      }
    }
  }
}

template <DType T>
bool attention_step(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                    int32_t head_begin, int32_t head_end, const KeyPart* part, float* out, std::vector<float>& scratch) {
  const int dk = p.head_dim_k, dv = p.head_dim_v;
  const int vec_step = T == DType::kF16 ? 8 : kQK;
  if (dk % vec_step != 0 || dv % vec_step != 0 || dk > kMaxHeadDim || dv > kMaxHeadDim || p.n_head_kv <= 0 ||
      p.n_head % p.n_head_kv != 0) {
    return false;
  }
  const DecodeStepSpan span = begin_decode_step(q_pos, n_kv, p, head_begin, head_end, part, out);
  if (!span.has_work()) return true;
  head_begin = span.head_begin;
  head_end = span.head_end;
  const int32_t lo = span.lo, hi = span.hi;
  const int full_group = p.n_head / p.n_head_kv;
  const int n_heads = head_end - head_begin;
  const int32_t n = hi - lo + 1;
  const int32_t n_pad = (n + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
  const int nbk = dk / kQK, nbv = dv / kQK;
  const int kvh_first = head_begin / full_group, kvh_last = (head_end - 1) / full_group;
  // scratch: scores then probabilities [n_heads][n_pad], then [n_heads][nbk] QBlocks (32-byte aligned)
  constexpr size_t kFloatsPerQBlock = sizeof(QBlock) / sizeof(float);
  // (for an F16 cache: [n_heads][dk] floats of Q rounded to F16)
  scratch.resize(static_cast<size_t>(n_heads) * n_pad + static_cast<size_t>(n_heads) * nbk * kFloatsPerQBlock +
                 static_cast<size_t>(n_heads) * dk + 8);
  float* scores = scratch.data();
  auto* qb = reinterpret_cast<QBlock*>(
      (reinterpret_cast<uintptr_t>(scores + static_cast<size_t>(n_heads) * n_pad) + 31) & ~static_cast<uintptr_t>(31));
  float* qf = reinterpret_cast<float*>(qb);
  for (int h = 0; h < n_heads && T == DType::kF16; ++h) {
    for (int c = 0; c < dk; c += 8) {
      const __m256 x = _mm256_loadu_ps(q + static_cast<int64_t>(head_begin + h) * dk + c);
      _mm256_storeu_ps(qf + static_cast<size_t>(h) * dk + c, _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)));
    }
  }
  for (int h = 0; h < n_heads && T != DType::kF16; ++h) {
    prepare_q_blocks(q + static_cast<int64_t>(head_begin + h) * dk, dk, qb + static_cast<size_t>(h) * nbk);
  }
  const size_t k_begin = head_offset<T>(kvh_first, dk), k_end = head_offset<T>(kvh_last + 1, dk);
  const size_t v_begin = head_offset<T>(kvh_first, dv), v_end = head_offset<T>(kvh_last + 1, dv);
  const int n_kvh = kvh_last - kvh_first + 1;

  for (int32_t j0 = 0; j0 < n; j0 += kKeyBlock) {
    const int m = std::min<int32_t>(kKeyBlock, n - j0);
    const RowsAhead ahead = rows_ahead(kv, lo, n, n_pad, j0, kKeyBlock);
    const uint8_t* rows[kKeyBlock];  // the block's rows, found once for every KV head
    for (int i = 0; i < m; ++i) rows[i] = kv_row(kv.k_blocks, kv.block_tokens, kv.k_row_bytes, lo + j0 + i);
    for (int kvh = kvh_first; kvh <= kvh_last; ++kvh) {
      prefetch_share(ahead, kvh - kvh_first, n_kvh, k_begin, k_end, v_begin, v_end);
      const int h0 = std::max(kvh * full_group, head_begin);
      const int gsize = std::min((kvh + 1) * full_group, head_end) - h0;
      for (int g0 = 0; g0 < gsize; g0 += kHeadsPerPass) {
        const int r = h0 - head_begin + g0;
        if constexpr (T == DType::kF16) {
          score_block_f16(rows, m, head_offset<T>(kvh, dk), dk, qf + static_cast<size_t>(r) * dk,
                          std::min(kHeadsPerPass, gsize - g0), p, n_pad, scores + static_cast<size_t>(r) * n_pad + j0);
        } else {
          score_block<T>(rows, m, head_offset<T>(kvh, dk), nbk, qb + static_cast<size_t>(r) * nbk,
                         std::min(kHeadsPerPass, gsize - g0), p, n_pad, scores + static_cast<size_t>(r) * n_pad + j0);
        }
      }
    }
  }

  for (int h = 0; h < n_heads; ++h) {
    for (int32_t j = n; j < n_pad; ++j) scores[static_cast<size_t>(h) * n_pad + j] = -INFINITY;
  }
  decode_softmax<Avx2Traits>(scores, n_heads, n_pad, head_begin, p, part, T == DType::kF16);

  for (int32_t j0 = 0; j0 < n; j0 += kKeyBlock) {
    const int m = std::min<int32_t>(kKeyBlock, n - j0);
    const RowsAhead ahead = rows_ahead(kv, lo, n, n_pad, n_pad + j0, kKeyBlock);
    const uint8_t* rows[kKeyBlock];  // the block's rows, found once for every KV head
    for (int i = 0; i < m; ++i) rows[i] = kv_row(kv.v_blocks, kv.block_tokens, kv.v_row_bytes, lo + j0 + i);
    for (int kvh = kvh_first; kvh <= kvh_last; ++kvh) {
      prefetch_share(ahead, kvh - kvh_first, n_kvh, 0, 0, v_begin, v_end);
      const int h0 = std::max(kvh * full_group, head_begin);
      const int gsize = std::min((kvh + 1) * full_group, head_end) - h0;
      if constexpr (T == DType::kF16) {
        value_block_f16(rows, m, head_offset<T>(kvh, dv), scores + static_cast<size_t>(h0 - head_begin) * n_pad + j0, n_pad,
                        gsize, out + static_cast<int64_t>(h0) * dv, dv);
        continue;
      }
      value_block<T>(rows, m, head_offset<T>(kvh, dv), nbv, scores + static_cast<size_t>(h0 - head_begin) * n_pad + j0,
                     n_pad, gsize, out + static_cast<int64_t>(h0) * dv, dv);
    }
  }
  return true;
}

bool attention_decode(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                      int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                      std::vector<float>& scratch) {
  if (kv.by_head) return attention_decode_kt_avx2(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
  if (kv.type == DType::kBF16) return attention_decode_bf16_avx2(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
  switch (kv.type) {
    case DType::kF16: return attention_step<DType::kF16>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
    case DType::kQ8_0: return attention_step<DType::kQ8_0>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
    case DType::kQ4_0: return attention_step<DType::kQ4_0>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
    default: return false;
  }
}

}  // namespace

void fill_avx2_attention_decode_kernels(KernelTable& t) { t.attention_decode = attention_decode; }

}  // namespace hearth::kernels
