// Every SIMD variant of the pointwise ops (kernel table entries rms_norm, layer_norm, softmax,
// silu, gelu, add, mul, scale, rope) against the scalar reference, on lengths that exercise
// full vectors and every tail. The tolerances follow from what each variant may change:
//  - rope, gelu, add, mul, scale: nothing (same per-element operations, same order): bit-exact.
//  - rms_norm, layer_norm: only the order of the double sums; the float mean/scale they round
//    to can move by at most 1 ulp, so outputs stay within a few ulp.
//  - softmax, silu: the vector exp (within 1 ulp of the correctly rounded e^x) instead of
//    libm's (also within 1 ulp), so exp values may be 2 ulp apart; the sum, reciprocal and
//    product (softmax) or the add and division (silu) keep the outputs within 4 ulp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernel_test_util.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"

namespace hearth::kernels {
namespace {

using test::random_floats;

// The SIMD variants this CPU supports (HEARTH_CPU narrows the set as elsewhere).
std::vector<CpuVariant> simd_variants() {
  std::vector<CpuVariant> out;
  for (CpuVariant v : test::variants_under_test()) {
    if (v != CpuVariant::kScalar) out.push_back(v);
  }
  return out;
}

const KernelTable& scalar_table() { return kernels_for(CpuVariant::kScalar); }

// Distance in units in the last place between two finite floats (0 when bit-identical;
// +0 and -0 are 0 apart).
int64_t ulp_distance(float a, float b) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  return std::llabs(ordered(a) - ordered(b));
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

const int64_t kLengths[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 257, 1000, 4096};

TEST(PointwiseVariants, VectorExpStaysWithinOneUlpThroughSilu) {
  // The vector exp is within 1 ulp of the correctly rounded e^x for every float input whose
  // result is normal (checked exhaustively when it was written). For x <= -20, silu(x) =
  // x / (1 + e^-x) with e^-x > 4.8e8, so the result is x * e^x up to the rounding of 1 + e^-x
  // (0.5 ulp) and of the division (0.5 ulp): at most 2 ulp from the exact value.
  std::vector<float> x;
  for (float v = -87.0f; v <= -20.0f; v += 0.01234f) x.push_back(v);
  for (CpuVariant v : simd_variants()) {
    SCOPED_TRACE(test::variant_label(v));
    std::vector<float> y = x;
    kernels_for(v).silu(y.data(), static_cast<int64_t>(y.size()));
    int64_t worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = static_cast<double>(x[i]) / (1.0 + std::exp(-static_cast<double>(x[i])));
      worst = std::max(worst, ulp_distance(y[i], static_cast<float>(want)));
    }
    EXPECT_LE(worst, 2) << "worst ulp distance";
  }
}

TEST(PointwiseVariants, SiluMatchesScalarWithinFourUlp) {
  std::vector<float> base = random_floats(5000, 21, -40.0f, 40.0f);
  base.insert(base.end(), {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, 89.5f, -89.5f, 103.0f, -103.0f, 104.5f,
                           -104.5f, 200.0f, -200.0f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity()});
  for (CpuVariant v : simd_variants()) {
    for (int64_t n : kLengths) {
      SCOPED_TRACE(test::variant_label(v) + " n=" + std::to_string(n));
      std::vector<float> want(base.end() - n, base.end());
      std::vector<float> got = want;
      scalar_table().silu(want.data(), n);
      kernels_for(v).silu(got.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_LE(ulp_distance(got[i], want[i]), 4) << "x=" << base[base.size() - n + i] << " got " << got[i]
                                                     << " want " << want[i];
      }
    }
    std::vector<float> nan = {std::nanf(""), 1.0f};
    kernels_for(v).silu(nan.data(), 2);
    EXPECT_TRUE(std::isnan(nan[0]));
  }
}

TEST(PointwiseVariants, SoftmaxMatchesScalarWithinFourUlp) {
  // Each probability is e_i * (1 / sum): e_i may be 2 ulp from libm's, the sum moves by less
  // (it averages), the reciprocal and the product add at most one rounding each.
  struct Case {
    const char* name;
    std::vector<float> x;
  };
  std::vector<Case> cases;
  cases.push_back({"moderate", random_floats(4096, 22, -10.0f, 10.0f)});
  cases.push_back({"wide (tiny and subnormal probabilities)", random_floats(4096, 23, -120.0f, 5.0f)});
  std::vector<float> masked = random_floats(4096, 24, -3.0f, 3.0f);
  for (size_t i = 0; i < masked.size(); i += 3) masked[i] = -std::numeric_limits<float>::infinity();
  cases.push_back({"with -inf (masked) entries", masked});
  for (CpuVariant v : simd_variants()) {
    for (const Case& c : cases) {
      for (int64_t n : kLengths) {
        SCOPED_TRACE(test::variant_label(v) + " " + c.name + " n=" + std::to_string(n));
        std::vector<float> want(c.x.begin(), c.x.begin() + n);
        if (std::isinf(want[0])) want[0] = 0.0f;  // at least one finite entry
        std::vector<float> got = want;
        scalar_table().softmax(want.data(), n);
        kernels_for(v).softmax(got.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          // subnormal probabilities (below 2^-126) have fewer significant bits: compare absolutely
          if (std::fabs(want[i]) < std::numeric_limits<float>::min()) {
            ASSERT_NEAR(got[i], want[i], 4 * std::numeric_limits<float>::denorm_min()) << "at " << i;
          } else {
            ASSERT_LE(ulp_distance(got[i], want[i]), 4) << "at " << i << " got " << got[i] << " want " << want[i];
          }
        }
      }
    }
  }
}

TEST(PointwiseVariants, NormsMatchScalarWithinTwoUlp) {
  // Only the order of the double sums differs, so mean, variance and the scale agree except at
  // a float rounding boundary (1 ulp), which moves each output by at most ~1.5 ulp.
  for (CpuVariant v : simd_variants()) {
    for (int64_t n : kLengths) {
      SCOPED_TRACE(test::variant_label(v) + " n=" + std::to_string(n));
      const std::vector<float> x = random_floats(static_cast<size_t>(n), 25, -3.0f, 5.0f);
      const std::vector<float> w = random_floats(static_cast<size_t>(n), 26, 0.5f, 1.5f);
      const std::vector<float> b = random_floats(static_cast<size_t>(n), 27, -1.0f, 1.0f);
      for (int variant = 0; variant < 3; ++variant) {
        const float* wp = variant >= 1 ? w.data() : nullptr;
        const float* bp = variant >= 2 ? b.data() : nullptr;
        std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
        scalar_table().rms_norm(x.data(), wp, want.data(), n, 1e-6f);
        kernels_for(v).rms_norm(x.data(), wp, got.data(), n, 1e-6f);
        for (int64_t i = 0; i < n; ++i) ASSERT_LE(ulp_distance(got[i], want[i]), 2) << "rms_norm at " << i;
        scalar_table().layer_norm(x.data(), wp, bp, want.data(), n, 1e-5f);
        kernels_for(v).layer_norm(x.data(), wp, bp, got.data(), n, 1e-5f);
        // x - mean cancels: measure against the output scale instead of each (possibly tiny) value
        float scale_of_y = 0.0f;
        for (float y : want) scale_of_y = std::max(scale_of_y, std::fabs(y));
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_NEAR(got[i], want[i], 2 * scale_of_y * std::numeric_limits<float>::epsilon()) << "layer_norm at " << i;
        }
      }
      // in place (the forward pass normalises rows in place)
      std::vector<float> in_place = x, want(static_cast<size_t>(n));
      scalar_table().layer_norm(x.data(), w.data(), b.data(), want.data(), n, 1e-5f);
      kernels_for(v).layer_norm(in_place.data(), w.data(), b.data(), in_place.data(), n, 1e-5f);
      float scale_of_y = 0.0f;
      for (float y : want) scale_of_y = std::max(scale_of_y, std::fabs(y));
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(in_place[i], want[i], 2 * scale_of_y * std::numeric_limits<float>::epsilon());
      }
    }
  }
}

