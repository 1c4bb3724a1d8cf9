// Norms, softmax, activations, element-wise ops and rope against straightforward
// double-precision implementations, in every CPU variant (pointwise_variants_test.cpp compares
// the variants with the scalar reference more tightly).
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "tensor/fp16.h"

namespace hearth::kernels {
namespace {

using test::random_floats;

TEST(Norms, RmsNormMatchesDouble) {
  for (int64_t n : {1, 7, 64, 1000, 4096}) {
    const std::vector<float> x = random_floats(static_cast<size_t>(n), 1, -3.0f, 3.0f);
    const std::vector<float> wt = random_floats(static_cast<size_t>(n), 2, 0.5f, 1.5f);
    double ss = 0.0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double s = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-5);
    for (CpuVariant v : test::variants_under_test()) {
      SCOPED_TRACE(test::variant_label(v) + " n=" + std::to_string(n));
      test::VariantScope scope(v);
      std::vector<float> y(static_cast<size_t>(n)), yw(static_cast<size_t>(n));
      rms_norm(x.data(), nullptr, y.data(), n, 1e-5f);
      rms_norm(x.data(), wt.data(), yw.data(), n, 1e-5f);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(y[i], x[i] * s, 1e-6 * std::fabs(x[i] * s) + 1e-7);
        ASSERT_NEAR(yw[i], x[i] * s * wt[i], 1e-6 * std::fabs(x[i] * s * wt[i]) + 1e-7);
      }
    }
  }
  // in place works
  std::vector<float> x = {3.0f, 4.0f};
  rms_norm(x.data(), nullptr, x.data(), 2, 0.0f);
  EXPECT_NEAR(x[0], 3.0 / std::sqrt(12.5), 1e-6);
}

TEST(Norms, LayerNormMatchesDouble) {
  const int64_t n = 384;
  const std::vector<float> x = random_floats(n, 3, -2.0f, 6.0f);
  const std::vector<float> wt = random_floats(n, 4);
  const std::vector<float> b = random_floats(n, 5);
  double mean = 0.0;
  for (float v : x) mean += v;
  mean /= n;
  double var = 0.0;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= n;
  const double s = 1.0 / std::sqrt(var + 1e-12);
  for (CpuVariant v : test::variants_under_test()) {
    SCOPED_TRACE(test::variant_label(v));
    test::VariantScope scope(v);
    std::vector<float> y(n), plain(n);
    layer_norm(x.data(), wt.data(), b.data(), y.data(), n, 1e-12f);
    layer_norm(x.data(), nullptr, nullptr, plain.data(), n, 1e-12f);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(plain[i], (x[i] - mean) * s, 2e-6);
      EXPECT_NEAR(y[i], (x[i] - mean) * s * wt[i] + b[i], 2e-6);
    }
  }
}

TEST(Softmax, MatchesDoubleAndHandlesLargeValues) {
  std::vector<float> x = random_floats(1000, 6, -20.0f, 20.0f);
  x[3] = 1000.0f;  // exp overflow without the max shift
  x[4] = 999.0f;
  double m = -1e300;
  for (float v : x) m = std::max(m, static_cast<double>(v));
  double sum = 0.0;
  for (float v : x) sum += std::exp(v - m);
  for (CpuVariant v : test::variants_under_test()) {
    SCOPED_TRACE(test::variant_label(v));
    test::VariantScope scope(v);
    std::vector<float> y = x;
    softmax(y.data(), static_cast<int64_t>(y.size()));
    double total = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(x[i] - m) / sum;
      ASSERT_NEAR(y[i], want, 1e-6 * want + 1e-30);
      total += y[i];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(Activations, SiluMatchesDouble) {
  std::vector<float> x = random_floats(500, 7, -30.0f, 30.0f);
  x.push_back(-100.0f);
  x.push_back(100.0f);
  for (CpuVariant v : test::variants_under_test()) {
    SCOPED_TRACE(test::variant_label(v));
    test::VariantScope scope(v);
    std::vector<float> y = x;
    silu(y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
      EXPECT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-30);
    }
  }
}

TEST(Activations, GeluIsTheF16TableOfTheTanhApproximation) {
  std::vector<float> x = random_floats(2000, 8, -12.0f, 12.0f);
  x.insert(x.end(), {-10.0f, 10.0f, -10.001f, 9.999f, 0.0f, -0.0f, 1e-8f});
  std::vector<float> y = x;
  gelu(y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = x[i];
    if (v <= -10.0f) {
      EXPECT_EQ(y[i], 0.0f);
      continue;
    }
    if (v >= 10.0f) {
      EXPECT_EQ(y[i], v);
      continue;
    }
    const double r = fp16_to_fp32(fp32_to_fp16(v));  // the table is indexed by the F16 input
    const double want = 0.5 * r * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * r * (1.0 + 0.044715 * r * r)));
    // output is an F16 value: within half an F16 ulp of the exact value (plus F32 error)
    EXPECT_EQ(fp16_to_fp32(fp32_to_fp16(y[i])), y[i]) << v;
    EXPECT_NEAR(y[i], want, std::fabs(want) * 6e-4 + 1e-7) << v;
  }
}

