// AVX-512 attention of one query token (a decode step) over an F16, F32, Q8_0 or Q4_0 paged KV
// cache whose K is stored in rows (a transposed K, as the engine keeps an F16 cache, and a BF16
// cache's pairs go to attention_kt_avx512.cpp, or to avx512_bf16/ where the CPU has
// AVX512_BF16), written to stream the cache at memory speed:
// - keys are walked in blocks of 16, and for each block every KV head of the call is done
//   before the next block, so each K (then V) row is read whole and once, front to back, while
//   the rows two blocks ahead are prefetched into L2 a share of the rows per KV head
//   (kernels/decode_prefetch.h);
// - the query heads that share a KV head (GQA) use each converted key/value vector together;
// - scores are computed 16 keys at a time: one register of products per key, then a reduction
//   tree leaves the 16 scores in one register, where scale, softcap, maximum and exp run 16
//   lanes wide; keys i and i + 8 are paired (the tree's first level) as soon as both are
//   done, and for a full group of 4 heads at head size 64 the query vectors stay in registers
//   (one decode step at 4k keys, one thread: 628 -> 474 us; at head size 128, 1389 -> 1226).
// - attention sinks (gpt-oss) join each head's maximum and softmax sum (a key part leaves them
//   to attention_merge);
// - for Q8_0 and Q4_0 caches Q is quantized to Q8_0 once per step and each key's Q.K is a
//   VNNI integer dot product (vpdpbusd, 64 byte pairs per instruction); the lanes are reduced
//   in integers per block for 16 keys at once, and only the block sums are scaled; value rows
//   are converted to F32 once and weighted by probability x block scale.
// The arithmetic follows the scalar path: for an F16 cache Q and the probabilities are rounded
// to F16 (products and sums in F32, softmax sum in double); for F32 they stay F32; for the
// quantized caches Q.K is the exact integer block dot of the same Q8_0 query. Values are
// accumulated with FMA (the scalar axpy multiplies, then adds: within one rounding per key).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/avx512/attention_kt_avx512.h"
#include "kernels/avx512_bf16/attention_bf16_native.h"
#include "kernels/cpu_features.h"
#include "kernels/avx512/simd_traits_avx512.h"
#include "kernels/avx512/vector_math_avx512.h"
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
constexpr int kMaxVecs = kMaxHeadDim / 16;
constexpr int kKeyBlock = 16;

inline const uint8_t* kv_row(const uint8_t* const* blocks, int32_t block_tokens, size_t row_bytes, int32_t pos) {
  return blocks[pos / block_tokens] + static_cast<size_t>(pos % block_tokens) * row_bytes;
}

// A head's d elements of a cache row as d / 16 F32 vectors, per storage type.
template <DType T>
struct HeadRow {
  static size_t offset(int kvh, int d) {
    if constexpr (T == DType::kF16) return static_cast<size_t>(kvh) * d * 2;
    if constexpr (T == DType::kF32) return static_cast<size_t>(kvh) * d * 4;
    if constexpr (T == DType::kQ8_0) return static_cast<size_t>(kvh) * d / kQK * sizeof(BlockQ8_0);
    return static_cast<size_t>(kvh) * d / kQK * sizeof(BlockQ4_0);
  }
  static void load(const uint8_t* p, int nvec, __m512* v) {
    if constexpr (T == DType::kF16) {
      const auto* h = reinterpret_cast<const uint16_t*>(p);
      for (int c = 0; c < nvec; ++c) v[c] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + 16 * c)));
    } else if constexpr (T == DType::kF32) {
      const auto* f = reinterpret_cast<const float*>(p);
      for (int c = 0; c < nvec; ++c) v[c] = _mm512_loadu_ps(f + 16 * c);
    } else if constexpr (T == DType::kQ8_0) {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(p);
      for (int i = 0; i < nvec / 2; ++i) {
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(b[i].d));
        for (int h = 0; h < 2; ++h) {
          const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs + 16 * h));
          v[2 * i + h] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d);
        }
      }
    } else {  // Q4_0: element j is the low nibble of qs[j], j + 16 the high one, each minus 8
      const auto* b = reinterpret_cast<const BlockQ4_0*>(p);
      const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
      for (int i = 0; i < nvec / 2; ++i) {
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(b[i].d));
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low), eight);
        v[2 * i] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d);
        v[2 * i + 1] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d);
      }
    }
  }
};

