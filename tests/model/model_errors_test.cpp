// Bad models give specific errors, never crashes: an unknown architecture, a missing tensor,
// a mis-shaped tensor, missing hyper-parameters, a truncated file, a token id out of range.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_writer.h"
#include "model/forward.h"
#include "model/model.h"
#include "util/file_io.h"

namespace hearth::model {
namespace {

// A tiny llama: 1 layer, n_embd 32, 2 heads, vocab 8. `skip` omits a tensor, `bad` gets a wrong
// shape.
std::string tiny_llama(const std::string& arch, const std::string& skip = "", const std::string& bad = "",
                       bool with_hparams = true, int64_t rope_freqs_len = 0) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value(arch));
  if (with_hparams) {
    w.set(arch + ".embedding_length", gguf::Value(uint32_t{32}));
    w.set(arch + ".block_count", gguf::Value(uint32_t{1}));
    w.set(arch + ".attention.head_count", gguf::Value(uint32_t{2}));
    w.set(arch + ".feed_forward_length", gguf::Value(uint32_t{64}));
    w.set(arch + ".context_length", gguf::Value(uint32_t{128}));
    w.set(arch + ".attention.layer_norm_rms_epsilon", gguf::Value(1e-5f));
  }
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    if (name == skip) return;
    if (name == bad) shape[0] += 32;
    int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> data(static_cast<size_t>(n), 0.01f);
    auto st = w.add_tensor(name, DType::kF32, shape,
                           std::string_view(reinterpret_cast<const char*>(data.data()), data.size() * 4));
    EXPECT_TRUE(st.ok());
  };
  if (rope_freqs_len > 0) {
    std::vector<float> f(static_cast<size_t>(rope_freqs_len), 4.0f);
    EXPECT_TRUE(w.add_tensor("rope_freqs.weight", DType::kF32, {rope_freqs_len},
                             std::string_view(reinterpret_cast<const char*>(f.data()), f.size() * 4))
                    .ok());
  }
  add("token_embd.weight", {32, 8});
  add("output_norm.weight", {32});
  add("blk.0.attn_norm.weight", {32});
  add("blk.0.attn_q.weight", {32, 32});
  add("blk.0.attn_k.weight", {32, 32});
  add("blk.0.attn_v.weight", {32, 32});
  add("blk.0.attn_output.weight", {32, 32});
  add("blk.0.ffn_norm.weight", {32});
  add("blk.0.ffn_gate.weight", {32, 64});
  add("blk.0.ffn_up.weight", {32, 64});
  add("blk.0.ffn_down.weight", {64, 32});
  return w.serialize();
}

Result<std::unique_ptr<Model>> load_bytes(const std::string& bytes) {
  std::string path = test::make_temp_dir() + "/m.gguf";
  EXPECT_TRUE(write_file_atomic(path, bytes).ok());
  return Model::load(path);
}

void expect_error(const Result<std::unique_ptr<Model>>& r, ErrorKind kind, const std::string& text) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, kind) << r.error().to_string();
  EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().to_string();
}

TEST(ModelErrors, TinyValidModelLoadsAndRuns) {
  auto m = load_bytes(tiny_llama("llama"));
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ((*m)->hparams().n_vocab, 8);
  EXPECT_EQ((*m)->hparams().head_dim_k, 16);
  ThreadPool pool(1);
  auto kv = kv::KvCache::create((*m)->kv_layout(), 4);
  ASSERT_TRUE(kv.ok());
  int32_t seq = kv->seq_create();
  ForwardPass fwd(**m, pool);
  std::vector<float> logits;
  std::vector<BatchToken> batch = {{1, seq, 0, true}, {2, seq, 1, true}};
  ASSERT_TRUE(fwd.run(batch, *kv, &logits).ok());
  EXPECT_EQ(logits.size(), 16u);
  // Out-of-range token, wrong position, unknown sequence: errors, and the cache is unchanged.
  std::vector<BatchToken> bad_token = {{8, seq, 2, true}};
  EXPECT_FALSE(fwd.run(bad_token, *kv, &logits).ok());
  std::vector<BatchToken> bad_pos = {{1, seq, 5, true}};
  EXPECT_FALSE(fwd.run(bad_pos, *kv, &logits).ok());
  std::vector<BatchToken> bad_seq = {{1, 7, 0, true}};
  EXPECT_FALSE(fwd.run(bad_seq, *kv, &logits).ok());
  EXPECT_EQ(kv->seq_length(seq), 2);
}

// Llama 3.1+ files carry per-dimension RoPE divisors; they must reach the rope kernel, and a
// wrongly sized one is named.
TEST(ModelErrors, RopeFreqsAreBoundAndChecked) {
  auto plain = load_bytes(tiny_llama("llama"));
  auto scaled = load_bytes(tiny_llama("llama", "", "", true, 8));  // head_dim 16: 8 divisors
  ASSERT_TRUE(plain.ok() && scaled.ok());
  EXPECT_EQ((*plain)->hparams().rope.freq_factors, nullptr);
  ASSERT_NE((*scaled)->hparams().rope.freq_factors, nullptr);
  EXPECT_EQ((*scaled)->hparams().rope.freq_factors[0], 4.0f);
  expect_error(load_bytes(tiny_llama("llama", "", "", true, 5)), ErrorKind::kCorrupt, "rope_freqs.weight");
}

TEST(ModelErrors, UnknownArchitectureIsNamed) {
  expect_error(load_bytes(tiny_llama("mamba")), ErrorKind::kUnsupported, "architecture 'mamba'");
}

TEST(ModelErrors, MissingTensorIsNamed) {
  expect_error(load_bytes(tiny_llama("llama", "blk.0.ffn_up.weight")), ErrorKind::kNotFound, "blk.0.ffn_up.weight");
}

TEST(ModelErrors, MisShapedTensorIsNamed) {
  expect_error(load_bytes(tiny_llama("llama", "", "blk.0.attn_k.weight")), ErrorKind::kCorrupt, "blk.0.attn_k.weight");
}

TEST(ModelErrors, MissingHyperParameterIsNamed) {
  expect_error(load_bytes(tiny_llama("llama", "", "", false)), ErrorKind::kNotFound, "llama.embedding_length");
}

TEST(ModelErrors, TruncatedFilesNeverCrash) {
  std::string bytes = tiny_llama("llama");
  for (size_t len : {size_t{0}, size_t{3}, size_t{24}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    auto r = load_bytes(bytes.substr(0, len));
    EXPECT_FALSE(r.ok()) << "length " << len;
  }
}

TEST(ModelErrors, SharedRandomModelsAllLoad) {
  for (const char* name : {"llama-F32", "qwen2-Q4_0", "qwen3-Q8_0", "gemma2-Q4_K_M", "phi3-F32", "bert-Q8_0"}) {
    std::string path = test::models_dir() + "/random/" + name + ".gguf";
    HEARTH_REQUIRE_FILE(path);
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok()) << name << ": " << m.error().to_string();
    EXPECT_EQ((*m)->hparams().n_layer, 2) << name;
    EXPECT_EQ((*m)->hparams().n_embd, 256) << name;
  }
}

}  // namespace
}  // namespace hearth::model
