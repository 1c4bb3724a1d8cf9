// Round-trip error bounds of every quantized type on random data, hand-built blocks that pin
// each layout's bit positions, and the error values of the DType-dispatching API.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth {
namespace {

std::vector<float> gaussian(int64_t n, uint32_t seed, float std_dev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, std_dev);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

double relative_rms_error(const std::vector<float>& ref, const std::vector<float>& got) {
  double err = 0, sig = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    err += d * d;
    sig += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(err / sig);
}

std::vector<float> round_trip(DType type, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  auto bytes = dtype_row_bytes(type, static_cast<uint64_t>(n));
  EXPECT_TRUE(bytes.ok());
  std::vector<uint32_t> storage((*bytes + 3) / 4);  // 4-byte aligned
  EXPECT_TRUE(quantize_row(type, x.data(), storage.data(), n).ok());
  std::vector<float> y(x.size());
  EXPECT_TRUE(dequantize_row(type, storage.data(), y.data(), n).ok());
  return y;
}

struct TypeBound {
  DType type;
  double max_relative_rms;  // on N(0,1) data
};

// Bounds are about 1.3x the measured error of the reference algorithms on N(0,1) data.
constexpr TypeBound kBounds[] = {
    {DType::kF16, 3e-4},  {DType::kBF16, 3e-3}, {DType::kQ8_0, 0.006}, {DType::kQ8_1, 0.006},
    {DType::kQ4_0, 0.13}, {DType::kQ4_1, 0.12}, {DType::kQ5_0, 0.065}, {DType::kQ5_1, 0.06},
    {DType::kQ2_K, 0.42}, {DType::kQ3_K, 0.23}, {DType::kQ4_K, 0.11},  {DType::kQ5_K, 0.055},
    {DType::kQ6_K, 0.028}, {DType::kQ8_K, 0.009}, {DType::kIQ4_NL, 0.1}, {DType::kIQ4_XS, 0.1},
    {DType::kMXFP4, 0.15},
};

TEST(QuantizeRoundTrip, RandomDataWithinBounds) {
  const auto x = gaussian(256 * 64, 1234);
  for (const auto& b : kBounds) {
    const auto y = round_trip(b.type, x);
    const double rel = relative_rms_error(x, y);
    std::printf("  round trip %-5s relative RMS error %.5f (bound %.4f)\n",
                std::string(dtype_name(b.type)).c_str(), rel, b.max_relative_rms);
    EXPECT_LT(rel, b.max_relative_rms) << dtype_name(b.type);
    // And the error must not be suspiciously small for a lossy type either.
    EXPECT_GT(rel, b.max_relative_rms / 6) << dtype_name(b.type);
  }
}

TEST(QuantizeRoundTrip, ZerosAndConstantsStayFinite) {
  for (const auto& b : kBounds) {
    for (float value : {0.0f, 1.5f, -0.25f}) {
      std::vector<float> x(512, value);
      const auto y = round_trip(b.type, x);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << dtype_name(b.type);
        ASSERT_NEAR(y[i], value, std::fabs(value) * 0.02 + 1e-6) << dtype_name(b.type) << " i=" << i;
      }
    }
  }
}

// Garbage in (NaN, infinities, huge values) must not crash or hit undefined behaviour; the
// output values are unspecified.
TEST(QuantizeRoundTrip, NonFiniteInputIsSafe) {
  auto x = gaussian(512, 7);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[40] = std::numeric_limits<float>::infinity();
  x[300] = -std::numeric_limits<float>::infinity();
  x[301] = 3e38f;
  x[302] = -3e38f;
  for (const auto& b : kBounds) {
    const auto y = round_trip(b.type, x);
    EXPECT_EQ(y.size(), x.size());
  }
  std::vector<float> nans(512, std::numeric_limits<float>::quiet_NaN());
  for (const auto& b : kBounds) EXPECT_EQ(round_trip(b.type, nans).size(), nans.size());
}

TEST(QuantizeRoundTrip, ScaleInvariantAcrossMagnitudes) {
  for (float scale : {1e-3f, 30.0f}) {
    const auto x = gaussian(256 * 8, 99, scale);
    for (const auto& b : kBounds) {
      EXPECT_LT(relative_rms_error(x, round_trip(b.type, x)), b.max_relative_rms * 1.2)
          << dtype_name(b.type) << " scale " << scale;
    }
  }
}

TEST(QuantizeRoundTrip, Q8_1SumAndQ8_KBlockSums) {
  const auto x = gaussian(256, 5);
  BlockQ8_1 q81[8];
  quantize_row_q8_1(x.data(), q81, 256);
  for (const auto& b : q81) {
    int sum = 0;
    for (int8_t q : b.qs) sum += q;
    // s is computed from the unrounded scale, so compare within fp16 precision.
    const float expect = static_cast<float>(sum) * fp16_to_fp32(b.d);
    EXPECT_NEAR(fp16_to_fp32(b.s), expect, std::fabs(expect) * 2e-3 + 1e-6);
  }
  BlockQ8_K q8k;
  quantize_row_q8_k(x.data(), &q8k, 256);
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += q8k.qs[16 * g + l];
    EXPECT_EQ(q8k.bsums[g], sum);
  }
}

// ---- hand-built blocks: pin the bit positions of each layout ----

