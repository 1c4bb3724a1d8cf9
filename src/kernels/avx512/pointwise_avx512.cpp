// AVX-512 versions of the pointwise ops (norms, softmax, SiLU, GELU, element-wise add/mul/scale,
// rope), 16 floats at a time with masked tails. Same arithmetic as the AVX2 file and the
// scalar reference: per-element operations in the reference's order (rope, GELU, add, mul and
// scale are bit-identical to it), norm sums in double, and the same vector exp as AVX2, so
// softmax and SiLU agree with the AVX2 variant bit for bit except for the order of the
// double sums. Tests compare every op with the scalar reference.
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/avx512/vector_math_avx512.h"
#include "kernels/reference/pointwise_ref.h"

namespace hearth::kernels {
namespace {

inline __mmask16 tail_mask(int64_t rem) { return static_cast<__mmask16>((1u << rem) - 1u); }

// Adds the 16 floats of v to two double accumulators (8 lanes each).
inline void add_to_double(__m512 v, __m512d& acc0, __m512d& acc1) {
  acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  acc1 = _mm512_add_pd(acc1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
}

void rms_norm_avx512(const float* x, const float* weight, float* y, int64_t n, float eps) {
  if (n <= 0) return;
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    add_to_double(_mm512_mul_ps(v, v), acc0, acc1);
  }
  if (i < n) {
    const __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
    add_to_double(_mm512_mul_ps(v, v), acc0, acc1);
  }
  const double sum = _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const __m512 sv = _mm512_set1_ps(1.0f / std::sqrt(mean + eps));
  for (i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sv);
    if (weight != nullptr) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, weight + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

void layer_norm_avx512(const float* x, const float* weight, const float* bias, float* y, int64_t n, float eps) {
  if (n <= 0) return;
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    add_to_double(_mm512_maskz_loadu_ps(m, x + i), acc0, acc1);
  }
  const float mean = static_cast<float>(_mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1)) / static_cast<double>(n));
  const __m512 mv = _mm512_set1_ps(mean);
  acc0 = _mm512_setzero_pd();
  acc1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    // masked-out lanes are 0 - mean; zero them so they add nothing to the sum
    const __m512 v = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), mv);
    _mm512_mask_storeu_ps(y + i, m, v);
    add_to_double(_mm512_mul_ps(v, v), acc0, acc1);
  }
  const float variance = static_cast<float>(_mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1)) / static_cast<double>(n));
  const __m512 sv = _mm512_set1_ps(1.0f / std::sqrt(variance + eps));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), sv);
    if (weight != nullptr) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, weight + i));
    if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

void softmax_avx512(float* x, int64_t n) {
  if (n <= 0) return;
  __m512 maxv = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    maxv = _mm512_mask_max_ps(maxv, m, maxv, _mm512_maskz_loadu_ps(m, x + i));
  }
  const __m512 mv = _mm512_set1_ps(_mm512_reduce_max_ps(maxv));
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(m, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mv)));
    _mm512_mask_storeu_ps(x + i, m, e);
    add_to_double(e, acc0, acc1);
  }
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1))));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
  }
}

void silu_avx512(float* x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), v));
    _mm512_mask_storeu_ps(x + i, m, _mm512_div_ps(v, _mm512_add_ps(one, e)));
  }
}

void gelu_avx512(float* x, int64_t n) {
  const int* table = reinterpret_cast<const int*>(reference::gelu_f16_table());
  const __m512 zero_below = _mm512_set1_ps(reference::kGeluZeroBelow);
  const __m512 pass_through = _mm512_set1_ps(reference::kGeluPassThrough);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512i idx = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // 32-bit gather at byte offset 2*idx (the table is padded by one entry); keep the low half
    const __m512i words = _mm512_and_si512(_mm512_i32gather_epi32(idx, table, 2), _mm512_set1_epi32(0xFFFF));
    __m512 g = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words));
    g = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero_below, _CMP_LE_OQ), g, _mm512_setzero_ps());
    g = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, pass_through, _CMP_GE_OQ), g, v);
    _mm512_mask_storeu_ps(x + i, m, g);
  }
}

void add_avx512(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_maskz_loadu_ps(m, x + i)));
  }
}

void mul_avx512(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_maskz_loadu_ps(m, x + i)));
  }
}

void scale_avx512(float* y, float s, int64_t n) {
  const __m512 sv = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), sv));
  }
}

// As rope_avx2: the reference's cos/sin, then out = v * [c c ...] + swap_pairs(v) * [-s s ...]
// for normal style (rounding exactly like x0*c - x1*s and x0*s + x1*c), or the two halves of
// the head for NeoX; 16 floats at a time, masked at the end.
void rope_avx512(float* x, int32_t n_heads, int32_t head_dim, int32_t pos, const RopeParams& p) {
  const int n_dims = reference::rope_rotated_dims(head_dim, p);
  if (n_dims < 2 || n_heads <= 0) return;
  const int n_pairs = n_dims / 2;
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<size_t>(6 * n_pairs));
  float* cos_sin = buffer.data();     // 2 * n_pairs: c0 s0 c1 s1 ...
  float* fc = cos_sin + 2 * n_pairs;  // normal: c0 c0 c1 c1 ...  neox: c0 c1 ...
  float* fs = fc + 2 * n_pairs;       // normal: -s0 s0 -s1 s1 ... neox: s0 s1 ...
  reference::rope_cos_sin(pos, n_dims, p, cos_sin);
  if (p.style == RopeStyle::kNormal) {
    for (int k = 0; k < n_pairs; ++k) {
      fc[2 * k] = fc[2 * k + 1] = cos_sin[2 * k];
      fs[2 * k] = -cos_sin[2 * k + 1];
      fs[2 * k + 1] = cos_sin[2 * k + 1];
    }
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + static_cast<int64_t>(h) * head_dim;
      for (int i = 0; i < n_dims; i += 16) {
        const __mmask16 m = n_dims - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n_dims - i);
        const __m512 a = _mm512_maskz_loadu_ps(m, v + i);
        const __m512 swapped = _mm512_permute_ps(a, 0xB1);
        _mm512_mask_storeu_ps(v + i, m, _mm512_add_ps(_mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, fc + i)),
                                                      _mm512_mul_ps(swapped, _mm512_maskz_loadu_ps(m, fs + i))));
      }
    }
    return;
  }
  for (int k = 0; k < n_pairs; ++k) {
    fc[k] = cos_sin[2 * k];
    fs[k] = cos_sin[2 * k + 1];
  }
  const int half = n_pairs;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int k = 0; k < half; k += 16) {
      const __mmask16 m = half - k >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(half - k);
      const __m512 x0 = _mm512_maskz_loadu_ps(m, v + k), x1 = _mm512_maskz_loadu_ps(m, v + half + k);
      const __m512 c = _mm512_maskz_loadu_ps(m, fc + k), s = _mm512_maskz_loadu_ps(m, fs + k);
      _mm512_mask_storeu_ps(v + k, m, _mm512_sub_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s)));
      _mm512_mask_storeu_ps(v + half + k, m, _mm512_add_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c)));
    }
  }
}

}  // namespace

void fill_avx512_pointwise_kernels(KernelTable& t) {
  t.rms_norm = rms_norm_avx512;
  t.layer_norm = layer_norm_avx512;
  t.softmax = softmax_avx512;
  t.silu = silu_avx512;
  t.gelu = gelu_avx512;
  t.add = add_avx512;
  t.mul = mul_avx512;
  t.scale = scale_avx512;
  t.rope = rope_avx512;
}

}  // namespace hearth::kernels
