// Hyper-parameters read from metadata alone (no tensors): RoPE scaling types and their keys as
// the ecosystem reads them (a factor without a type is linear scaling, an explicit "none"
// ignores it, the attention factor and original context apply to every type, the old
// scale_linear key is a fallback), LongRoPE's type name, the Gemma 2 27B query scale, and the
// per-architecture fields (activation, norms, positions, output) the forward pass reads.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/hparams.h"

namespace hearth::model {
namespace {

// A file with the required keys of `arch` plus whatever `extra` sets; load_hparams on it.
Result<ModelHparams> hparams_with(const std::string& arch, const std::function<void(gguf::Writer&)>& extra,
                                  uint32_t n_layer = 2) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value(arch));
  w.set(arch + ".embedding_length", gguf::Value(uint32_t{256}));
  w.set(arch + ".block_count", gguf::Value(n_layer));
  w.set(arch + ".attention.head_count", gguf::Value(uint32_t{4}));
  w.set(arch + ".feed_forward_length", gguf::Value(uint32_t{768}));
  w.set(arch + ".context_length", gguf::Value(uint32_t{4096}));
  w.set(arch + ".attention.layer_norm_rms_epsilon", gguf::Value(1e-5f));
  extra(w);
  const std::string bytes = w.serialize();  // outlives the File, which points into it
  auto f = gguf::File::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (!f.ok()) return f.error();
  return load_hparams(*f, 1000);
}

TEST(Hparams, RopeScalingTypesAndKeys) {
  auto none = hparams_with("llama", [](gguf::Writer&) {});
  ASSERT_TRUE(none.ok()) << none.error().to_string();
  EXPECT_EQ(none->rope.freq_scale, 1.0f);
  EXPECT_EQ(none->rope.attn_factor, 1.0f);
  EXPECT_EQ(none->rope.n_ctx_orig, 4096);  // the training context when not given
  EXPECT_EQ(none->rope.ext_factor, 0.0f);

  auto untyped = hparams_with("llama", [](gguf::Writer& w) { w.set("llama.rope.scaling.factor", gguf::Value(4.0f)); });
  ASSERT_TRUE(untyped.ok());
  EXPECT_EQ(untyped->rope.freq_scale, 0.25f);  // no type: linear

  auto explicit_none = hparams_with("llama", [](gguf::Writer& w) {
    w.set("llama.rope.scaling.type", gguf::Value("none"));
    w.set("llama.rope.scaling.factor", gguf::Value(4.0f));
  });
  ASSERT_TRUE(explicit_none.ok());
  EXPECT_EQ(explicit_none->rope.freq_scale, 1.0f);  // "none" ignores the factor

  auto old_key = hparams_with("llama", [](gguf::Writer& w) { w.set("llama.rope.scale_linear", gguf::Value(2.0f)); });
  ASSERT_TRUE(old_key.ok());
  EXPECT_EQ(old_key->rope.freq_scale, 0.5f);
  auto both_keys = hparams_with("llama", [](gguf::Writer& w) {
    w.set("llama.rope.scale_linear", gguf::Value(2.0f));
    w.set("llama.rope.scaling.factor", gguf::Value(8.0f));
  });
  ASSERT_TRUE(both_keys.ok());
  EXPECT_EQ(both_keys->rope.freq_scale, 0.125f);  // rope.scaling.factor wins

  auto yarn = hparams_with("qwen2", [](gguf::Writer& w) {
    w.set("qwen2.rope.scaling.type", gguf::Value("yarn"));
    w.set("qwen2.rope.scaling.factor", gguf::Value(4.0f));
    w.set("qwen2.rope.scaling.original_context_length", gguf::Value(uint32_t{32768}));
    w.set("qwen2.rope.scaling.attn_factor", gguf::Value(0.9f));
  });
  ASSERT_TRUE(yarn.ok());
  EXPECT_EQ(yarn->rope.ext_factor, 1.0f);
  EXPECT_EQ(yarn->rope.freq_scale, 0.25f);
  EXPECT_EQ(yarn->rope.n_ctx_orig, 32768);
  EXPECT_EQ(yarn->rope.attn_factor, 0.9f);

  // LongRoPE (phi3): the attention factor and original context apply without YaRN.
  auto longrope = hparams_with("phi3", [](gguf::Writer& w) {
    w.set("phi3.rope.scaling.type", gguf::Value("longrope"));
    w.set("phi3.rope.scaling.original_context_length", gguf::Value(uint32_t{2048}));
    w.set("phi3.rope.scaling.attn_factor", gguf::Value(1.19f));
  });
  ASSERT_TRUE(longrope.ok()) << longrope.error().to_string();
  EXPECT_EQ(longrope->rope.ext_factor, 0.0f);
  EXPECT_EQ(longrope->rope.freq_scale, 1.0f);
  EXPECT_EQ(longrope->rope.n_ctx_orig, 2048);
  EXPECT_EQ(longrope->rope.attn_factor, 1.19f);

  auto unknown = hparams_with("llama", [](gguf::Writer& w) { w.set("llama.rope.scaling.type", gguf::Value("ntk")); });
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::kUnsupported);
  auto negative = hparams_with("llama", [](gguf::Writer& w) { w.set("llama.rope.scaling.factor", gguf::Value(-2.0f)); });
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().kind, ErrorKind::kCorrupt);
  auto bad_attn = hparams_with("phi3", [](gguf::Writer& w) { w.set("phi3.rope.scaling.attn_factor", gguf::Value(0.0f)); });
  ASSERT_FALSE(bad_attn.ok());
  EXPECT_EQ(bad_attn.error().kind, ErrorKind::kCorrupt);
}