constexpr bool is_quantized(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0; }

// One query head, quantized to Q8_0, laid out for vpdpbusd against a key head's 64-element
// chunks (two 32-element blocks): the 64 query bytes in the order the chunk's key bytes are
// loaded (Q8_0: block 0 then block 1; Q4_0: low nibbles of blocks 0 and 1, then high ones), the
// correction that makes the unsigned key bytes signed again (Q8_0 keys are loaded as k + 128,
// Q4_0 nibbles are k + 8: -offset x the lane's 4 query bytes), and Q's block scale per lane.
struct alignas(64) QChunk {
  int8_t q[64];
  int32_t corr[16];
  float d[16];
};
constexpr int kFloatsPerQChunk = static_cast<int>(sizeof(QChunk) / sizeof(float));

// Lanes (int32 / float) whose 4 key bytes come from the chunk's second block.
template <DType T>
constexpr __mmask16 second_block_lanes() { return T == DType::kQ8_0 ? 0xFF00 : 0xF0F0; }

template <DType T>
void prepare_q_chunks(const float* qh, int dk, QChunk* chunks) {
  BlockQ8_0 b[kMaxHeadDim / kQK];
  const int nb = dk / kQK;
  quantize_row_q8_0(qh, b, dk);
  for (int c = 0; c < (nb + 1) / 2; ++c) {
    QChunk& x = chunks[c];
    float d[2] = {0.0f, 0.0f};
    for (int half = 0; half < 2; ++half) {
      const int bi = 2 * c + half;
      for (int e = 0; e < kQK; ++e) {
        const int byte = T == DType::kQ8_0 ? half * 32 + e : (e < 16 ? 0 : 32) + half * 16 + (e & 15);
        x.q[byte] = bi < nb ? b[bi].qs[e] : 0;
      }
      if (bi < nb) d[half] = fp16_to_fp32(b[bi].d);
    }
    const int offset = T == DType::kQ8_0 ? 128 : 8;
    for (int l = 0; l < 16; ++l) {
      const int sum = x.q[4 * l] + x.q[4 * l + 1] + x.q[4 * l + 2] + x.q[4 * l + 3];
      x.corr[l] = -offset * sum;
      x.d[l] = d[((second_block_lanes<T>() >> l) & 1) != 0 ? 1 : 0];
    }
  }
}

// Chunk c of a key head (blocks 2c and 2c + 1 of nb) as unsigned bytes in the QChunk order
// (zero bytes for a missing second block).
template <DType T>
inline __m512i load_key_bytes(const uint8_t* head, int c, int nb) {
  const bool two = 2 * c + 1 < nb;
  if constexpr (T == DType::kQ8_0) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(head) + 2 * c;
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs));
    const __m256i hi = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)) : _mm256_setzero_si256();
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), _mm512_set1_epi8(-128));
  } else {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(head) + 2 * c;
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs));
    const __m128i y = two ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs)) : _mm_setzero_si128();
    const __m256i xy = _mm256_set_m128i(y, x);
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(xy), _mm256_srli_epi16(xy, 4), 1);
    return _mm512_and_si512(both, _mm512_set1_epi8(0x0F));
  }
}

// One head's scaled scores of m keys: soft-capped where the model does, stored at dst.
void store_head_scores(__m512 s, int m, const AttentionParams& p, float* dst) {
  if (p.softcap != 0.0f) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, s);
    for (int i = 0; i < m; ++i) lanes[i] = p.softcap * std::tanh(lanes[i] * (1.0f / p.softcap));
    s = _mm512_load_ps(lanes);
  }
  _mm512_storeu_ps(dst, s);
}

