// Exhaustive and known-case checks of the binary16 and bfloat16 conversions in tensor/fp16.h:
// every half value round-trips, every rounding midpoint goes to the even neighbour, and the
// results agree with the compiler's own _Float16 conversion where it has one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tensor/fp16.h"

namespace hearth {
namespace {

bool is_fp16_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

TEST(Fp16, AllValuesRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const float f = fp16_to_fp32(half);
    if (is_fp16_nan(half)) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(is_fp16_nan(fp32_to_fp16(f))) << h;
      continue;
    }
    ASSERT_EQ(fp32_to_fp16(f), half) << "fp16 bits " << h << " -> " << f;
  }
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp16_to_fp32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
  EXPECT_EQ(fp32_to_fp16(0.1f), 0x2E66);
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);   // below the midpoint to 65536
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);   // the midpoint rounds (to even) to infinity
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal: even
  EXPECT_EQ(fp32_to_fp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 subnormal ulps: to even (2)
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie at 1: to even
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie at odd: up
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_TRUE(is_fp16_nan(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(is_fp16_nan(fp32_to_fp16(fp32_from_bits(0x7F800001u))));  // signalling, tiny payload
}

// Between each pair of adjacent finite halves a < b the midpoint must go to the one with an
// even mantissa, and the floats either side of it to the nearer one.
TEST(Fp16, EveryMidpointRoundsToEven) {
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const auto a = static_cast<uint16_t>(h | sign);
      const auto b = static_cast<uint16_t>((h + 1) | sign);
      const float fa = fp16_to_fp32(a);
      const float fb = fp16_to_fp32(b);
      const float mid = (fa + fb) / 2;  // exact in fp32
      const uint16_t even = (h & 1u) == 0 ? a : b;
      ASSERT_EQ(fp32_to_fp16(mid), even) << "midpoint after " << h;
      ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, fa)), a) << h;
      ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, fb)), b) << h;
    }
  }
}

#if defined(__FLT16_MAX__)
// Independent reference: the compiler's software/hardware _Float16 conversion (RNE).
TEST(Fp16, MatchesCompilerFloat16OnFloatSweep) {
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4093) {
    const float f = fp32_from_bits(static_cast<uint32_t>(u));
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    ASSERT_EQ(fp32_to_fp16(f), ref_bits) << "fp32 bits " << u;
  }
}
#endif

TEST(Bf16, AllValuesRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<uint16_t>(h);
    const float f = bf16_to_fp32(b);
    if (std::isnan(f)) {
      const uint16_t back = fp32_to_bf16(f);
      EXPECT_TRUE(std::isnan(bf16_to_fp32(back))) << h;
      EXPECT_EQ(back & 0x8000u, b & 0x8000u) << h;
      continue;
    }
    ASSERT_EQ(fp32_to_bf16(f), b) << h;
  }
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3F808000u)), 0x3F80);  // tie, even below
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3F818000u)), 0x3F82);  // tie, odd below: up
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3F807FFFu)), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x3F808001u)), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds to infinity
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x00000001u)), 0x0000);  // subnormals are rounded, kept
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x00018000u)), 0x0002);
  // NaN: made quiet, sign and top payload kept, never turned into infinity.
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x7F800001u)), 0x7FC0);
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0xFFFFFFFFu)), 0xFFFF);
  EXPECT_EQ(fp32_to_bf16(fp32_from_bits(0x7FC00000u)), 0x7FC0);
}

TEST(Fp16, RowHelpersMatchScalar) {
  float src[5] = {0.5f, -3.25f, 1e-6f, 70000.0f, 0.333f};
  uint16_t h[5], b[5];
  float back[5];
  fp32_to_fp16_row(src, h, 5);
  fp32_to_bf16_row(src, b, 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(h[i], fp32_to_fp16(src[i]));
    EXPECT_EQ(b[i], fp32_to_bf16(src[i]));
  }
  fp16_to_fp32_row(h, back, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back[i], fp16_to_fp32(h[i]));
  bf16_to_fp32_row(b, back, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back[i], bf16_to_fp32(b[i]));
}

}  // namespace
}  // namespace hearth