TEST(BlockLayout, Q4_0AndQ4_1Nibbles) {
  BlockQ4_0 b{};
  b.d = fp32_to_fp16(0.5f);
  b.qs[0] = 0x2F;  // element 0 = 15, element 16 = 2
  float y[32];
  dequantize_row_q4_0(&b, y, 32);
  EXPECT_EQ(y[0], (15 - 8) * 0.5f);
  EXPECT_EQ(y[16], (2 - 8) * 0.5f);
  EXPECT_EQ(y[1], -8 * 0.5f);
  BlockQ4_1 c{};
  c.d = fp32_to_fp16(2.0f);
  c.m = fp32_to_fp16(-1.0f);
  c.qs[3] = 0x51;
  dequantize_row_q4_1(&c, y, 32);
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[19], 9.0f);
  EXPECT_EQ(y[0], -1.0f);
}

TEST(BlockLayout, Q5HighBitsAreLittleEndianWord) {
  BlockQ5_0 b{};
  b.d = fp32_to_fp16(1.0f);
  b.qh[0] = 0x02;  // element 1
  b.qh[2] = 0x01;  // element 16
  b.qs[1] = 0x03;
  float y[32];
  dequantize_row_q5_0(&b, y, 32);
  EXPECT_EQ(y[1], (16 + 3) - 16.0f);
  EXPECT_EQ(y[16], 16 - 16.0f);
  EXPECT_EQ(y[0], -16.0f);
  BlockQ5_1 c{};
  c.d = fp32_to_fp16(1.0f);
  c.qh[3] = 0x80;  // element 31
  dequantize_row_q5_1(&c, y, 32);
  EXPECT_EQ(y[31], 16.0f);
  EXPECT_EQ(y[15], 0.0f);
}

TEST(BlockLayout, KQuantElementPositions) {
  float y[256];
  BlockQ2_K q2{};
  q2.d = fp32_to_fp16(1.0f);
  q2.dmin = fp32_to_fp16(0.5f);
  q2.scales[9] = 0x23;  // group 9 (elements 144..159): scale 3, min 2
  q2.qs[32 + 16] = 0x0C;  // bits 2..3 of qs[48]: element 128 + 32 * 1 + 16 = 176
  dequantize_row_q2_k(&q2, y, 256);
  EXPECT_EQ(y[150], -1.0f);              // q = 0: -dmin * 2
  EXPECT_EQ(y[176], 0.0f);               // group 11 has scale 0 and min 0, q = 3
  q2.scales[11] = 0x01;
  dequantize_row_q2_k(&q2, y, 256);
  EXPECT_EQ(y[176], 3.0f);

  BlockQ4_K q4{};
  q4.d = fp32_to_fp16(1.0f);
  q4.dmin = fp32_to_fp16(1.0f);
  q4.scales[5] = 1;           // group 5: 6-bit scale = (scales[9] & 15) | (scales[1] >> 6) << 4
  q4.scales[9] = 0x32;        // group 5 scale low 2, min low 3
  q4.scales[1] = 0x40;        // group 5 scale high bits 1 -> scale 18; group 1 scale 0
  q4.qs[64 + 7] = 0x50;       // group 5 (high nibble of chunk 2), element 160 + 7 = 5
  dequantize_row_q4_k(&q4, y, 256);
  EXPECT_EQ(y[167], 18.0f * 5 - 3.0f);

  BlockQ6_K q6{};
  q6.d = fp32_to_fp16(1.0f);
  for (auto& s : q6.scales) s = 1;
  q6.ql[64 + 10] = 0x70;      // element 128 + 64 + 10 (high nibble of ql[74])
  q6.qh[32 + 10] = 0x30;      // its top bits (bits 4..5): q = 7 | 3 << 4 = 55
  dequantize_row_q6_k(&q6, y, 256);
  EXPECT_EQ(y[202], 55.0f - 32.0f);
  EXPECT_EQ(y[0], -32.0f);

  BlockQ3_K q3{};
  q3.d = fp32_to_fp16(1.0f);
  q3.scales[1] = 0x01;        // group 1 low bits 1, group 9 low bits 0
  q3.scales[9] = 0x02;        // group 1 high bits 2 -> 6-bit scale 33 -> 1 after the bias
  q3.hmask[20] = 0x01;        // element 20 has its high bit set
  q3.qs[20] = 0x02;
  dequantize_row_q3_k(&q3, y, 256);
  EXPECT_EQ(y[20], 2.0f);
  EXPECT_EQ(y[21], -4.0f);
}

// ---- dispatching API errors ----

TEST(QuantizeApi, RejectsBadArguments) {
  std::vector<uint32_t> buf(1024);
  std::vector<float> f(1024);
  auto s = dequantize_row(DType::kQ4_K, buf.data(), f.data(), 100);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("256"), std::string::npos) << s.error().message;
  EXPECT_FALSE(dequantize_row(DType::kI8, buf.data(), f.data(), 32).ok());
  EXPECT_EQ(dequantize_row(DType::kI8, buf.data(), f.data(), 32).error().kind, ErrorKind::kUnsupported);
  EXPECT_FALSE(quantize_row(DType::kQ8_0, f.data(), buf.data(), -32).ok());
  EXPECT_FALSE(dequantize_row(DType::kQ8_0, reinterpret_cast<uint8_t*>(buf.data()) + 1, f.data(), 32).ok());
  EXPECT_FALSE(dequantize_row(DType::kQ8_0, nullptr, f.data(), 32).ok());
  EXPECT_TRUE(dequantize_row(DType::kQ8_0, nullptr, f.data(), 0).ok());
  auto t = dequantize_tensor(DType::kQ8_0, buf.data(), 33, 32);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::kCorrupt);
  auto ok = dequantize_tensor(DType::kQ8_0, buf.data(), 34, 32);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 32u);
  EXPECT_TRUE(dtype_convertible(DType::kQ6_K));
  EXPECT_FALSE(dtype_convertible(DType::kI32));
}

}  // namespace
}  // namespace hearth