// Scores of the m (<= 16) keys at rows for gn (<= 4) query heads of a Q8_0 / Q4_0 cache (the
// heads' QChunks nch apart) into dst (rows n_pad apart), with the block sums kept in integers:
// per 64-element chunk, each key's products (one vpdpbusd per head) are reduced over lanes by an
// integer tree that pairs lanes of the same block first, leaving per 8 keys one register of
// their two block sums; those are scaled by key x query block scale and summed over the chunks,
// and the last level adds each chunk pair's two blocks. Per key, head and chunk that leaves the
// vpdpbusd and a share of the tree (before: also a conversion and two multiplies). The block
// sums are exact, as the scalar vec_dot's. NCH: chunks per key head (0: nch). FULL: gn is 4.
template <DType T, int NCH, bool FULL>
void score_block_q(const uint8_t* const* rows, int m, size_t k_off, int nch_rt, int nb, const QChunk* qc, int gn_rt,
                   const AttentionParams& p, int32_t n_pad, float* dst) {
  const int nch = NCH > 0 ? NCH : nch_rt;
  const int gn = FULL ? 4 : gn_rt;
  // lane bits: the block is bit kB (the QChunk layout); keys 2m / 2m + 1 are paired on bit 0,
  // then bit 1, then bit kT3; lane l of half h ends with key bit0(l) | bit1(l) << 1 |
  // bitT3(l) << 2 | h << 3 (block bitB(l)) until the last level pairs the blocks
  constexpr int kB = T == DType::kQ8_0 ? 3 : 2, kT3 = T == DType::kQ8_0 ? 2 : 3;
  __m512 sum[4][2];  // [head][keys 8h..8h + 7]: per key and block parity, the scaled block sums
  for (int c = 0; c < nch; ++c) {
    const bool two = 2 * c + 1 < nb;
    alignas(64) uint16_t d16[2][16] = {};  // the key block scales of chunk c in those lanes (0 past m)
    for (int i = 0; i < m; ++i) {
      const uint8_t* head = rows[i] + k_off;
      const int j = i & 7, lane = (j & 1) | (j & 2) | ((j >> 2) << kT3);
      d16[i >> 3][lane] = kv_block_scale_bits<T>(head, 2 * c);
      if (two) d16[i >> 3][lane | (1 << kB)] = kv_block_scale_bits<T>(head, 2 * c + 1);
    }
    __m512i y[4][2];  // [head][keys 8h..8h + 7]: per key and block, the exact integer sum
    for (int half = 0; half < 2; ++half) {
      __m512i x[4][2];
      for (int quarter = 0; quarter < 2; ++quarter) {
        __m512i w[4][2];
        for (int pair = 0; pair < 2; ++pair) {
          __m512i dot[4][2];
          for (int e = 0; e < 2; ++e) {
            const int i = 8 * half + 4 * quarter + 2 * pair + e;
            if (i >= m) {
              for (int h = 0; h < 4; ++h) dot[h][e] = _mm512_setzero_si512();
              continue;
            }
            const __m512i k = load_key_bytes<T>(rows[i] + k_off, c, nb);
            for (int h = 0; h < 4; ++h) {
              if (h >= gn) break;
              const QChunk& q = qc[static_cast<size_t>(h) * nch + c];
              dot[h][e] = _mm512_dpbusd_epi32(_mm512_load_si512(q.corr), k, _mm512_load_si512(q.q));
            }
          }
          for (int h = 0; h < 4; ++h) {
            if (h >= gn) break;
            w[h][pair] = pair_level<0>(dot[h][0], dot[h][1]);
          }
        }
        for (int h = 0; h < 4; ++h) {
          if (h >= gn) break;
          x[h][quarter] = pair_level<1>(w[h][0], w[h][1]);
        }
      }
      for (int h = 0; h < 4; ++h) {
        if (h >= gn) break;
        y[h][half] = pair_level<kT3>(x[h][0], x[h][1]);
      }
    }
    for (int half = 0; half < 2; ++half) {
      const __m512 dk = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d16[half])));
      for (int h = 0; h < 4; ++h) {
        if (h >= gn) break;
        const __m512 scale = _mm512_mul_ps(dk, _mm512_load_ps(qc[static_cast<size_t>(h) * nch + c].d));
        const __m512 v = _mm512_cvtepi32_ps(y[h][half]);
        sum[h][half] = c == 0 ? _mm512_mul_ps(v, scale) : _mm512_fmadd_ps(v, scale, sum[h][half]);
      }
    }
  }
  // lane l holds key bit0 | bit1 << 1 | bitT3 << 2 | bitB << 3: for Q4_0 bits 2 and 3 swap back
  const __m512i key_order = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
  const __m512 scale = _mm512_set1_ps(p.scale);
  for (int h = 0; h < 4; ++h) {
    if (h >= gn) break;
    __m512 s = pair_level<kB>(sum[h][0], sum[h][1]);
    if constexpr (T == DType::kQ4_0) s = _mm512_permutexvar_ps(key_order, s);
    s = _mm512_mul_ps(s, scale);
    store_head_scores(s, m, p, dst + static_cast<size_t>(h) * n_pad);
  }
}

