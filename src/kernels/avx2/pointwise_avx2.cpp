// AVX2 versions of the pointwise ops (norms, softmax, SiLU, GELU, element-wise add/mul/scale,
// rope), 8 floats at a time. They keep the scalar reference's arithmetic: per-element
// operations in the same order (so rope, GELU, add, mul and scale are bit-identical to it),
// norm sums in double (only the summation order differs), and softmax/SiLU in F32 with a
// vector exp within 1 ulp of the correctly rounded value (libm's is too). Tests compare every
// op with the scalar reference.
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "kernels/avx2/vector_math_avx2.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/reference/pointwise_ref.h"

namespace hearth::kernels {
namespace {

// Lanes [0, rem) set, for masked loads and stores of a tail of rem < 8 floats.
inline __m256i tail_mask(int64_t rem) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Adds the 8 floats of v to two double accumulators (4 lanes each).
inline void add_to_double(__m256 v, __m256d& acc0, __m256d& acc1) {
  acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

inline double hsum_pd(__m256d acc0, __m256d acc1) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(acc0, acc1));
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

inline float hmax_ps(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

void rms_norm_avx2(const float* x, const float* weight, float* y, int64_t n, float eps) {
  if (n <= 0) return;
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    add_to_double(_mm256_mul_ps(v, v), acc0, acc1);
  }
  double sum = hsum_pd(acc0, acc1);
  for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float s = 1.0f / std::sqrt(mean + eps);
  const __m256 sv = _mm256_set1_ps(s);
  i = 0;
  if (weight != nullptr) {
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), sv), _mm256_loadu_ps(weight + i)));
    }
    for (; i < n; ++i) y[i] = (x[i] * s) * weight[i];
  } else {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), sv));
    for (; i < n; ++i) y[i] = x[i] * s;
  }
}

void layer_norm_avx2(const float* x, const float* weight, const float* bias, float* y, int64_t n, float eps) {
  if (n <= 0) return;
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) add_to_double(_mm256_loadu_ps(x + i), acc0, acc1);
  double sum = hsum_pd(acc0, acc1);
  for (; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const __m256 mv = _mm256_set1_ps(mean);
  acc0 = _mm256_setzero_pd();
  acc1 = _mm256_setzero_pd();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv);
    _mm256_storeu_ps(y + i, v);
    add_to_double(_mm256_mul_ps(v, v), acc0, acc1);
  }
  double sum2 = hsum_pd(acc0, acc1);
  for (; i < n; ++i) {
    const float v = x[i] - mean;
    y[i] = v;
    sum2 += static_cast<double>(v * v);
  }
  const float variance = static_cast<float>(sum2 / static_cast<double>(n));
  const float s = 1.0f / std::sqrt(variance + eps);
  const __m256 sv = _mm256_set1_ps(s);
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(y + i), sv);
    if (weight != nullptr) v = _mm256_mul_ps(v, _mm256_loadu_ps(weight + i));
    if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
    _mm256_storeu_ps(y + i, v);
  }
  if (i < n) {  // masked, not scalar, so the compiler cannot fuse the multiply and the add
    const __m256i m = tail_mask(n - i);
    __m256 v = _mm256_mul_ps(_mm256_maskload_ps(y + i, m), sv);
    if (weight != nullptr) v = _mm256_mul_ps(v, _mm256_maskload_ps(weight + i, m));
    if (bias != nullptr) v = _mm256_add_ps(v, _mm256_maskload_ps(bias + i, m));
    _mm256_maskstore_ps(y + i, m, v);
  }
}

void softmax_avx2(float* x, int64_t n) {
  if (n <= 0) return;
  __m256 maxv = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) maxv = _mm256_max_ps(maxv, _mm256_loadu_ps(x + i));
  float max = hmax_ps(maxv);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  const __m256 mv = _mm256_set1_ps(max);
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
    _mm256_storeu_ps(x + i, e);
    add_to_double(e, acc0, acc1);
  }
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    const __m256 e = _mm256_and_ps(exp_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, mask), mv)), _mm256_castsi256_ps(mask));
    _mm256_maskstore_ps(x + i, mask, e);
    add_to_double(e, acc0, acc1);
  }
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / hsum_pd(acc0, acc1)));
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
  for (; i < n; ++i) x[i] *= _mm256_cvtss_f32(inv);
}

inline __m256 silu_ps(__m256 v) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), v));
  return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

void silu_avx2(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, silu_ps(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    _mm256_maskstore_ps(x + i, mask, silu_ps(_mm256_maskload_ps(x + i, mask)));
  }
}

