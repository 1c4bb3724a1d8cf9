// Norms, softmax and the element-wise activations: the entry points of ops.h, which dispatch
// through the kernel table, and the scalar reference behind its scalar variant, with the
// ecosystem's CPU arithmetic: norm sums in double, exp/SiLU in F32, GELU through a table
// indexed by the F16-rounded input.
#include <cmath>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/reference/pointwise_ref.h"
#include "kernels/reference/reference_kernels.h"
#include "tensor/fp16.h"

namespace hearth::kernels {

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  active_kernels().rms_norm(x, weight, y, n, eps);
}
void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t n, float eps) {
  active_kernels().layer_norm(x, weight, bias, y, n, eps);
}
void softmax(float* x, int64_t n) { active_kernels().softmax(x, n); }
void silu(float* x, int64_t n) { active_kernels().silu(x, n); }
void gelu(float* x, int64_t n) { active_kernels().gelu(x, n); }
void add(float* y, const float* x, int64_t n) { active_kernels().add(y, x, n); }
void mul(float* y, const float* x, int64_t n) { active_kernels().mul(y, x, n); }
void scale(float* y, float s, int64_t n) { active_kernels().scale(y, s, n); }
void rope(float* x, int32_t n_heads, int32_t head_dim, int32_t pos, const RopeParams& p) {
  active_kernels().rope(x, n_heads, head_dim, pos, p);
}

void softcap(float* y, float cap, int64_t n) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) y[i] = cap * std::tanh(y[i] * inv);
}

void fill_reference_pointwise_kernels(KernelTable& t) {
  namespace r = reference;
  t.rms_norm = r::rms_norm;
  t.layer_norm = r::layer_norm;
  t.softmax = r::softmax;
  t.silu = r::silu;
  t.gelu = r::gelu;
  t.add = r::add;
  t.mul = r::mul;
  t.scale = r::scale;
  t.rope = r::rope;
}

}  // namespace hearth::kernels

namespace hearth::kernels::reference {

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  if (n <= 0) return;
  const double sum = sum_squares(x, n);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float s = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
  if (weight != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] *= weight[i];
  }
}

void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t n, float eps) {
  if (n <= 0) return;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  double sum2 = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] - mean;
    y[i] = v;
    sum2 += static_cast<double>(v * v);
  }
  const float variance = static_cast<float>(sum2 / static_cast<double>(n));
  const float s = 1.0f / std::sqrt(variance + eps);
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
  if (weight != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] *= weight[i];
  }
  if (bias != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] += bias[i];
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp(x[i] - max);
    x[i] = e;
    sum += static_cast<double>(e);
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void silu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
}

namespace {

float gelu_tanh_f32(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}

}  // namespace

const uint16_t* gelu_f16_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536 + 1, 0);
    for (uint32_t i = 0; i < 65536; ++i) t[i] = fp32_to_fp16(gelu_tanh_f32(fp16_to_fp32(static_cast<uint16_t>(i))));
    return t;
  }();
  return table.data();
}

void gelu(float* x, int64_t n) {
  const uint16_t* table = gelu_f16_table();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (v <= kGeluZeroBelow) {
      x[i] = 0.0f;
    } else if (v >= kGeluPassThrough) {
      x[i] = v;
    } else {
      x[i] = fp16_to_fp32(table[fp32_to_fp16(v)]);
    }
  }
}

void add(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void mul(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= x[i];
}

void scale(float* y, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

}  // namespace hearth::kernels::reference
