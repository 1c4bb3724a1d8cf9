// The engine end to end on real weights: stories260K's greedy continuation and perplexity
// against llama.cpp's references, batched decoding equal to decoding alone, forks equal to
// unforked sequences, bert embeddings through the engine API, and the weight layout switch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "engine/generation.h"
#include "kernels/ops.h"
#include "util/file_io.h"

namespace hearth::engine {
namespace {

nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

std::string stories() { return test::models_dir() + "/stories260K-llama-f32.gguf"; }

std::unique_ptr<InferenceContext> open(const std::string& path, int32_t n_ctx = 512) {
  ContextOptions o;
  o.n_ctx = n_ctx;
  o.n_threads = 2;
  auto ctx = InferenceContext::load(path, o);
  EXPECT_TRUE(ctx.ok()) << ctx.error().to_string();
  return ctx.ok() ? std::move(ctx).value() : nullptr;
}

GenerateOptions greedy(int32_t n) {
  GenerateOptions o;
  o.n_predict = n;
  o.sampling.temperature = 0;
  o.stop_at_eog = false;
  return o;
}

TEST(Generation, Stories260KGreedy128MatchesReference) {
  HEARTH_REQUIRE_FILE(stories());
  const std::string ref_path = test::reference_dir() + "/stories260K-llama-f32/once-upon-a-time-greedy128.json";
  HEARTH_REQUIRE_FILE(ref_path);
  auto ref = load_json(ref_path);
  auto ctx = open(stories());
  ASSERT_NE(ctx, nullptr);
  auto r = generate(*ctx, ref["prompt"].get<std::string>(), greedy(128));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->prompt_tokens, ref["tokens"].get<std::vector<int32_t>>());
  auto want = ref["greedy"]["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(r->tokens.size(), want.size());
  size_t same = 0;
  while (same < want.size() && r->tokens[same] == want[same]) ++same;
  EXPECT_EQ(same, want.size()) << "first difference at step " << same;
  EXPECT_EQ(r->text, ref["greedy"]["text"].get<std::string>().substr(0, r->text.size()));
}

TEST(Generation, Stories260KPerplexityMatchesReference) {
  HEARTH_REQUIRE_FILE(stories());
  const std::string eval = test::reference_dir() + "/stories-eval.txt";
  HEARTH_REQUIRE_FILE(eval);
  auto ctx = open(stories());
  ASSERT_NE(ctx, nullptr);
  auto text = read_file(eval);
  ASSERT_TRUE(text.ok());
  auto tokens = ctx->tokenizer().encode(*text, true, false);
  EXPECT_EQ(tokens.size(), 2343u);
  auto r = perplexity(*ctx, tokens, 128);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->n_chunks, 18);
  EXPECT_EQ(r->n_scored, 1134);
  EXPECT_NEAR(r->ppl, 5.5520, 0.01);
  std::printf("[perplexity] stories260K ppl=%.4f\n", r->ppl);
}

// Decoding several prompts in one batch must give each the tokens it gets alone.
TEST(Generation, BatchedDecodeEqualsDecodingAlone) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories());
  ASSERT_NE(ctx, nullptr);
  const std::vector<std::string> prompts = {"Once upon a time", "The cat sat", "Lily and Ben went to the park",
                                            "One day, a little bird"};
  const int32_t steps = 16;
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) {
    auto r = generate(*ctx, p, greedy(steps));
    ASSERT_TRUE(r.ok());
    alone.push_back(r->tokens);
  }
  // All prompts in one batch, then one token per sequence per step, all in one batch.
  std::vector<int32_t> seqs;
  std::vector<model::BatchToken> batch;
  for (const auto& p : prompts) {
    int32_t seq = ctx->seq_create();
    seqs.push_back(seq);
    auto toks = ctx->tokenizer().encode(p, true, false);
    for (size_t i = 0; i < toks.size(); ++i) {
      batch.push_back({toks[i], seq, static_cast<int32_t>(i), i + 1 == toks.size()});
    }
  }
  std::vector<float> logits;
  std::vector<std::vector<int32_t>> together(prompts.size());
  const size_t n_vocab = static_cast<size_t>(ctx->n_vocab());
  for (int32_t step = 0; step < steps; ++step) {
    ASSERT_TRUE(ctx->decode(batch, logits).ok());
    std::vector<model::BatchToken> next;
    for (size_t s = 0; s < prompts.size(); ++s) {
      const float* row = logits.data() + s * n_vocab;
      int32_t best = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
      together[s].push_back(best);
      next.push_back({best, seqs[s], ctx->seq_length(seqs[s]), true});
    }
    batch = next;
  }
  for (size_t s = 0; s < prompts.size(); ++s) EXPECT_EQ(together[s], alone[s]) << prompts[s];
  for (int32_t seq : seqs) ctx->seq_free(seq);
}

