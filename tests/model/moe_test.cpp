// The mixture-of-experts FFN and the sliding-window patterns on tiny generated models: bad
// files (expert counts that disagree, a missing expert tensor, an unknown sliding-window
// pattern) give errors naming the tensor or key; a prefill batch gives the logits of decoding
// token by token (tokens grouped by expert); an expert the router never picks is never read;
// the router's choice follows the gating function.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstring>
#include <limits>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_writer.h"
#include "model/forward.h"
#include "model/model.h"
#include "util/file_io.h"

namespace hearth::model {
namespace {

constexpr int64_t kEmbd = 32, kFf = 32, kVocab = 16;

struct TinyMoe {
  std::string arch = "qwen3moe";
  int64_t n_expert = 4;          // expert_count
  int64_t tensor_experts = 4;    // experts stored in ffn_up_exps
  std::string skip;              // a tensor to leave out
  bool never_pick_last = false;  // router row of the last expert very negative, its weights NaN
  uint32_t gating_func = 0;      // expert_gating_func (0: the architecture's)
};

// One layer, n_embd 32, 2 heads, 4 experts of which 2 are used; deterministic pseudo-random
// weights so the router spreads tokens over the experts.
std::string tiny_moe(const TinyMoe& o) {
  gguf::Writer w;
  const std::string& a = o.arch;
  w.set("general.architecture", gguf::Value(a));
  w.set(a + ".embedding_length", gguf::Value(uint32_t{kEmbd}));
  w.set(a + ".block_count", gguf::Value(uint32_t{1}));
  w.set(a + ".attention.head_count", gguf::Value(uint32_t{2}));
  w.set(a + ".feed_forward_length", gguf::Value(uint32_t{64}));
  w.set(a + ".context_length", gguf::Value(uint32_t{128}));
  w.set(a + ".attention.layer_norm_rms_epsilon", gguf::Value(1e-5f));
  w.set(a + ".expert_count", gguf::Value(static_cast<uint32_t>(o.n_expert)));
  w.set(a + ".expert_used_count", gguf::Value(uint32_t{2}));
  w.set(a + ".expert_feed_forward_length", gguf::Value(uint32_t{kFf}));
  if (o.gating_func != 0) w.set(a + ".expert_gating_func", gguf::Value(o.gating_func));
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return (static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f) * 0.5f;
  };
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float base = 0.0f) {
    if (name == o.skip) return;
    int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> data(static_cast<size_t>(n));
    for (auto& x : data) x = base + next();
    if (o.never_pick_last && name == "blk.0.ffn_gate_inp.weight") {
      for (int64_t c = 0; c < kEmbd; ++c) data[static_cast<size_t>((o.n_expert - 1) * kEmbd + c)] = 0.0f;
    }
    if (o.never_pick_last && name.find("_exps.weight") != std::string::npos) {
      const int64_t per_expert = n / shape.back();
      std::fill(data.end() - per_expert, data.end(), std::numeric_limits<float>::quiet_NaN());
    }
    ASSERT_TRUE(w.add_tensor(name, DType::kF32, shape,
                             std::string_view(reinterpret_cast<const char*>(data.data()), data.size() * 4))
                    .ok());
  };
  add("token_embd.weight", {kEmbd, kVocab});
  add("output_norm.weight", {kEmbd}, 1.0f);
  add("blk.0.attn_norm.weight", {kEmbd}, 1.0f);
  add("blk.0.attn_q.weight", {kEmbd, kEmbd});
  add("blk.0.attn_k.weight", {kEmbd, kEmbd});
  add("blk.0.attn_v.weight", {kEmbd, kEmbd});
  add("blk.0.attn_output.weight", {kEmbd, kEmbd});
  add("blk.0.attn_q_norm.weight", {16}, 1.0f);
  add("blk.0.attn_k_norm.weight", {16}, 1.0f);
  add("blk.0.ffn_norm.weight", {kEmbd}, 1.0f);
  add("blk.0.ffn_gate_inp.weight", {kEmbd, o.n_expert});
  add("blk.0.ffn_gate_exps.weight", {kEmbd, kFf, o.n_expert});
  add("blk.0.ffn_up_exps.weight", {kEmbd, kFf, o.tensor_experts});
  add("blk.0.ffn_down_exps.weight", {kFf, kEmbd, o.n_expert});
  if (o.never_pick_last) {
    // A constant router bias of -1e4 on the last expert (qwen3moe reads the optional bias too).
    std::vector<float> bias(static_cast<size_t>(o.n_expert), 0.0f);
    bias.back() = -1e4f;
    EXPECT_TRUE(w.add_tensor("blk.0.ffn_gate_inp.bias", DType::kF32, {o.n_expert},
                             std::string_view(reinterpret_cast<const char*>(bias.data()), bias.size() * 4))
                    .ok());
  }
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

// Runs tokens 0..n-1 of a sequence either as one batch or one at a time; logits of all.
std::vector<float> run_tokens(const Model& m, int n, bool one_batch, RouterObserver* observer = nullptr) {
  ThreadPool pool(2);
  auto kv = kv::KvCache::create(m.kv_layout(DType::kF32), 8);
  EXPECT_TRUE(kv.ok());
  const int32_t seq = kv->seq_create();
  ForwardPass fwd(m, pool);
  fwd.set_router_observer(observer);
  std::vector<float> all, logits;
  std::vector<BatchToken> batch;
  for (int i = 0; i < n; ++i) batch.push_back({(i * 7 + 3) % static_cast<int>(kVocab), seq, i, true});
  if (one_batch) {
    EXPECT_TRUE(fwd.run(batch, *kv, &all).ok());
    return all;
  }
  for (const auto& t : batch) {
    EXPECT_TRUE(fwd.run(std::span(&t, 1), *kv, &logits).ok());
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

TEST(Moe, InconsistentExpertCountIsNamed) {
  TinyMoe o;
  o.tensor_experts = 3;
  expect_error(load_bytes(tiny_moe(o)), ErrorKind::kCorrupt, "blk.0.ffn_up_exps.weight");
  auto r = load_bytes(tiny_moe(o));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("expert_count 4"), std::string::npos) << r.error().message;
}

TEST(Moe, MissingExpertTensorIsNamed) {
  TinyMoe o;
  o.skip = "blk.0.ffn_down_exps.weight";
  expect_error(load_bytes(tiny_moe(o)), ErrorKind::kNotFound, "blk.0.ffn_down_exps.weight");
  o.skip = "blk.0.ffn_gate_inp.weight";
  expect_error(load_bytes(tiny_moe(o)), ErrorKind::kNotFound, "blk.0.ffn_gate_inp.weight");
}

TEST(Moe, ExpertUsedCountAboveExpertCountIsNamed) {
  TinyMoe o;
  o.n_expert = 1;
  o.tensor_experts = 1;
  expect_error(load_bytes(tiny_moe(o)), ErrorKind::kCorrupt, "qwen3moe.expert_used_count");
}

TEST(Moe, UnknownGatingFunctionIsNamed) {
  TinyMoe o;
  o.gating_func = 7;
  expect_error(load_bytes(tiny_moe(o)), ErrorKind::kUnsupported, "qwen3moe.expert_gating_func");
}

// Prefill groups the batch's tokens by expert; decode runs one token's chosen experts. Both
// must give the same logits (up to the matmul kernels' accumulation order across batch sizes).
TEST(Moe, PrefillBatchMatchesTokenByToken) {
  auto m = load_bytes(tiny_moe({}));
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const int n = 24;
  auto batched = run_tokens(**m, n, true);
  auto stepped = run_tokens(**m, n, false);
  ASSERT_EQ(batched.size(), stepped.size());
  ASSERT_EQ(batched.size(), static_cast<size_t>(n * kVocab));
  double max_err = 0.0, max_abs = 0.0;
  for (size_t i = 0; i < batched.size(); ++i) {
    max_err = std::max(max_err, static_cast<double>(std::fabs(batched[i] - stepped[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(stepped[i])));
  }
  EXPECT_GT(max_abs, 0.01);
  EXPECT_LE(max_err, 1e-4 * std::max(1.0, max_abs));
}

// Records every routing decision.
struct RecordingRouter : RouterObserver {
  void on_route(int32_t, const BatchToken&, std::span<const float> scores, std::span<int32_t> chosen) override {
    calls++;
    for (int32_t e : chosen) used[static_cast<size_t>(e)]++;
    // Chosen are the best scores, best first.
    for (size_t j = 0; j < chosen.size(); ++j) {
      for (size_t e = 0; e < scores.size(); ++e) {
        const bool is_chosen = std::find(chosen.begin(), chosen.end(), static_cast<int32_t>(e)) != chosen.end();
        if (!is_chosen) {
          EXPECT_GE(scores[static_cast<size_t>(chosen[j])], scores[e]);
        }
      }
      if (j > 0) {
        EXPECT_GE(scores[static_cast<size_t>(chosen[j - 1])], scores[static_cast<size_t>(chosen[j])]);
      }
    }
    double sum = 0.0;
    for (float s : scores) sum += s;
    sums.push_back(sum);
  }
  int calls = 0;
  std::vector<int> used = std::vector<int>(4, 0);
  std::vector<double> sums;
};

// An expert whose matrices are NaN and whose router score is always lowest must never be read:
// the logits stay finite in prefill and decode.
TEST(Moe, UnchosenExpertIsNeverRead) {
  TinyMoe o;
  o.never_pick_last = true;
  auto m = load_bytes(tiny_moe(o));
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  for (bool one_batch : {true, false}) {
    RecordingRouter router;
    auto logits = run_tokens(**m, 12, one_batch, &router);
    for (float x : logits) ASSERT_TRUE(std::isfinite(x)) << (one_batch ? "prefill" : "decode");
    EXPECT_EQ(router.calls, 12);
    EXPECT_EQ(router.used[3], 0);
    // The three others all serve some token.
    for (int e = 0; e < 3; ++e) EXPECT_GT(router.used[static_cast<size_t>(e)], 0) << "expert " << e;
  }
}

// Softmax gating gives probabilities (sum 1); sigmoid gating (expert_gating_func 2) gives
// independent values in (0, 1), and both pick the best k.
TEST(Moe, GatingFunctionsShapeTheScores) {
  auto soft = load_bytes(tiny_moe({}));
  TinyMoe sig_opts;
  sig_opts.gating_func = 2;
  auto sig = load_bytes(tiny_moe(sig_opts));
  ASSERT_TRUE(soft.ok() && sig.ok());
  EXPECT_EQ((*sig)->hparams().moe.gating, ExpertGating::kSigmoid);
  RecordingRouter a, b;
  auto la = run_tokens(**soft, 8, true, &a);
  auto lb = run_tokens(**sig, 8, true, &b);
  for (double s : a.sums) EXPECT_NEAR(s, 1.0, 1e-5);
  bool some_not_one = false;
  for (double s : b.sums) some_not_one |= std::fabs(s - 1.0) > 1e-3;
  EXPECT_TRUE(some_not_one);
  EXPECT_NE(la, lb);
}

// gemma3-style patterns: the default (five sliding layers, then a global one), a period from
// metadata, one bool per layer, and an unknown pattern named by its key.
TEST(Moe, SlidingWindowPatternFromMetadata) {
  auto file_with = [](const std::function<void(gguf::Writer&)>& extra) {
    gguf::Writer w;
    w.set("general.architecture", gguf::Value(std::string("gemma3")));
    w.set("gemma3.embedding_length", gguf::Value(uint32_t{32}));
    w.set("gemma3.block_count", gguf::Value(uint32_t{7}));
    w.set("gemma3.attention.head_count", gguf::Value(uint32_t{2}));
    w.set("gemma3.feed_forward_length", gguf::Value(uint32_t{64}));
    w.set("gemma3.attention.layer_norm_rms_epsilon", gguf::Value(1e-6f));
    w.set("gemma3.attention.sliding_window", gguf::Value(uint32_t{8}));
    extra(w);
    std::string path = test::make_temp_dir() + "/m.gguf";
    EXPECT_TRUE(write_file_atomic(path, w.serialize()).ok());
    auto f = gguf::File::open(path);
    EXPECT_TRUE(f.ok());
    return std::move(f).value();
  };
  auto pattern = [](const ModelHparams& h) {
    std::string s;
    for (int32_t il = 0; il < h.n_layer; ++il) s += h.layer_is_sliding(il) ? 'S' : 'G';
    return s;
  };
  auto dflt = load_hparams(file_with([](gguf::Writer&) {}), 16);
  ASSERT_TRUE(dflt.ok()) << dflt.error().to_string();
  EXPECT_EQ(pattern(*dflt), "SSSSSGS");
  EXPECT_EQ(dflt->rope_swa.freq_base, 10000.0f);
  EXPECT_TRUE(dflt->swa_rope_differs);
  auto period = load_hparams(file_with([](gguf::Writer& w) {
                               w.set("gemma3.attention.sliding_window_pattern", gguf::Value(uint32_t{3}));
                             }),
                             16);
  ASSERT_TRUE(period.ok()) << period.error().to_string();
  EXPECT_EQ(pattern(*period), "SSGSSGS");
  auto bad = load_hparams(file_with([](gguf::Writer& w) {
                            w.set("gemma3.attention.sliding_window_pattern", gguf::Value(std::string("local")));
                          }),
                          16);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("gemma3.attention.sliding_window_pattern"), std::string::npos)
      << bad.error().message;
}

TEST(Moe, NextModelsAllLoad) {
  for (const char* name : {"qwen3moe-Q4_K_M", "gemma3-Q8_0", "gpt-oss-F32"}) {
    std::string path = test::shared_dir() + "/next/models/" + name + ".gguf";
    HEARTH_REQUIRE_FILE(path);
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok()) << name << ": " << m.error().to_string();
  }
  auto gpt = Model::load(test::shared_dir() + "/next/models/gpt-oss-F32.gguf");
  ASSERT_TRUE(gpt.ok());
  const auto& h = (*gpt)->hparams();
  EXPECT_EQ(h.moe.n_expert, 4);
  EXPECT_EQ(h.moe.gating, ExpertGating::kSoftmaxOfTopK);
  EXPECT_TRUE(h.layer_is_sliding(0));
  EXPECT_FALSE(h.layer_is_sliding(1));
  EXPECT_NE((*gpt)->weights().layers[0].attn_sinks, nullptr);
}

}  // namespace
}  // namespace hearth::model