// Block b of a Q8_0 / Q4_0 value head as two F32 vectors of its integers (unscaled).
template <DType T>
inline void load_value_block(const uint8_t* head, int b, __m512* v) {
  if constexpr (T == DType::kQ8_0) {
    const BlockQ8_0& x = reinterpret_cast<const BlockQ8_0*>(head)[b];
    for (int h = 0; h < 2; ++h) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs + 16 * h));
      v[h] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
    }
  } else {
    const BlockQ4_0& x = reinterpret_cast<const BlockQ4_0*>(head)[b];
    const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs));
    v[0] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_sub_epi8(_mm_and_si128(q, low), eight)));
    v[1] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low), eight)));
  }
}

// The scale of block b of the m (<= 16) value heads at rows (+ v_off), 16 lanes (0 past m).
template <DType T>
inline __m512 value_block_scales(const uint8_t* const* rows, int m, size_t v_off, int b) {
  alignas(32) uint16_t d[kKeyBlock] = {};
  for (int i = 0; i < m; ++i) {
    const uint8_t* head = rows[i] + v_off;
    d[i] = kv_block_scale_bits<T>(head, b);
  }
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d)));
}

constexpr int kMaxValueHeads = 8;  // heads per value pass: 16 / (dv / 16), at most 8 (dv = 32)

