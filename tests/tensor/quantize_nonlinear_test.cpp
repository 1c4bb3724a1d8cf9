// The non-linear 4-bit types (IQ4_NL, IQ4_XS, MXFP4): hand-built blocks decode to the values
// their layouts define, and the reference quantizers reproduce llama-quantize's bytes for every
// tensor of the shared files made with them (shared/next/models: llama-IQ4_NL and llama-IQ4_XS
// from the llama F32 file, the expert tensors of gpt-oss-MXFP4 from gpt-oss-F32).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth {
namespace {

TEST(NonLinearBlocks, IQ4_NLDecodesLevelsTimesScale) {
  BlockIQ4_NL b{};
  b.d = fp32_to_fp16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float y[32];
  dequantize_row_iq4_nl(&b, y, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * kIQ4NLValues[j]) << j;
    EXPECT_EQ(y[j + 16], 0.5f * kIQ4NLValues[15 - j]) << j;
  }
  EXPECT_EQ(y[0], -63.5f);
  EXPECT_EQ(y[16], 56.5f);
}

TEST(NonLinearBlocks, IQ4_XSSubBlockScalesAreSixBitsBiasedBy32) {
  BlockIQ4_XS b{};
  b.d = fp32_to_fp16(0.25f);
  // ls[j] = 32 + 5 j - 20 for j = 0..7: 12, 17, ..., 47 (low nibbles and high 2 bits split).
  int ls[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = 12 + 5 * j;
    b.scales_l[j / 2] = static_cast<uint8_t>(b.scales_l[j / 2] | ((ls[j] & 0xF) << (4 * (j % 2))));
    b.scales_h = static_cast<uint16_t>(b.scales_h | ((ls[j] >> 4) << (2 * j)));
  }
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i % 16) | ((i * 7 % 16) << 4));
  float y[256];
  dequantize_row_iq4_xs(&b, y, 256);
  for (int j = 0; j < 8; ++j) {
    ASSERT_EQ(iq4xs_scale(j, b), ls[j]);
    for (int l = 0; l < 16; ++l) {
      const int byte = 16 * j + l;
      EXPECT_EQ(y[32 * j + l], 0.25f * static_cast<float>(ls[j] - 32) * kIQ4NLValues[byte % 16]);
      EXPECT_EQ(y[32 * j + l + 16], 0.25f * static_cast<float>(ls[j] - 32) * kIQ4NLValues[byte * 7 % 16]);
    }
  }
}

TEST(NonLinearBlocks, MXFP4IsE2M1TimesPowerOfTwo) {
  EXPECT_EQ(mxfp4_half_scale(128), 1.0f);
  EXPECT_EQ(mxfp4_half_scale(127), 0.5f);
  EXPECT_EQ(mxfp4_half_scale(255), std::ldexp(1.0f, 127));
  EXPECT_EQ(mxfp4_half_scale(1), std::ldexp(1.0f, -127));  // subnormal
  EXPECT_EQ(mxfp4_half_scale(0), std::ldexp(1.0f, -128));
  BlockMXFP4 b{};
  b.e = 129;  // 2^(129 - 128) = 2: levels times 2, i.e. E2M1 values times 4
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((j ^ 8) << 4));
  float y[32];
  dequantize_row_mxfp4(&b, y, 32);
  const float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int j = 0; j < 16; ++j) {
    const float v = 4.0f * e2m1[j % 8] * (j < 8 ? 1.0f : -1.0f);
    EXPECT_EQ(y[j], v) << j;
    EXPECT_EQ(y[j + 16], -v) << j;  // sign bit flipped
  }
  // MXFP4 rows are 17 bytes a block: any byte address is aligned.
  std::vector<uint8_t> raw(1 + 2 * sizeof(BlockMXFP4));
  std::memcpy(raw.data() + 1, &b, sizeof b);
  std::memcpy(raw.data() + 1 + sizeof b, &b, sizeof b);
  std::vector<float> z(64);
  ASSERT_TRUE(dequantize_row(DType::kMXFP4, raw.data() + 1, z.data(), 64).ok());
  EXPECT_EQ(std::memcmp(z.data(), y, sizeof y), 0);
  EXPECT_EQ(std::memcmp(z.data() + 32, y, sizeof y), 0);
}

