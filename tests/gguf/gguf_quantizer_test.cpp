// The quantizer against llama.cpp's own files: quantizing the shared random llama F32 model to
// each type gives exactly llama-quantize's tensor types and bytes; from F16 the dequantized
// weights stay within per-type error bounds; already-quantized sources, unknown types and rows
// that do not fit a block type are handled as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/file_type_names.h"
#include "gguf/gguf_quantizer.h"
#include "tensor/quantize.h"
#include "util/file_io.h"

namespace hearth::gguf {
namespace {

// The shared llama file of a type: models/random, or shared/next/models for the newer formats.
std::string random_model(const std::string& type) {
  const std::string path = test::models_dir() + "/random/llama-" + type + ".gguf";
  if (test::file_exists(path)) return path;
  const std::string next = test::shared_dir() + "/next/models/llama-" + type + ".gguf";
  return test::file_exists(next) ? next : path;
}

struct Case {
  const char* type;
  double max_relative_rmse;  // of dequantized weights against the F16 source
};

class QuantizeLikeLlamaCpp : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizeLikeLlamaCpp, F32SourceGivesLlamaQuantizeTypesAndBytes) {
  const Case c = GetParam();
  HEARTH_REQUIRE_FILE(random_model("F32"));
  HEARTH_REQUIRE_FILE(random_model(c.type));
  const std::string dir = test::make_temp_dir();
  auto type = quantize_type_from_name(c.type);
  ASSERT_TRUE(type.ok());
  auto summary = quantize_gguf_file(random_model("F32"), dir + "/q.gguf", *type, 2, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.error().to_string();
  EXPECT_EQ(summary->source_type, "F32");

  auto mine = File::open(dir + "/q.gguf");
  auto theirs = File::open(random_model(c.type));
  ASSERT_TRUE(mine.ok() && theirs.ok());
  EXPECT_EQ(mine->get_or<uint32_t>("general.file_type", 0), theirs->get_or<uint32_t>("general.file_type", 1));
  EXPECT_EQ(quantization_label(*mine), c.type);
  ASSERT_EQ(mine->tensors().size(), theirs->tensors().size());
  for (size_t i = 0; i < mine->tensors().size(); ++i) {
    const TensorInfo& a = mine->tensors()[i];
    const TensorInfo* b = theirs->find_tensor(a.name);
    ASSERT_NE(b, nullptr) << a.name;
    EXPECT_EQ(dtype_name(a.type), dtype_name(b->type)) << a.name;
    ASSERT_EQ(a.size_bytes, b->size_bytes) << a.name;
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(a.data), a.size_bytes),
              std::string_view(reinterpret_cast<const char*>(b->data), b->size_bytes))
        << a.name << " differs from llama-quantize's bytes";
  }
}

// From F16 for the types whose quantizers are cheap (the IQ4 searches cost ~10 s a file under
// ASan; their bytes are checked from F32 above and their error bounds in the tensor tests).
class QuantizeFromF16 : public QuantizeLikeLlamaCpp {};

TEST_P(QuantizeFromF16, F16SourceDequantizesCloseToTheSource) {
  const Case c = GetParam();
  HEARTH_REQUIRE_FILE(random_model("F16"));
  const std::string dir = test::make_temp_dir();
  auto type = quantize_type_from_name(c.type);
  ASSERT_TRUE(type.ok());
  auto summary = quantize_gguf_file(random_model("F16"), dir + "/q.gguf", *type, 2, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.error().to_string();
  EXPECT_EQ(summary->source_type, "F16");
  auto src = File::open(random_model("F16"));
  auto out = File::open(dir + "/q.gguf");
  ASSERT_TRUE(src.ok() && out.ok());
  for (const TensorInfo& t : out->tensors()) {
    const TensorInfo* s = src->find_tensor(t.name);
    ASSERT_NE(s, nullptr);
    auto want = dequantize_tensor(s->type, s->data, s->size_bytes, s->element_count());
    auto got = dequantize_tensor(t.type, t.data, t.size_bytes, t.element_count());
    ASSERT_TRUE(want.ok() && got.ok()) << t.name;
    double err = 0, norm = 0;
    for (size_t i = 0; i < want->size(); ++i) {
      err += ((*got)[i] - (*want)[i]) * ((*got)[i] - (*want)[i]);
      norm += (*want)[i] * (*want)[i];
    }
    const double rel = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
    EXPECT_LE(rel, c.max_relative_rmse) << t.name << " (" << dtype_name(t.type) << ")";
    if (t.shape.size() == 1) EXPECT_EQ(t.type, s->type) << t.name << ": 1-D tensors keep their type";
  }
}

// Bounds: a 4-bit block type (IQ4 included) keeps about 10% relative RMS error on Gaussian weights, Q6_K
// about 2.5%, Q8_0 about 0.5%; the mixes' Q6_K tensors only lower it.
INSTANTIATE_TEST_SUITE_P(Types, QuantizeLikeLlamaCpp,
                         ::testing::Values(Case{"Q8_0", 0.008}, Case{"Q4_0", 0.13}, Case{"Q4_K_M", 0.11},
                                           Case{"Q5_K_M", 0.055}, Case{"Q6_K", 0.03}, Case{"IQ4_NL", 0.11},
                                           Case{"IQ4_XS", 0.11}),
                         [](const auto& info) { return std::string(info.param.type); });
INSTANTIATE_TEST_SUITE_P(Types, QuantizeFromF16,
                         ::testing::Values(Case{"Q8_0", 0.008}, Case{"Q4_0", 0.13}, Case{"Q4_K_M", 0.11},
                                           Case{"Q5_K_M", 0.055}, Case{"Q6_K", 0.03}),
                         [](const auto& info) { return std::string(info.param.type); });

TEST(Quantize, F16TargetKeepsF16WeightsExactly) {
  HEARTH_REQUIRE_FILE(random_model("F16"));
  const std::string dir = test::make_temp_dir();
  auto summary = quantize_gguf_file(random_model("F16"), dir + "/f16.gguf", FileType::kF16, 2, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.error().to_string();
  EXPECT_EQ(summary->quantized, 0u);
  auto a = File::open(random_model("F16"));
  auto b = File::open(dir + "/f16.gguf");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b->get_or<uint32_t>("general.file_type", 0), 1u);
  for (const TensorInfo& t : b->tensors()) {
    const TensorInfo* s = a->find_tensor(t.name);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(t.type, s->type);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(t.data), t.size_bytes),
              std::string_view(reinterpret_cast<const char*>(s->data), s->size_bytes));
  }
}