// out[h] += probs[h][i] * V(rows[i]) for the m (<= 16) keys at rows and gn heads of a Q8_0 /
// Q4_0 cache: the weights probability x block scale are formed 16 keys at a time, then each
// value block is converted once and every head adds it times its weight with one FMA per
// vector. VC: vectors per value head (0: run time, accumulators in memory; else the
// gn <= 16 / VC heads' accumulators stay in registers).
// FULL (VC > 0 only): gn is 16 / VC.
template <DType T, int VC, bool FULL>
void value_block_q(const uint8_t* const* rows, int m, size_t v_off, int vc_rt, const float* probs, int32_t n_pad,
                   int gn_rt, float* out, int dv) {
  const int vc = VC > 0 ? VC : vc_rt;
  const int gn = FULL && VC > 0 ? 16 / (VC > 0 ? VC : 16) : gn_rt;
  const int nb = vc / 2;
  alignas(64) float w[kMaxValueHeads][kMaxVecs / 2][kKeyBlock];
  for (int b = 0; b < nb; ++b) {
    const __m512 d = value_block_scales<T>(rows, m, v_off, b);
    for (int h = 0; h < gn; ++h) _mm512_store_ps(w[h][b], _mm512_mul_ps(_mm512_loadu_ps(probs + static_cast<size_t>(h) * n_pad), d));
  }
  if constexpr (VC > 0) {
    constexpr int kHeads = 16 / VC;
    __m512 acc[kHeads][VC];
    for (int h = 0; h < kHeads && h < gn; ++h) {
      for (int c = 0; c < VC; ++c) acc[h][c] = _mm512_loadu_ps(out + static_cast<int64_t>(h) * dv + 16 * c);
    }
    for (int i = 0; i < m; ++i) {
      const uint8_t* head = rows[i] + v_off;
      for (int b = 0; b < VC / 2; ++b) {
        __m512 v[2];
        load_value_block<T>(head, b, v);
        for (int h = 0; h < kHeads && h < gn; ++h) {
          const __m512 wt = _mm512_set1_ps(w[h][b][i]);
          acc[h][2 * b] = _mm512_fmadd_ps(v[0], wt, acc[h][2 * b]);
          acc[h][2 * b + 1] = _mm512_fmadd_ps(v[1], wt, acc[h][2 * b + 1]);
        }
      }
    }
    for (int h = 0; h < kHeads && h < gn; ++h) {
      for (int c = 0; c < VC; ++c) _mm512_storeu_ps(out + static_cast<int64_t>(h) * dv + 16 * c, acc[h][c]);
    }
  } else {
    for (int i = 0; i < m; ++i) {
      const uint8_t* head = rows[i] + v_off;
      for (int b = 0; b < nb; ++b) {
        __m512 v[2];
        load_value_block<T>(head, b, v);
        for (int h = 0; h < gn; ++h) {
          float* o = out + static_cast<int64_t>(h) * dv + 32 * b;
          const __m512 wt = _mm512_set1_ps(w[h][b][i]);
          _mm512_storeu_ps(o, _mm512_fmadd_ps(v[0], wt, _mm512_loadu_ps(o)));
          _mm512_storeu_ps(o + 16, _mm512_fmadd_ps(v[1], wt, _mm512_loadu_ps(o + 16)));
        }
      }
    }
  }
}

// The part of the call's heads that belongs to KV head kvh: heads [h0, h0 + n) of the call.
struct GroupRange {
  int h0, n;
};
inline GroupRange group_range(int kvh, int full_group, int head_begin, int head_end) {
  const int h0 = std::max(kvh * full_group, head_begin);
  return {h0, std::min((kvh + 1) * full_group, head_end) - h0};
}

// Scores of the m (<= 16) keys at rows for gn (<= 4) query heads (qf, dk floats apart) into
// dst (the heads' rows n_pad apart). KC: vectors per key row (0: kc, known at run time only).
// FULL: gn is 4 (a constant, so the head loops unroll without tests). Keys i and i + 8 are
// paired (the reduction tree's first level) as soon as both are done, so half the partial sums
// go through memory; for a full group at head size 64 the 4 heads' query vectors stay in
// registers (16 of the 32; at 128 they would take them all).
template <DType T, int KC, bool FULL>
void score_block_of(const uint8_t* const* rows, int m, size_t k_off, int kc_rt, const float* qf, int dk, int gn_rt,
                    const AttentionParams& p, int32_t n_pad, float* dst) {
  const int kc = KC > 0 ? KC : kc_rt;
  const int gn = FULL ? 4 : gn_rt;
  constexpr bool kQInRegisters = FULL && KC > 0 && KC <= 4;
  __m512 qr[4][kQInRegisters ? KC : 1];
  if constexpr (kQInRegisters) {
    for (int h = 0; h < 4; ++h) {
      for (int c = 0; c < KC; ++c) qr[h][c] = _mm512_loadu_ps(qf + static_cast<size_t>(h) * dk + 16 * c);
    }
  }
  auto q_vec = [&](int h, int c) {
    if constexpr (kQInRegisters) return qr[h][c];
    return _mm512_loadu_ps(qf + static_cast<size_t>(h) * dk + 16 * c);
  };
  auto key_products = [&](int i, __m512* acc) {
    if (i >= m) {
      for (int h = 0; h < gn; ++h) acc[h] = _mm512_setzero_ps();
      return;
    }
    __m512 k[KC > 0 ? KC : kMaxVecs];
    HeadRow<T>::load(rows[i] + k_off, kc, k);
    for (int h = 0; h < gn; ++h) {
      acc[h] = _mm512_mul_ps(q_vec(h, 0), k[0]);
      for (int c = 1; c < kc; ++c) acc[h] = _mm512_fmadd_ps(q_vec(h, c), k[c], acc[h]);
    }
  };
  alignas(64) float paired[4][kKeyBlock / 2][16];
  for (int i = 0; i < kKeyBlock / 2; ++i) {
    __m512 a[4], b[4];
    key_products(i, a);
    key_products(i + kKeyBlock / 2, b);
    for (int h = 0; h < gn; ++h) _mm512_store_ps(paired[h][i], pair_level<3>(a[h], b[h]));
  }
  const __m512 scale = _mm512_set1_ps(p.scale);
  for (int h = 0; h < gn; ++h) {
    __m512 w[kKeyBlock / 2];
    for (int i = 0; i < kKeyBlock / 2; ++i) w[i] = _mm512_load_ps(paired[h][i]);
    store_head_scores(_mm512_mul_ps(reduce_paired_rows_16(w), scale), m, p, dst + static_cast<size_t>(h) * n_pad);
  }
}