// Looks the F16-rounded inputs up in the GELU table; the range limits as in the reference.
inline __m256 gelu_ps(__m256 v, const uint16_t* table) {
  const __m256i idx = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  // 32-bit gather at byte offset 2*idx; the low half is the entry (the table has one entry of
  // padding, so index 65535 does not read past its end).
  const __m256i words = _mm256_and_si256(_mm256_i32gather_epi32(reinterpret_cast<const int*>(table), idx, 2),
                                         _mm256_set1_epi32(0xFFFF));
  const __m128i halves = _mm_packus_epi32(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
  __m256 g = _mm256_cvtph_ps(halves);
  g = _mm256_blendv_ps(g, _mm256_setzero_ps(), _mm256_cmp_ps(v, _mm256_set1_ps(reference::kGeluZeroBelow), _CMP_LE_OQ));
  return _mm256_blendv_ps(g, v, _mm256_cmp_ps(v, _mm256_set1_ps(reference::kGeluPassThrough), _CMP_GE_OQ));
}

void gelu_avx2(float* x, int64_t n) {
  const uint16_t* table = reference::gelu_f16_table();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, gelu_ps(_mm256_loadu_ps(x + i), table));
  if (i < n) reference::gelu(x + i, n - i);
}

void add_avx2(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] += x[i];
}

void mul_avx2(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] *= x[i];
}

void scale_avx2(float* y, float s, int64_t n) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), sv));
  for (; i < n; ++i) y[i] *= s;
}

// The reference's cos/sin per pair, then the rotation 8 floats at a time. Normal style
// rotates adjacent pairs: out = v * [c c ...] + swap_pairs(v) * [-s s ...], which rounds
// exactly like x0*c - x1*s and x0*s + x1*c. NeoX rotates the two halves of the head.
void rope_avx2(float* x, int32_t n_heads, int32_t head_dim, int32_t pos, const RopeParams& p) {
  const int n_dims = reference::rope_rotated_dims(head_dim, p);
  if (n_dims < 2 || n_heads <= 0) return;
  const int n_pairs = n_dims / 2;
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<size_t>(6 * n_pairs));
  float* cos_sin = buffer.data();          // 2 * n_pairs: c0 s0 c1 s1 ...
  float* fc = cos_sin + 2 * n_pairs;       // normal: c0 c0 c1 c1 ...  neox: c0 c1 ...
  float* fs = fc + 2 * n_pairs;            // normal: -s0 s0 -s1 s1 ... neox: s0 s1 ...
  reference::rope_cos_sin(pos, n_dims, p, cos_sin);
  if (p.style == RopeStyle::kNormal) {
    for (int k = 0; k < n_pairs; ++k) {
      fc[2 * k] = fc[2 * k + 1] = cos_sin[2 * k];
      fs[2 * k] = -cos_sin[2 * k + 1];
      fs[2 * k + 1] = cos_sin[2 * k + 1];
    }
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + static_cast<int64_t>(h) * head_dim;
      int i = 0;
      for (; i + 8 <= n_dims; i += 8) {
        const __m256 a = _mm256_loadu_ps(v + i);
        const __m256 swapped = _mm256_permute_ps(a, 0xB1);
        _mm256_storeu_ps(v + i, _mm256_add_ps(_mm256_mul_ps(a, _mm256_loadu_ps(fc + i)),
                                              _mm256_mul_ps(swapped, _mm256_loadu_ps(fs + i))));
      }
      // The tail uses the same vector operations, masked: a scalar loop here gets turned into a
      // fused multiply-add-subtract by GCC's SLP vectorizer, which rounds differently.
      if (i < n_dims) {
        const __m256i m = tail_mask(n_dims - i);
        const __m256 a = _mm256_maskload_ps(v + i, m);
        const __m256 swapped = _mm256_permute_ps(a, 0xB1);
        _mm256_maskstore_ps(v + i, m, _mm256_add_ps(_mm256_mul_ps(a, _mm256_maskload_ps(fc + i, m)),
                                                    _mm256_mul_ps(swapped, _mm256_maskload_ps(fs + i, m))));
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
    for (int k = 0; k < half; k += 8) {
      const __m256i m = half - k >= 8 ? _mm256_set1_epi32(-1) : tail_mask(half - k);
      const __m256 x0 = _mm256_maskload_ps(v + k, m), x1 = _mm256_maskload_ps(v + half + k, m);
      const __m256 c = _mm256_maskload_ps(fc + k, m), s = _mm256_maskload_ps(fs + k, m);
      _mm256_maskstore_ps(v + k, m, _mm256_sub_ps(_mm256_mul_ps(x0, c), _mm256_mul_ps(x1, s)));
      _mm256_maskstore_ps(v + half + k, m, _mm256_add_ps(_mm256_mul_ps(x0, s), _mm256_mul_ps(x1, c)));
    }
  }
}

}  // namespace

void fill_avx2_pointwise_kernels(KernelTable& t) {
  t.rms_norm = rms_norm_avx2;
  t.layer_norm = layer_norm_avx2;
  t.softmax = softmax_avx2;
  t.silu = silu_avx2;
  t.gelu = gelu_avx2;
  t.add = add_avx2;
  t.mul = mul_avx2;
  t.scale = scale_avx2;
  t.rope = rope_avx2;
}

}  // namespace hearth::kernels
