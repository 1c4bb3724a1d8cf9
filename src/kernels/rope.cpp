// Rotary position embedding, normal (adjacent pairs) and NeoX (split halves) layouts, with
// linear scaling (freq_scale), per-dimension frequency factors and YaRN, computed as the
// ecosystem does: the angle advances by repeated multiplication with base^(-2/rope_dims) in
// F32, and YaRN blends interpolated and extrapolated angles with a linear ramp over the
// "correction dimensions" and scales cos/sin by 1 + 0.1 ln(1/freq_scale). This is the scalar
// reference; the SIMD variants reuse rope_cos_sin and only vectorize the rotation.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "kernels/reference/pointwise_ref.h"

namespace hearth::kernels::reference {
namespace {

// The dimension index at which a rotation of n_rot full turns over n_ctx_orig positions lands.
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(n_dims) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * static_cast<float>(M_PI))) /
         (2.0f * std::log(base));
}

float yarn_ramp(float low, float high, int i0) {
  const float y = (static_cast<float>(i0 / 2) - low) / std::max(0.001f, high - low);
  return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

}  // namespace

int32_t rope_rotated_dims(int32_t head_dim, const RopeParams& p) {
  return (p.rope_dims <= 0 || p.rope_dims > head_dim) ? head_dim : p.rope_dims;
}

void rope_cos_sin(int32_t pos, int32_t n_dims, const RopeParams& p, float* cos_sin) {
  float corr_low = 0.0f;
  float corr_high = 0.0f;
  rope_yarn_corr_dims(n_dims, p, &corr_low, &corr_high);
  const float mscale = rope_yarn_mscale(p);
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(n_dims));
  float theta = static_cast<float>(pos);
  for (int k = 0; k < n_dims / 2; ++k) {
    const int i0 = 2 * k;
    const float ff = p.freq_factors != nullptr ? p.freq_factors[k] : 1.0f;
    const float theta_extrap = theta / ff;
    const float theta_interp = p.freq_scale * theta_extrap;
    float angle = theta_interp;
    if (p.ext_factor != 0.0f) {
      const float ramp_mix = yarn_ramp(corr_low, corr_high, i0) * p.ext_factor;
      angle = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
    }
    cos_sin[i0] = std::cos(angle) * mscale;
    cos_sin[i0 + 1] = std::sin(angle) * mscale;
    theta *= theta_scale;
  }
}

void rope(float* x, int32_t n_heads, int32_t head_dim, int32_t pos, const RopeParams& p) {
  const int n_dims = rope_rotated_dims(head_dim, p);
  if (n_dims < 2 || n_heads <= 0) return;
  // cos/sin per pair, computed once for all heads; the buffer is reused across calls.
  thread_local std::vector<float> cos_sin_buffer;
  const int n_pairs = n_dims / 2;
  cos_sin_buffer.resize(static_cast<size_t>(2 * n_pairs));
  float* cos_sin = cos_sin_buffer.data();
  rope_cos_sin(pos, n_dims, p, cos_sin);
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    if (p.style == RopeStyle::kNormal) {
      for (int k = 0; k < n_pairs; ++k) {
        const float c = cos_sin[2 * k], s = cos_sin[2 * k + 1];
        const float x0 = v[2 * k], x1 = v[2 * k + 1];
        v[2 * k] = x0 * c - x1 * s;
        v[2 * k + 1] = x0 * s + x1 * c;
      }
    } else {
      const int half = n_dims / 2;
      for (int k = 0; k < n_pairs; ++k) {
        const float c = cos_sin[2 * k], s = cos_sin[2 * k + 1];
        const float x0 = v[k], x1 = v[k + half];
        v[k] = x0 * c - x1 * s;
        v[k + half] = x0 * s + x1 * c;
      }
    }
  }
}

}  // namespace hearth::kernels::reference

namespace hearth::kernels {

void rope_yarn_corr_dims(int32_t n_dims, const RopeParams& p, float* low, float* high) {
  *low = 0.0f;
  *high = 0.0f;
  if (p.ext_factor == 0.0f) return;
  const float start = std::floor(reference::yarn_corr_dim(n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base));
  const float end = std::ceil(reference::yarn_corr_dim(n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base));
  *low = std::max(0.0f, start);
  *high = std::min(static_cast<float>(n_dims - 1), end);
}

float rope_yarn_mscale(const RopeParams& p) {
  return p.ext_factor != 0.0f ? p.attn_factor * (1.0f + 0.1f * std::log(1.0f / p.freq_scale)) : p.attn_factor;
}

}  // namespace hearth::kernels