// out[h] += probs[h][i] * V(rows[i]) for the m (<= 16) keys at rows and gn heads whose
// accumulators fit 16 registers (output rows dv apart, probabilities n_pad apart); each value
// vector is converted once and multiply-added (one rounding: half the instructions of the scalar
// axpy's multiply, then add, on the step's busiest loop).
// FULL (VC > 0 only): gn is 16 / VC.
template <DType T, int VC, bool FULL>
void value_block_of(const uint8_t* const* rows, int m, size_t v_off, int vc_rt, const float* probs, int32_t n_pad,
                    int gn_rt, float* out, int dv) {
  const int gn = FULL && VC > 0 ? 16 / (VC > 0 ? VC : 16) : gn_rt;
  if constexpr (VC > 0) {  // the accumulators in registers: constant bounds, heads past gn skipped
    constexpr int kHeads = 16 / VC;
    __m512 acc[kHeads][VC];
    for (int h = 0; h < kHeads; ++h) {
      if (h >= gn) break;
      for (int c = 0; c < VC; ++c) acc[h][c] = _mm512_loadu_ps(out + static_cast<int64_t>(h) * dv + 16 * c);
    }
    for (int i = 0; i < m; ++i) {
      __m512 v[VC];
      HeadRow<T>::load(rows[i] + v_off, VC, v);
      for (int h = 0; h < kHeads; ++h) {
        if (h >= gn) break;
        const __m512 pr = _mm512_set1_ps(probs[static_cast<size_t>(h) * n_pad + i]);
        for (int c = 0; c < VC; ++c) acc[h][c] = _mm512_fmadd_ps(v[c], pr, acc[h][c]);
      }
    }
    for (int h = 0; h < kHeads; ++h) {
      if (h >= gn) break;
      for (int c = 0; c < VC; ++c) _mm512_storeu_ps(out + static_cast<int64_t>(h) * dv + 16 * c, acc[h][c]);
    }
  } else {
    for (int h = 0; h < gn; ++h) {
      float* oh = out + static_cast<int64_t>(h) * dv;
      for (int i = 0; i < m; ++i) {
        __m512 v[kMaxVecs];
        HeadRow<T>::load(rows[i] + v_off, vc_rt, v);
        const __m512 pr = _mm512_set1_ps(probs[static_cast<size_t>(h) * n_pad + i]);
        for (int c = 0; c < vc_rt; ++c) {
          _mm512_storeu_ps(oh + 16 * c, _mm512_fmadd_ps(v[c], pr, _mm512_loadu_ps(oh + 16 * c)));
        }
      }
    }
  }
}

