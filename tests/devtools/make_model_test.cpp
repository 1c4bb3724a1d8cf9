// make-model through the same code path the benchmark files take, at the tiny shapes: the file
// loads in Hearth and decodes to finite logits, tensors get llama-quantize's Q4_K_M mix (with
// the legacy fallbacks for rows that are not a multiple of 256), the synthetic vocabulary
// merges bytes and has its control tokens where the shape puts them, the bytes do not depend
// on the thread count, and bad options are errors.
#include <gtest/gtest.h>

#include <cmath>

#include "common/test_paths.h"
#include "devtools/model_maker.h"
#include "engine/inference_context.h"
#include "gguf/gguf_file.h"
#include "util/file_io.h"

namespace hearth::devtools {
namespace {

std::string make(const std::string& arch, const std::string& type, const std::string& dir, int threads = 2) {
  MakeModelOptions o;
  o.arch = arch;
  o.shape = "tiny";
  o.type = type;
  o.n_threads = threads;
  o.output = dir + "/" + arch + "-" + type + "-" + std::to_string(threads) + ".gguf";
  auto st = make_model(o);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return o.output;
}

DType type_of(const gguf::File& f, const std::string& name) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  return t == nullptr ? DType::kF32 : t->type;
}

void expect_decodes(const std::string& path) {
  engine::ContextOptions co;
  co.n_threads = 2;
  co.n_ctx = 64;
  auto ctx = engine::InferenceContext::load(path, co);
  ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
  const auto& tok = (*ctx)->tokenizer();
  // "!!" is the first two-byte token, right after the 256 byte tokens.
  EXPECT_EQ(tok.encode("!!", false, false), (std::vector<int32_t>{256}));
  EXPECT_EQ(tok.decode(tok.encode("Hello, world!", false, false)), "Hello, world!");
  const int32_t seq = (*ctx)->seq_create();
  std::vector<model::BatchToken> batch;
  for (int32_t i = 0; i < 5; ++i) batch.push_back({i * 37 % 900, seq, i, i == 4});
  std::vector<float> logits;
  auto st = (*ctx)->decode(batch, logits);
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  ASSERT_EQ(logits.size(), 1024u);
  float spread = 0;
  for (float x : logits) {
    ASSERT_TRUE(std::isfinite(x));
    spread = std::max(spread, std::fabs(x - logits[0]));
  }
  EXPECT_GT(spread, 0.0f);
}

TEST(MakeModel, TinyLlamaQ4KMHasTheMixAndRuns) {
  const std::string dir = test::make_temp_dir();
  const std::string path = make("llama", "q4_k_m", dir);
  auto f = gguf::File::open(path);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ(type_of(*f, "token_embd.weight"), DType::kQ6_K);  // tied output
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(type_of(*f, "blk.0.attn_q.weight"), DType::kQ4_K);
  EXPECT_EQ(type_of(*f, "blk.0.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(type_of(*f, "blk.1.attn_v.weight"), DType::kQ6_K);  // last eighth of 2 layers
  EXPECT_EQ(type_of(*f, "blk.0.ffn_down.weight"), DType::kQ4_K);
  EXPECT_EQ(type_of(*f, "blk.1.ffn_down.weight"), DType::kQ6_K);
  EXPECT_EQ(type_of(*f, "blk.0.attn_norm.weight"), DType::kF32);
  EXPECT_EQ(type_of(*f, "rope_freqs.weight"), DType::kF32);
  EXPECT_EQ(f->get_or<uint32_t>("general.file_type", 0), 15u);
  EXPECT_EQ(f->get_or<std::string>("tokenizer.ggml.pre", ""), "llama-bpe");
  expect_decodes(path);
}

TEST(MakeModel, TinyQwen2TakesTheLegacyFallbacks) {
  const std::string dir = test::make_temp_dir();
  const std::string path = make("qwen2", "q4_k_m", dir);
  auto f = gguf::File::open(path);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  // 320 columns: Q4_K falls back to Q5_0, Q6_K (output, raised attn_v) to Q8_0.
  EXPECT_EQ(type_of(*f, "token_embd.weight"), DType::kQ8_0);
  EXPECT_EQ(type_of(*f, "blk.0.attn_q.weight"), DType::kQ5_0);
  EXPECT_EQ(type_of(*f, "blk.1.attn_v.weight"), DType::kQ8_0);
  EXPECT_EQ(type_of(*f, "blk.0.ffn_down.weight"), DType::kQ4_K);  // 512 columns
  EXPECT_EQ(type_of(*f, "blk.1.ffn_down.weight"), DType::kQ6_K);
  EXPECT_EQ(type_of(*f, "blk.0.attn_q.bias"), DType::kF32);
  EXPECT_EQ(f->get_or<std::string>("tokenizer.ggml.pre", ""), "qwen2");
  expect_decodes(path);
}

TEST(MakeModel, EveryTypeLoadsAndOutputTypesFollowTheFileType) {
  const std::string dir = test::make_temp_dir();
  const std::pair<const char*, DType> want[] = {
      {"f16", DType::kF16}, {"q8_0", DType::kQ8_0}, {"q4_0", DType::kQ6_K}, {"q6_k", DType::kQ6_K}};
  for (const auto& [type, embd] : want) {
    SCOPED_TRACE(type);
    const std::string path = make("llama", type, dir);
    auto f = gguf::File::open(path);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(type_of(*f, "token_embd.weight"), embd);
    expect_decodes(path);
  }
}

TEST(MakeModel, TinyQwen3MoeHasStackedExpertsAndRuns) {
  const std::string dir = test::make_temp_dir();
  const std::string path = make("qwen3moe", "q4_k_m", dir);
  auto f = gguf::File::open(path);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  const gguf::TensorInfo* up = f->find_tensor("blk.1.ffn_up_exps.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->shape, (std::vector<int64_t>{256, 256, 8}));
  EXPECT_EQ(up->type, DType::kQ4_K);
  EXPECT_EQ(type_of(*f, "blk.0.ffn_gate_inp.weight"), DType::kF32);  // the router stays F32
  EXPECT_EQ(type_of(*f, "blk.0.attn_k_norm.weight"), DType::kF32);
  EXPECT_EQ(type_of(*f, "output.weight"), DType::kQ6_K);  // untied
  EXPECT_EQ(f->get_or<uint32_t>("qwen3moe.expert_used_count", 0), 2u);
  expect_decodes(path);
}

TEST(MakeModel, TinyGptOssHasMxfp4ExpertsAndRuns) {
  const std::string dir = test::make_temp_dir();
  const std::string path = make("gpt-oss", "q8_0", dir);
  auto f = gguf::File::open(path);
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ(type_of(*f, "blk.0.ffn_down_exps.weight"), DType::kMXFP4);
  EXPECT_EQ(type_of(*f, "blk.0.attn_q.weight"), DType::kQ8_0);
  const gguf::TensorInfo* bias = f->find_tensor("blk.0.ffn_down_exps.bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->shape, (std::vector<int64_t>{256, 4}));
  EXPECT_NE(f->find_tensor("blk.1.attn_sinks.weight"), nullptr);
  EXPECT_EQ(f->get_or<uint32_t>("gpt-oss.attention.sliding_window", 0), 16u);
  expect_decodes(path);
}

TEST(MakeModel, LayersOverrideAndArchPrefixedShapeNames) {
  const std::string dir = test::make_temp_dir();
  MakeModelOptions o;
  o.shape = "qwen3moe-tiny";  // --arch left at its default
  o.n_layers = 1;
  o.type = "q8_0";
  o.output = dir + "/one-layer.gguf";
  ASSERT_TRUE(make_model(o).ok());
  auto f = gguf::File::open(o.output);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->get_or<uint32_t>("qwen3moe.block_count", 0), 1u);
  EXPECT_EQ(f->find_tensor("blk.1.attn_q.weight"), nullptr);
  o.n_layers = -1;
  EXPECT_FALSE(make_model(o).ok());
}

TEST(MakeModel, BytesDoNotDependOnThreads) {
  const std::string dir = test::make_temp_dir();
  auto one = read_file(make("qwen2", "q4_0", dir, 1));
  auto two = read_file(make("qwen2", "q4_0", dir, 2));
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_TRUE(*one == *two);
}

TEST(MakeModel, BadOptionsAreErrors) {
  const std::string dir = test::make_temp_dir();
  MakeModelOptions o;
  o.output = dir + "/x.gguf";
  o.shape = "7b";
  auto st = make_model(o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("llama/1b"), std::string::npos);
  o.shape = "tiny";
  o.type = "q3_k_s";
  EXPECT_FALSE(make_model(o).ok());
  o.type = "q4_0";
  o.output = "";
  EXPECT_FALSE(make_model(o).ok());
  o.output = dir + "/missing-dir/x.gguf";
  EXPECT_FALSE(make_model(o).ok());
  EXPECT_FALSE(test::file_exists(dir + "/x.gguf"));
}

}  // namespace
}  // namespace hearth::devtools