TEST(NonLinearBlocks, MXFP4QuantizerPicksExponentAndNearestLevel) {
  // amax 5.0: e = floor(log2 5) - 2 + 127 = 127, half-scale 0.5, levels 0.5 * {0..12}.
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.0f;
  x[0] = 5.0f;    // as far from 4 (index 6) as from 6 (index 7): the first
  x[1] = -0.7f;   // nearest -0.5 (index 9)
  x[2] = 2.4f;    // nearest 2 (index 4)
  x[16] = 1.25f;  // tie between 1 and 1.5: the first (index 2)
  BlockMXFP4 b;
  quantize_row_mxfp4(x, &b, 32);
  EXPECT_EQ(b.e, 127);
  EXPECT_EQ(b.qs[0] & 0xF, 6);
  EXPECT_EQ(b.qs[1] & 0xF, 9);
  EXPECT_EQ(b.qs[2] & 0xF, 4);
  EXPECT_EQ(b.qs[0] >> 4, 2);
  EXPECT_EQ(b.qs[3], 0);
}

struct Pairing {
  const char* quantized;  // file under shared/next/models
  const char* original;   // the F32 file it was made from
  DType type;
  double max_relative_rms;  // dequantized vs F32, per tensor
};

// Quantizes every tensor of `q` that has type p.type from the F32 original and compares bytes.
void check_file(const Pairing& p) {
  const std::string q_path = test::shared_dir() + "/next/models/" + p.quantized;
  HEARTH_REQUIRE_FILE(q_path);
  HEARTH_REQUIRE_FILE(p.original);
  auto q = gguf::File::open(q_path);
  ASSERT_TRUE(q.ok()) << q.error().to_string();
  auto f32 = gguf::File::open(p.original);
  ASSERT_TRUE(f32.ok()) << f32.error().to_string();
  int compared = 0;
  for (const auto& t : q->tensors()) {
    if (t.type != p.type) continue;
    const gguf::TensorInfo* ref = f32->find_tensor(t.name);
    ASSERT_NE(ref, nullptr) << t.name;
    ASSERT_EQ(ref->type, DType::kF32);
    ASSERT_EQ(ref->shape, t.shape) << t.name;
    // The first rows of each tensor (a few hundred blocks each) keep the test fast.
    const int64_t n = std::min<int64_t>(t.element_count(), 16 * 1024);
    const float* x = reinterpret_cast<const float*>(ref->data);
    auto deq = dequantize_tensor(t.type, t.data, *dtype_row_bytes(t.type, static_cast<uint64_t>(n)), n);
    ASSERT_TRUE(deq.ok()) << deq.error().to_string();
    double err2 = 0, ref2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>((*deq)[static_cast<size_t>(i)]) - x[i];
      err2 += d * d;
      ref2 += static_cast<double>(x[i]) * x[i];
    }
    EXPECT_LT(std::sqrt(err2 / ref2), p.max_relative_rms) << t.name;
    std::vector<uint8_t> mine(*dtype_row_bytes(t.type, static_cast<uint64_t>(n)) + 4);
    uint8_t* aligned = mine.data() + (4 - reinterpret_cast<uintptr_t>(mine.data()) % 4) % 4;
    ASSERT_TRUE(quantize_row(t.type, x, aligned, n).ok());
    const auto& info = dtype_info(t.type);
    int64_t bad = 0;
    for (int64_t b = 0; b < n / info.block_elems; ++b) {
      bad += std::memcmp(aligned + b * info.block_bytes, t.data + b * info.block_bytes, info.block_bytes) != 0;
    }
    EXPECT_EQ(bad, 0) << p.quantized << " " << t.name << ": " << bad << " of " << n / info.block_elems
                      << " blocks differ from llama-quantize's";
    ++compared;
  }
  std::printf("  %s: %d %s tensors byte-identical to llama-quantize's\n", p.quantized, compared,
              std::string(dtype_name(p.type)).c_str());
  EXPECT_GT(compared, 0) << p.quantized;
}

TEST(NonLinearQuantizers, ReproduceLlamaQuantizeBytes) {
  const std::string random = test::models_dir() + "/random";
  const std::string next = test::shared_dir() + "/next/models";
  const Pairing pairings[] = {
      {"llama-IQ4_NL.gguf", nullptr, DType::kIQ4_NL, 0.12},
      {"llama-IQ4_XS.gguf", nullptr, DType::kIQ4_XS, 0.12},
      {"gpt-oss-MXFP4.gguf", nullptr, DType::kMXFP4, 0.2},
  };
  const std::string originals[] = {random + "/llama-F32.gguf", random + "/llama-F32.gguf", next + "/gpt-oss-F32.gguf"};
  for (size_t i = 0; i < std::size(pairings); ++i) {
    Pairing p = pairings[i];
    p.original = originals[i].c_str();
    SCOPED_TRACE(p.quantized);
    check_file(p);
  }
}

}  // namespace
}  // namespace hearth