TEST(Hparams, Gemma2QueryScaleFollowsModelSize) {
  auto small = hparams_with("gemma2", [](gguf::Writer& w) {
    w.set("gemma2.attention.key_length", gguf::Value(uint32_t{128}));
    w.set("gemma2.attention.value_length", gguf::Value(uint32_t{128}));
  });
  ASSERT_TRUE(small.ok()) << small.error().to_string();
  EXPECT_EQ(small->attn_scale, 0.0f);  // the default 1/sqrt(head_dim)
  // 46 layers is Gemma 2 27B: 1/sqrt(n_embd / n_head) = 1/8 here, not 1/sqrt(128)
  auto big = hparams_with(
      "gemma2",
      [](gguf::Writer& w) {
        w.set("gemma2.attention.key_length", gguf::Value(uint32_t{128}));
        w.set("gemma2.attention.value_length", gguf::Value(uint32_t{128}));
      },
      46);
  ASSERT_TRUE(big.ok());
  EXPECT_FLOAT_EQ(big->attn_scale, 1.0f / 8.0f);
}

TEST(Hparams, ArchitectureDifferencesAreFields) {
  auto llama = hparams_with("llama", [](gguf::Writer&) {});
  ASSERT_TRUE(llama.ok()) << llama.error().to_string();
  EXPECT_EQ(llama->rope.style, kernels::RopeStyle::kNormal);
  EXPECT_EQ(llama->ffn_activation, ActivationKind::kSilu);
  EXPECT_EQ(llama->norm_kind, NormKind::kRms);
  EXPECT_EQ(llama->norm_placement, NormPlacement::kPre);
  EXPECT_EQ(llama->position_encoding, PositionEncoding::kRope);
  EXPECT_EQ(llama->n_pos_max, 0);
  EXPECT_EQ(llama->output, ModelOutput::kLogits);
  EXPECT_TRUE(llama->causal);
  EXPECT_EQ(llama->embed_scale, 1.0f);

  auto qwen2 = hparams_with("qwen2", [](gguf::Writer&) {});
  ASSERT_TRUE(qwen2.ok());
  EXPECT_EQ(qwen2->rope.style, kernels::RopeStyle::kNeox);
  EXPECT_EQ(qwen2->ffn_activation, ActivationKind::kSilu);

  auto gemma2 = hparams_with("gemma2", [](gguf::Writer&) {});
  ASSERT_TRUE(gemma2.ok());
  EXPECT_EQ(gemma2->ffn_activation, ActivationKind::kGelu);
  EXPECT_EQ(gemma2->norm_placement, NormPlacement::kPre);
  EXPECT_FLOAT_EQ(gemma2->embed_scale, 16.0f);  // sqrt(256)
  EXPECT_EQ(gemma2->attn_softcap, 50.0f);
  EXPECT_EQ(gemma2->final_softcap, 30.0f);

  auto bert = hparams_with("bert", [](gguf::Writer& w) {
    w.set("bert.attention.layer_norm_epsilon", gguf::Value(1e-12f));
  });
  ASSERT_TRUE(bert.ok()) << bert.error().to_string();
  EXPECT_EQ(bert->norm_eps, 1e-12f);
  EXPECT_EQ(bert->ffn_activation, ActivationKind::kGelu);
  EXPECT_EQ(bert->norm_kind, NormKind::kLayer);
  EXPECT_EQ(bert->norm_placement, NormPlacement::kPost);
  EXPECT_EQ(bert->position_encoding, PositionEncoding::kLearned);
  EXPECT_EQ(bert->n_pos_max, 4096);  // one learned row per trained position
  EXPECT_EQ(bert->output, ModelOutput::kHiddenStates);
  EXPECT_FALSE(bert->causal);
  EXPECT_EQ(bert->pooling, PoolingType::kMean);
  // bert reads the LayerNorm eps, not the RMSNorm one
  auto bert_no_eps = hparams_with("bert", [](gguf::Writer&) {});
  EXPECT_FALSE(bert_no_eps.ok());
}

}  // namespace
}  // namespace hearth::model