TEST(PointwiseVariants, GeluIsBitIdentical) {
  std::vector<float> x = random_floats(6000, 28, -12.0f, 12.0f);
  // the clamps, F16 rounding ties, values outside the F16 table's useful range, signed zero
  x.insert(x.end(), {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f), -10.001f, 9.999f,
                     0.0f, -0.0f, 1e-8f, -1e-8f, 1.0009765625f, 1.00048828125f, 2.00048828125f, 65504.0f,
                     -65504.0f, 1e6f, -1e6f});
  for (CpuVariant v : simd_variants()) {
    for (int64_t n : kLengths) {
      if (static_cast<size_t>(n) > x.size()) continue;
      SCOPED_TRACE(test::variant_label(v) + " n=" + std::to_string(n));
      std::vector<float> want(x.end() - n, x.end()), got = want;
      scalar_table().gelu(want.data(), n);
      kernels_for(v).gelu(got.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << got[i] << " vs " << want[i];
    }
  }
}

TEST(PointwiseVariants, AddMulScaleAreBitIdentical) {
  for (CpuVariant v : simd_variants()) {
    for (int64_t n : kLengths) {
      SCOPED_TRACE(test::variant_label(v) + " n=" + std::to_string(n));
      const std::vector<float> a = random_floats(static_cast<size_t>(n), 29, -5.0f, 5.0f);
      const std::vector<float> b = random_floats(static_cast<size_t>(n), 30, -5.0f, 5.0f);
      std::vector<float> want = a, got = a;
      scalar_table().add(want.data(), b.data(), n);
      kernels_for(v).add(got.data(), b.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(got[i], want[i]));
      want = a;
      got = a;
      scalar_table().mul(want.data(), b.data(), n);
      kernels_for(v).mul(got.data(), b.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(got[i], want[i]));
      want = a;
      got = a;
      scalar_table().scale(want.data(), 0.3f, n);
      kernels_for(v).scale(got.data(), 0.3f, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(got[i], want[i]));
      // nothing past n is touched
      std::vector<float> guard = a;
      guard.push_back(123.0f);
      kernels_for(v).scale(guard.data(), 2.0f, n);
      ASSERT_EQ(guard.back(), 123.0f);
    }
  }
}