template <DType T>
bool attention_step(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                    int32_t head_begin, int32_t head_end, const KeyPart* part, float* out, std::vector<float>& scratch) {
  const int dk = p.head_dim_k, dv = p.head_dim_v;
  const int vec_step = T == DType::kF16 || T == DType::kF32 ? 16 : 32;
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
  const int kc = dk / 16, vc = dv / 16;
  const int kvh_first = head_begin / full_group, kvh_last = (head_end - 1) / full_group;
  // scratch: scores then probabilities [n_heads][n_pad], then Q: [n_heads][dk] floats, or for
  // a quantized cache [n_heads][nch] QChunks (64-byte aligned)
  const int nb = dk / kQK, nch = (nb + 1) / 2;
  const size_t q_floats = is_quantized(T) ? static_cast<size_t>(n_heads) * nch * kFloatsPerQChunk
                                          : static_cast<size_t>(n_heads) * dk;
  scratch.resize(static_cast<size_t>(n_heads) * n_pad + q_floats + 16);
  float* scores = scratch.data();
  float* qf = scores + static_cast<size_t>(n_heads) * n_pad;
  auto* qc = reinterpret_cast<QChunk*>((reinterpret_cast<uintptr_t>(qf) + 63) & ~static_cast<uintptr_t>(63));
  for (int h = 0; h < n_heads && is_quantized(T); ++h) {
    prepare_q_chunks<T>(q + static_cast<int64_t>(head_begin + h) * dk, dk, qc + static_cast<size_t>(h) * nch);
  }
  for (int h = 0; h < n_heads && !is_quantized(T); ++h) {
    const float* qh = q + static_cast<int64_t>(head_begin + h) * dk;
    for (int c = 0; c < kc; ++c) {
      __m512 x = _mm512_loadu_ps(qh + 16 * c);
      if constexpr (T == DType::kF16) {
        x = _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      }
      _mm512_storeu_ps(qf + static_cast<size_t>(h) * dk + 16 * c, x);
    }
  }

  const size_t k_begin = HeadRow<T>::offset(kvh_first, dk), k_end = HeadRow<T>::offset(kvh_last + 1, dk);
  const size_t v_begin = HeadRow<T>::offset(kvh_first, dv), v_end = HeadRow<T>::offset(kvh_last + 1, dv);
  const int n_kvh = kvh_last - kvh_first + 1;

  // Scores: per block of 16 keys, every KV head of the call.
  // [0]: any number of heads, [1]: a full pass (constant head count)
  const decltype(&score_block_of<T, 0, false>) score_fns[2] = {
      kc == 4 ? score_block_of<T, 4, false> : kc == 8 ? score_block_of<T, 8, false> : score_block_of<T, 0, false>,
      kc == 4 ? score_block_of<T, 4, true> : kc == 8 ? score_block_of<T, 8, true> : score_block_of<T, 0, false>};
  const decltype(&score_block_q<T, 0, false>) score_q_fns[2] = {
      nch == 1 ? score_block_q<T, 1, false> : nch == 2 ? score_block_q<T, 2, false> : score_block_q<T, 0, false>,
      nch == 1 ? score_block_q<T, 1, true> : nch == 2 ? score_block_q<T, 2, true> : score_block_q<T, 0, false>};
  const decltype(&value_block_of<T, 0, false>) value_fns[2] = {
      is_quantized(T) ? (vc == 4 ? value_block_q<T, 4, false> : vc == 8 ? value_block_q<T, 8, false> : value_block_q<T, 0, false>)
                      : (vc == 4 ? value_block_of<T, 4, false> : vc == 8 ? value_block_of<T, 8, false> : value_block_of<T, 0, false>),
      is_quantized(T) ? (vc == 4 ? value_block_q<T, 4, true> : vc == 8 ? value_block_q<T, 8, true> : value_block_q<T, 0, false>)
                      : (vc == 4 ? value_block_of<T, 4, true> : vc == 8 ? value_block_of<T, 8, true> : value_block_of<T, 0, false>)};
  for (int32_t j0 = 0; j0 < n; j0 += kKeyBlock) {
    const int m = std::min<int32_t>(kKeyBlock, n - j0);
    const RowsAhead ahead = rows_ahead(kv, lo, n, n_pad, j0, kKeyBlock);
    const uint8_t* rows[kKeyBlock];  // the block's rows, found once for every KV head
    for (int i = 0; i < m; ++i) rows[i] = kv_row(kv.k_blocks, kv.block_tokens, kv.k_row_bytes, lo + j0 + i);
    for (int kvh = kvh_first; kvh <= kvh_last; ++kvh) {
      const GroupRange g = group_range(kvh, full_group, head_begin, head_end);
      const size_t k_off = HeadRow<T>::offset(kvh, dk);
      prefetch_share(ahead, kvh - kvh_first, n_kvh, k_begin, k_end, v_begin, v_end);
      for (int g0 = 0; g0 < g.n; g0 += 4) {  // 4 heads per pass over the block's key vectors
        const int gn = std::min(4, g.n - g0);
        float* dst = scores + static_cast<size_t>(g.h0 - head_begin + g0) * n_pad + j0;
        if constexpr (is_quantized(T)) {
          score_q_fns[gn == 4 ? 1 : 0](rows, m, k_off, nch, nb, qc + static_cast<size_t>(g.h0 - head_begin + g0) * nch, gn, p,
                           n_pad, dst);
        } else {
          score_fns[gn == 4 ? 1 : 0](rows, m, k_off, kc, qf + static_cast<size_t>(g.h0 - head_begin + g0) * dk, dk, gn, p, n_pad,
                      dst);
        }
      }
    }
  }

  // Softmax per head: probabilities (F16-rounded for an F16 cache) replace the scores.
  for (int h = 0; h < n_heads; ++h) {
    for (int32_t j = n; j < n_pad; ++j) scores[static_cast<size_t>(h) * n_pad + j] = -INFINITY;
  }
  decode_softmax<Avx512Traits>(scores, n_heads, n_pad, head_begin, p, part, T == DType::kF16);

  // Values: per block of 16 keys, every KV head; each value vector is converted once and
  // multiply-added (one FMA) to the accumulators of its group's heads, which stay in registers
  // for the block.
  for (int32_t j0 = 0; j0 < n; j0 += kKeyBlock) {
    const int m = std::min<int32_t>(kKeyBlock, n - j0);
    const RowsAhead ahead = rows_ahead(kv, lo, n, n_pad, n_pad + j0, kKeyBlock);
    const uint8_t* rows[kKeyBlock];  // the block's rows, found once for every KV head
    for (int i = 0; i < m; ++i) rows[i] = kv_row(kv.v_blocks, kv.block_tokens, kv.v_row_bytes, lo + j0 + i);
    for (int kvh = kvh_first; kvh <= kvh_last; ++kvh) {
      const GroupRange g = group_range(kvh, full_group, head_begin, head_end);
      const size_t v_off = HeadRow<T>::offset(kvh, dv);
      prefetch_share(ahead, kvh - kvh_first, n_kvh, 0, 0, v_begin, v_end);
      const int per_pass = std::max(1, 16 / vc);  // heads whose accumulators fit 16 registers
      for (int g0 = 0; g0 < g.n; g0 += per_pass) {
        const int gn = std::min(per_pass, g.n - g0);
        value_fns[gn == per_pass ? 1 : 0](rows, m, v_off, vc, scores + static_cast<size_t>(g.h0 - head_begin + g0) * n_pad + j0, n_pad,
                    gn, out + static_cast<int64_t>(g.h0 + g0) * dv, dv);
      }
    }
  }
  return true;
}

bool attention_decode(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                      int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                      std::vector<float>& scratch) {
  if (kv.by_head) return attention_decode_kt_avx512(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
  if (kv.type == DType::kBF16) {
    return avx512_bf16_in_use()
               ? attention_decode_bf16_native(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch)
               : attention_decode_bf16_avx512(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
  }
  switch (kv.type) {
    case DType::kF16: return attention_step<DType::kF16>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
    case DType::kF32: return attention_step<DType::kF32>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
    case DType::kQ8_0: return attention_step<DType::kQ8_0>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
    case DType::kQ4_0: return attention_step<DType::kQ4_0>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
    default: return false;
  }
}

}  // namespace

void fill_avx512_attention_kernels(KernelTable& t) { t.attention_decode = attention_decode; }

}  // namespace hearth::kernels
