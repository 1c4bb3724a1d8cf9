// AVX-512 attention of one query token over an F16 KV cache. The query heads that share a KV
// head (GQA) are handled together, so each key and value row is read and converted once per
// group instead of once per head. Scores are computed 16 keys at a time: one register of
// products per key, then a reduction tree leaves the 16 scores in one register, where scale,
// softcap, maximum and exp run 16 lanes wide. The arithmetic follows the scalar path: Q rounded
// to F16, products and sums in F32, softmax sum in double, probabilities rounded to F16 and
// multiplied then added to the output in F32.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/avx512/vector_math_avx512.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"

namespace hearth::kernels {
namespace {

constexpr int kMaxHeadDim = 256;
constexpr int kMaxGroup = 16;

inline const uint16_t* kv_row(const uint8_t* const* blocks, int32_t block_tokens, size_t row_bytes, int32_t pos,
                              size_t offset) {
  return reinterpret_cast<const uint16_t*>(blocks[pos / block_tokens] +
                                           static_cast<size_t>(pos % block_tokens) * row_bytes + offset);
}

inline __m512 load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

// out[g] += prob[g][j] * V[j] for the heads of one group, VC registers per value row; as many
// heads per pass over the rows as fit in 16 accumulators.
template <int VC>
void add_values(const KvSpan& kv, int32_t lo, int32_t n, size_t v_off, const float* probs, int32_t n_pad, int group,
                float* out) {
  constexpr int kHeads = 16 / VC;
  for (int g0 = 0; g0 < group; g0 += kHeads) {
    const int gn = std::min(kHeads, group - g0);
    __m512 acc[kHeads][VC];
    for (int g = 0; g < kHeads; ++g) {
      for (int c = 0; c < VC; ++c) acc[g][c] = _mm512_setzero_ps();
    }
    for (int32_t j = 0; j < n; ++j) {
      const uint16_t* vrow = kv_row(kv.v_blocks, kv.block_tokens, kv.v_row_bytes, lo + j, v_off);
      __m512 v[VC];
      for (int c = 0; c < VC; ++c) v[c] = load_f16(vrow + 16 * c);
      for (int g = 0; g < kHeads; ++g) {
        if (g >= gn) break;
        const __m512 prob = _mm512_set1_ps(probs[static_cast<size_t>(g0 + g) * n_pad + j]);
        for (int c = 0; c < VC; ++c) acc[g][c] = _mm512_add_ps(acc[g][c], _mm512_mul_ps(v[c], prob));
      }
    }
    for (int g = 0; g < gn; ++g) {
      for (int c = 0; c < VC; ++c) _mm512_storeu_ps(out + static_cast<int64_t>(g0 + g) * 16 * VC + 16 * c, acc[g][c]);
    }
  }
}

bool attention_f16(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                   int32_t head_begin, int32_t head_end, const KeyPart* part, float* out, std::vector<float>& scratch) {
  if (p.sinks != nullptr) return false;  // the portable path handles sinks
  const int dk = p.head_dim_k, dv = p.head_dim_v;
  if (kv.type != DType::kF16 || dk % 16 != 0 || dv % 16 != 0 || dk > kMaxHeadDim || dv > kMaxHeadDim ||
      p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0 || p.n_head / p.n_head_kv > kMaxGroup) {
    return false;
  }
  head_begin = std::max(head_begin, 0);
  head_end = std::min(head_end, p.n_head);
  if (head_end <= head_begin) return true;
  std::fill(out + static_cast<int64_t>(head_begin) * dv, out + static_cast<int64_t>(head_end) * dv, 0.0f);
  if (part != nullptr && part->stats != nullptr) {
    for (int h = head_begin; h < head_end; ++h) {
      part->stats[2 * h] = -INFINITY;
      part->stats[2 * h + 1] = 0.0f;
    }
  }
  if (n_kv <= 0 || p.n_head <= 0) return true;
  int32_t hi = p.causal ? std::min(q_pos, n_kv - 1) : n_kv - 1;
  int32_t lo = p.window > 0 ? std::max(0, q_pos - p.window + 1) : 0;
  if (part != nullptr) {
    lo = std::max(lo, part->begin);
    hi = std::min(hi, part->end - 1);
  }
  if (hi < lo) return true;
  const int full_group = p.n_head / p.n_head_kv;
  const int32_t n = hi - lo + 1;
  const int32_t n_pad = (n + 15) / 16 * 16;
  scratch.resize(static_cast<size_t>(full_group) * static_cast<size_t>(n_pad));
  const int kc = dk / 16, vc = dv / 16;
  const __m512 scale = _mm512_set1_ps(p.scale);

  // The query heads of one KV head share each key/value row; a head range that cuts a group
  // takes only its part of it.
  for (int kvh = head_begin / full_group; kvh <= (head_end - 1) / full_group; ++kvh) {
    const int h0 = std::max(kvh * full_group, head_begin);
    const int group = std::min((kvh + 1) * full_group, head_end) - h0;
    alignas(64) float qf[kMaxGroup][kMaxHeadDim];
    for (int g = 0; g < group; ++g) {
      const float* qh = q + static_cast<int64_t>(h0 + g) * dk;
      for (int c = 0; c < kc; ++c) {
        const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(qh + 16 * c), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm512_store_ps(qf[g] + 16 * c, _mm512_cvtph_ps(h));
      }
    }
    const size_t k_off = static_cast<size_t>(kvh) * dk * 2, v_off = static_cast<size_t>(kvh) * dv * 2;

    // Scores, 16 keys at a time.
    for (int32_t j0 = 0; j0 < n; j0 += 16) {
      const int m = std::min<int32_t>(16, n - j0);
      alignas(64) float part[kMaxGroup][16][16];
      for (int i = 0; i < 16; ++i) {
        if (i >= m) {
          for (int g = 0; g < group; ++g) _mm512_store_ps(part[g][i], _mm512_setzero_ps());
          continue;
        }
        const uint16_t* krow = kv_row(kv.k_blocks, kv.block_tokens, kv.k_row_bytes, lo + j0 + i, k_off);
        __m512 k[kMaxHeadDim / 16];
        for (int c = 0; c < kc; ++c) k[c] = load_f16(krow + 16 * c);
        for (int g = 0; g < group; ++g) {
          __m512 acc = _mm512_mul_ps(_mm512_load_ps(qf[g]), k[0]);
          for (int c = 1; c < kc; ++c) acc = _mm512_fmadd_ps(_mm512_load_ps(qf[g] + 16 * c), k[c], acc);
          _mm512_store_ps(part[g][i], acc);
        }
      }
      for (int g = 0; g < group; ++g) {
        __m512 rows[16];
        for (int i = 0; i < 16; ++i) rows[i] = _mm512_load_ps(part[g][i]);
        __m512 s = _mm512_mul_ps(reduce_rows_16(rows), scale);
        if (p.softcap != 0.0f) {
          alignas(64) float lanes[16];
          _mm512_store_ps(lanes, s);
          for (int i = 0; i < m; ++i) lanes[i] = p.softcap * std::tanh(lanes[i] * (1.0f / p.softcap));
          s = _mm512_load_ps(lanes);
        }
        _mm512_storeu_ps(scratch.data() + static_cast<size_t>(g) * n_pad + j0, s);
      }
    }

    // Softmax per head: probabilities (F16-rounded) replace the scores.
    for (int g = 0; g < group; ++g) {
      float* s = scratch.data() + static_cast<size_t>(g) * n_pad;
      for (int32_t j = n; j < n_pad; ++j) s[j] = -INFINITY;
      __m512 mx = _mm512_set1_ps(-INFINITY);
      for (int32_t j = 0; j < n_pad; j += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(s + j));
      const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
      __m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
      for (int32_t j = 0; j < n_pad; j += 16) {
        const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(s + j), max));
        _mm512_storeu_ps(s + j, e);
        sum0 = _mm512_add_pd(sum0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        sum1 = _mm512_add_pd(sum1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
      }
      const double total = _mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1));
      if (part != nullptr && part->stats != nullptr) {
        part->stats[2 * (h0 + g)] = _mm512_reduce_max_ps(mx);
        part->stats[2 * (h0 + g) + 1] = static_cast<float>(total);
      }
      const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / total));
      for (int32_t j = 0; j < n_pad; j += 16) {
        const __m256i h = _mm512_cvtps_ph(_mm512_mul_ps(_mm512_loadu_ps(s + j), inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm512_storeu_ps(s + j, _mm512_cvtph_ps(h));
      }
    }

    // Values: each row converted once, added to every head of the group.
    switch (vc) {
      case 4: add_values<4>(kv, lo, n, v_off, scratch.data(), n_pad, group, out + static_cast<int64_t>(h0) * dv); break;
      case 8: add_values<8>(kv, lo, n, v_off, scratch.data(), n_pad, group, out + static_cast<int64_t>(h0) * dv); break;
      default:
        for (int g = 0; g < group; ++g) {
          float* oh = out + static_cast<int64_t>(h0 + g) * dv;
          for (int32_t j = 0; j < n; ++j) {
            const uint16_t* vrow = kv_row(kv.v_blocks, kv.block_tokens, kv.v_row_bytes, lo + j, v_off);
            const __m512 prob = _mm512_set1_ps(scratch[static_cast<size_t>(g) * n_pad + j]);
            for (int c = 0; c < vc; ++c) {
              _mm512_storeu_ps(oh + 16 * c, _mm512_add_ps(_mm512_loadu_ps(oh + 16 * c), _mm512_mul_ps(load_f16(vrow + 16 * c), prob)));
            }
          }
        }
        break;
    }
  }
  return true;
}

}  // namespace

void fill_avx512_attention_kernels(KernelTable& t) { t.attention_f16 = attention_f16; }

}  // namespace hearth::kernels