TEST(Quantize, RefusesAnAlreadyQuantizedSourceAndUnknownTypes) {
  HEARTH_REQUIRE_FILE(random_model("Q4_0"));
  const std::string dir = test::make_temp_dir();
  auto r = quantize_gguf_file(random_model("Q4_0"), dir + "/x.gguf", FileType::kQ4_K_M, 2, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUnsupported);
  EXPECT_NE(r.error().message.find("already quantized (Q4_0"), std::string::npos) << r.error().message;
  EXPECT_FALSE(test::file_exists(dir + "/x.gguf"));

  for (const char* bad : {"q3_k_xl", "", "Q4_K_M "}) {
    auto t = quantize_type_from_name(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.error().message.find("supported types are F16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS"),
              std::string::npos);
  }
  EXPECT_EQ(*quantize_type_from_name("q4_k_m"), FileType::kQ4_K_M);
  EXPECT_EQ(*quantize_type_from_name("Q5_K_M"), FileType::kQ5_K_M);
}

// Rows that do not fit the block size take a compatible type, as llama-quantize does: a K-quant
// row of 96 elements becomes a 32-element legacy type, a row of 40 elements stays F16.
TEST(Quantize, RowsThatDoNotFitTheBlockFallBackToACompatibleType) {
  const std::string dir = test::make_temp_dir();
  Writer w(32);
  w.set("general.architecture", Value(std::string("llama")));
  w.set("general.file_type", Value(uint32_t{0}));
  auto add = [&](const std::string& name, int64_t cols, int64_t rows) {
    std::vector<float> v(static_cast<size_t>(cols * rows));
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i));
    std::vector<int64_t> shape = {cols};
    if (rows > 1) shape.push_back(rows);
    ASSERT_TRUE(w.add_tensor(name, DType::kF32, shape,
                             std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)))
                    .ok());
  };
  add("token_embd.weight", 256, 8);
  add("blk.0.attn_q.weight", 96, 4);
  add("blk.0.ffn_down.weight", 40, 4);
  add("blk.0.attn_norm.weight", 96, 1);
  add("output.weight", 96, 8);
  ASSERT_TRUE(w.write(dir + "/odd.gguf").ok());
  auto summary = quantize_gguf_file(dir + "/odd.gguf", dir + "/q.gguf", FileType::kQ4_K_M, 2, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.error().to_string();
  EXPECT_EQ(summary->fallbacks.size(), 3u);
  auto f = File::open(dir + "/q.gguf");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->find_tensor("token_embd.weight")->type, DType::kQ4_K);
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type, DType::kQ5_0);
  EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->type, DType::kF16);
  EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->type, DType::kF32);
  EXPECT_EQ(f->find_tensor("output.weight")->type, DType::kQ8_0);
  EXPECT_EQ(f->get_or<uint32_t>("general.file_type", 0), 15u);
}

}  // namespace
}  // namespace hearth::gguf

namespace hearth::gguf {
namespace {

// The IQ4 mixes' rules that the shared llama file (n_head / n_head_kv < 4, 2 layers) does not
// exercise: attn_v and the first eighth of ffn_down go to Q5_K, IQ4_XS rows that are not a
// multiple of 256 fall back to IQ4_NL, the output matrix takes Q6_K.
TEST(QuantMix, IQ4MixRules) {
  for (FileType ft : {FileType::kIQ4_NL, FileType::kIQ4_XS}) {
    const DType base = ft == FileType::kIQ4_NL ? DType::kIQ4_NL : DType::kIQ4_XS;
    TensorRole v{"blk.3.attn_v.weight", 4096, 1024, true, false, 3, 32, 4};
    EXPECT_EQ(tensor_type_for(ft, v), DType::kQ5_K);
    v.n_gqa = 2;
    EXPECT_EQ(tensor_type_for(ft, v), base);
    TensorRole down{"blk.3.ffn_down.weight", 4096, 4096, true, false, 3, 32, 1};
    EXPECT_EQ(tensor_type_for(ft, down), DType::kQ5_K);  // layer 3 < 32 / 8
    down.layer = 4;
    EXPECT_EQ(tensor_type_for(ft, down), base);
    TensorRole out{"output.weight", 4096, 32000, true, true, -1, 0, 1};
    EXPECT_EQ(tensor_type_for(ft, out), DType::kQ6_K);
    TensorRole odd{"blk.0.attn_q.weight", 96, 96, true, false, 0, 32, 1};
    EXPECT_EQ(tensor_type_for(ft, odd), DType::kIQ4_NL);
  }
}

}  // namespace
}  // namespace hearth::gguf