TEST(PointwiseVariants, RopeIsBitIdentical) {
  const std::vector<float> factors = random_floats(64, 31, 1.0f, 8.0f);
  struct Shape {
    int32_t n_heads, head_dim, rope_dims;
  };
  // full vectors, partial rotation, and rotated widths that leave every kind of tail
  const Shape shapes[] = {{4, 64, 0}, {3, 128, 0}, {2, 80, 0}, {2, 64, 24}, {5, 96, 32}, {1, 6, 0}, {2, 64, 40}, {1, 2, 0}};
  for (CpuVariant v : simd_variants()) {
    for (const Shape& s : shapes) {
      for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
        for (int scaling = 0; scaling < 3; ++scaling) {
          RopeParams p;
          p.style = style;
          p.rope_dims = s.rope_dims;
          if (scaling == 1) {
            p.freq_factors = factors.data();
            p.attn_factor = 1.19f;
          } else if (scaling == 2) {
            p.freq_scale = 0.25f;
            p.ext_factor = 1.0f;
            p.n_ctx_orig = 4096;
          }
          for (int32_t pos : {0, 1, 37, 4000}) {
            SCOPED_TRACE(test::variant_label(v) + " heads=" + std::to_string(s.n_heads) + " dim=" +
                         std::to_string(s.head_dim) + " rope_dims=" + std::to_string(s.rope_dims) + " neox=" +
                         std::to_string(style == RopeStyle::kNeox) + " scaling=" + std::to_string(scaling) +
                         " pos=" + std::to_string(pos));
            const std::vector<float> x = random_floats(static_cast<size_t>(s.n_heads * s.head_dim), 32 + pos);
            std::vector<float> want = x, got = x;
            scalar_table().rope(want.data(), s.n_heads, s.head_dim, pos, p);
            kernels_for(v).rope(got.data(), s.n_heads, s.head_dim, pos, p);
            for (size_t i = 0; i < x.size(); ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << "at " << i;
          }
        }
      }
    }
  }
}

TEST(PointwiseVariants, EveryVariantFillsEveryPointwiseEntry) {
  for (CpuVariant v : supported_cpu_variants()) {
    const KernelTable& t = kernels_for(v);
    EXPECT_NE(t.rms_norm, nullptr);
    EXPECT_NE(t.layer_norm, nullptr);
    EXPECT_NE(t.softmax, nullptr);
    EXPECT_NE(t.silu, nullptr);
    EXPECT_NE(t.gelu, nullptr);
    EXPECT_NE(t.add, nullptr);
    EXPECT_NE(t.mul, nullptr);
    EXPECT_NE(t.scale, nullptr);
    EXPECT_NE(t.rope, nullptr);
    if (v != CpuVariant::kScalar) {
      // the SIMD files really override the scalar entries
      EXPECT_NE(t.softmax, scalar_table().softmax) << test::variant_label(v);
      EXPECT_NE(t.rope, scalar_table().rope) << test::variant_label(v);
    }
  }
}

}  // namespace
}  // namespace hearth::kernels