TEST(Generation, ForkedSequenceContinuesLikeTheOriginal) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories());
  ASSERT_NE(ctx, nullptr);
  auto toks = ctx->tokenizer().encode("Once upon a time, there was", true, false);
  auto r = generate_from_tokens(*ctx, toks, greedy(12));
  ASSERT_TRUE(r.ok());
  int32_t seq = ctx->seq_create();
  std::vector<model::BatchToken> batch;
  for (size_t i = 0; i < toks.size(); ++i) batch.push_back({toks[i], seq, static_cast<int32_t>(i), i + 1 == toks.size()});
  std::vector<float> logits;
  ASSERT_TRUE(ctx->decode(batch, logits).ok());
  auto fork = ctx->seq_fork(seq);
  ASSERT_TRUE(fork.ok());
  // Continue only the fork, greedily.
  std::vector<int32_t> out;
  const size_t n_vocab = static_cast<size_t>(ctx->n_vocab());
  for (int i = 0; i < 12; ++i) {
    int32_t best = static_cast<int32_t>(std::max_element(logits.begin(), logits.begin() + n_vocab) - logits.begin());
    out.push_back(best);
    model::BatchToken t{best, *fork, ctx->seq_length(*fork), true};
    ASSERT_TRUE(ctx->decode(std::span<const model::BatchToken>(&t, 1), logits).ok());
  }
  EXPECT_EQ(out, r->tokens);
  ctx->seq_free(seq);
  ctx->seq_free(*fork);
}

TEST(Generation, StopStringsCutTheTextAndPromptTooLongIsAnError) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 64);
  ASSERT_NE(ctx, nullptr);
  auto full = generate(*ctx, "Once upon a time", greedy(40));
  ASSERT_TRUE(full.ok());
  ASSERT_NE(full->text.find("Lily"), std::string::npos) << full->text;
  auto o = greedy(40);
  o.stop = {"Lily"};
  std::string streamed;
  auto cut = generate(*ctx, "Once upon a time", o, [&](std::string_view p) {
    streamed += p;
    return true;
  });
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->stop_reason, "stop");
  EXPECT_EQ(cut->text, full->text.substr(0, full->text.find("Lily")));
  EXPECT_EQ(streamed, cut->text);
  std::string long_prompt;
  for (int i = 0; i < 100; ++i) long_prompt += "the cat ";
  auto err = generate(*ctx, long_prompt, greedy(4));
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().message.find("context"), std::string::npos);
}

TEST(Embeddings, BertThroughEngineMatchesReference) {
  const std::string path = test::models_dir() + "/random/bert-F32.gguf";
  const std::string ref_path = test::reference_dir() + "/bert-F32/once-upon-a-time.json";
  HEARTH_REQUIRE_FILE(path);
  HEARTH_REQUIRE_FILE(ref_path);
  auto ref = load_json(ref_path);
  auto ctx = open(path);
  ASSERT_NE(ctx, nullptr);
  auto tokens = ctx->tokenizer().encode(ref["prompt"].get<std::string>(), true, false);
  EXPECT_EQ(tokens, ref["tokens"].get<std::vector<int32_t>>());
  auto e = ctx->embed(tokens, true);
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  auto want = ref["embedding"].get<std::vector<double>>();
  ASSERT_EQ(e->size(), want.size());
  double dot = 0;
  for (size_t i = 0; i < want.size(); ++i) dot += (*e)[i] * want[i];
  EXPECT_GE(dot, 0.9999);
  std::vector<float> logits;
  model::BatchToken t{1, 0, 0, true};
  EXPECT_FALSE(ctx->decode(std::span<const model::BatchToken>(&t, 1), logits).ok());  // encoders cannot generate
}

}  // namespace
}  // namespace hearth::engine

namespace hearth::engine {
namespace {

// HEARTH_WEIGHT_LAYOUT=gguf keeps the matrices in the file mapping; an unknown value is an
// error that names the variable.
TEST(Generation, WeightLayoutEnvironmentVariable) {
  const std::string path = test::models_dir() + "/random/llama-Q4_0.gguf";
  HEARTH_REQUIRE_FILE(path);
  const char* saved = std::getenv("HEARTH_WEIGHT_LAYOUT");
  const std::string saved_value = saved != nullptr ? saved : "";
  setenv("HEARTH_WEIGHT_LAYOUT", "gguf", 1);
  auto rows = InferenceContext::load(path);
  setenv("HEARTH_WEIGHT_LAYOUT", "sideways", 1);
  auto bad = InferenceContext::load(path);
  unsetenv("HEARTH_WEIGHT_LAYOUT");
  auto dflt = InferenceContext::load(path);
  if (saved != nullptr) setenv("HEARTH_WEIGHT_LAYOUT", saved_value.c_str(), 1);
  ASSERT_TRUE(rows.ok()) << rows.error().to_string();
  EXPECT_FALSE((*rows)->model().weights().layers[0].ffn_up.interleaved);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("HEARTH_WEIGHT_LAYOUT"), std::string::npos);
  ASSERT_TRUE(dflt.ok()) << dflt.error().to_string();
  const auto& up = (*rows)->model().weights().layers[0].ffn_up;
  EXPECT_EQ((*dflt)->model().weights().layers[0].ffn_up.interleaved, kernels::wants_interleaved(up));
}

}  // namespace
}  // namespace hearth::engine