TEST(Elementwise, AddMulScaleSoftcap) {
  const std::vector<float> a = random_floats(67, 9, -5.0f, 5.0f);
  const std::vector<float> b = random_floats(67, 10, -5.0f, 5.0f);
  std::vector<float> y = a;
  add(y.data(), b.data(), 67);
  for (int i = 0; i < 67; ++i) EXPECT_EQ(y[i], a[i] + b[i]);
  y = a;
  mul(y.data(), b.data(), 67);
  for (int i = 0; i < 67; ++i) EXPECT_EQ(y[i], a[i] * b[i]);
  y = a;
  scale(y.data(), 0.25f, 67);
  for (int i = 0; i < 67; ++i) EXPECT_EQ(y[i], a[i] * 0.25f);
  y = a;
  softcap(y.data(), 3.0f, 67);
  for (int i = 0; i < 67; ++i) EXPECT_NEAR(y[i], 3.0 * std::tanh(a[i] / 3.0), 1e-6);
}

// Double-precision rope as the ecosystem defines it (including YaRN).
std::vector<double> rope_reference(const std::vector<float>& x, int n_heads, int head_dim, int pos,
                                   const RopeParams& p) {
  const int n_dims = p.rope_dims > 0 ? p.rope_dims : head_dim;
  std::vector<double> out(x.begin(), x.end());
  double low = 0.0, high = 0.0;
  if (p.ext_factor != 0.0f) {
    auto corr = [&](double n_rot) {
      return n_dims * std::log(p.n_ctx_orig / (n_rot * 2.0 * M_PI)) / (2.0 * std::log(static_cast<double>(p.freq_base)));
    };
    low = std::max(0.0, std::floor(corr(p.beta_fast)));
    high = std::min(n_dims - 1.0, std::ceil(corr(p.beta_slow)));
  }
  for (int h = 0; h < n_heads; ++h) {
    for (int k = 0; k < n_dims / 2; ++k) {
      const double ff = p.freq_factors ? p.freq_factors[k] : 1.0;
      const double extrap = pos * std::pow(static_cast<double>(p.freq_base), -2.0 * k / n_dims) / ff;
      const double interp = p.freq_scale * extrap;
      double theta = interp, mscale = p.attn_factor;
      if (p.ext_factor != 0.0f) {
        const double y = (k - low) / std::max(0.001, high - low);
        const double ramp = (1.0 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
        theta = interp * (1.0 - ramp) + extrap * ramp;
        mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
      }
      const int i0 = p.style == RopeStyle::kNormal ? 2 * k : k;
      const int i1 = p.style == RopeStyle::kNormal ? 2 * k + 1 : k + n_dims / 2;
      const double x0 = x[h * head_dim + i0], x1 = x[h * head_dim + i1];
      out[h * head_dim + i0] = (x0 * std::cos(theta) - x1 * std::sin(theta)) * mscale;
      out[h * head_dim + i1] = (x0 * std::sin(theta) + x1 * std::cos(theta)) * mscale;
    }
  }
  return out;
}

TEST(Rope, NormalNeoxScaledYarnAndFreqFactors) {
  const int n_heads = 3, head_dim = 64;
  const std::vector<float> x = random_floats(n_heads * head_dim, 11);
  const std::vector<float> factors = random_floats(16, 12, 1.0f, 8.0f);
  struct Case {
    const char* name;
    RopeParams p;
  };
  std::vector<Case> cases;
  RopeParams normal;
  cases.push_back({"normal", normal});
  RopeParams neox;
  neox.style = RopeStyle::kNeox;
  cases.push_back({"neox", neox});
  RopeParams partial = neox;
  partial.rope_dims = 32;
  partial.freq_factors = factors.data();
  cases.push_back({"neox partial with freq factors", partial});
  RopeParams linear;
  linear.freq_scale = 0.25f;
  linear.freq_base = 500000.0f;
  cases.push_back({"linear scaled", linear});
  RopeParams yarn = neox;
  yarn.freq_scale = 0.25f;
  yarn.ext_factor = 1.0f;
  yarn.attn_factor = 1.0f;
  yarn.n_ctx_orig = 4096;
  yarn.beta_fast = 32.0f;
  yarn.beta_slow = 1.0f;
  cases.push_back({"yarn", yarn});
  for (CpuVariant v : test::variants_under_test()) {
    test::VariantScope scope(v);
    for (const Case& c : cases) {
      for (int pos : {0, 1, 17, 100}) {
        SCOPED_TRACE(test::variant_label(v) + " " + std::string(c.name) + " pos=" + std::to_string(pos));
        std::vector<float> y = x;
        rope(y.data(), n_heads, head_dim, pos, c.p);
        const std::vector<double> want = rope_reference(x, n_heads, head_dim, pos, c.p);
        for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want[i], 2e-4) << "at " << i;
        if (c.p.rope_dims == 32) {
          for (int h = 0; h < n_heads; ++h) {
            for (int i = 32; i < head_dim; ++i) ASSERT_EQ(y[h * head_dim + i], x[h * head_dim + i]);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
