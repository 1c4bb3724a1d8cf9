// The serving engine on real weights (stories260K, and bert for embeddings): concurrent
// requests give exactly what each gives alone, chunked prefill never stalls running streams,
// the prefix cache is reused without changing the output, cancellation frees a slot within a
// step, and errors (queue full, prompt too long) are clear. Step-level facts come from the
// engine's step observer, never from wall-clock time.
#include "engine/serving_engine.h"

#include <gtest/gtest.h>

#include <map>

#include "engine/serving_test_util.h"
#include "engine/slot_choice.h"

namespace hearth::engine {
namespace {

const std::vector<std::string> kPrompts = {
    "Once upon a time",
    "The cat sat on the mat and looked at the big red ball in the garden",
    "Lily and Ben went to the park",
    "One day, a little bird",
    "Tom had a toy car. He liked to play with it every day. One day, his friend Sam came to visit and",
    "The sun was",
    "Mom said",
    "There was a big tree in the forest. Many animals lived in it. A small owl",
};

// 8 concurrent greedy requests on 4 slots (so half of them queue) with a small step budget
// (so prompts are chunked): each gets exactly the tokens generate() gives it alone, and the
// same as through an engine with one slot.
TEST_F(ServingEngineTest, ConcurrentGreedyRequestsMatchGeneratingAlone) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 4 * 128);
  ASSERT_NE(ctx, nullptr);
  const int32_t n_predict = 24;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<GenerateResult> alone;
  for (const auto& p : kPrompts) {
    prompts.push_back(ctx->tokenizer().encode(p, true, false));
    auto r = generate_from_tokens(*ctx, prompts.back(), greedy_alone(n_predict));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    alone.push_back(*r);
  }

  for (int32_t n_slots : {4, 1}) {
    SCOPED_TRACE("slots=" + std::to_string(n_slots));
    ServingOptions o;
    o.n_slots = n_slots;
    o.step_token_budget = 8;
    auto engine = start(*ctx, o);
    ASSERT_NE(engine, nullptr);
    std::vector<std::shared_ptr<ResultStream>> streams;
    for (const auto& p : prompts) streams.push_back(engine->submit(greedy(p, n_predict)));
    for (size_t i = 0; i < streams.size(); ++i) {
      Collected c = collect(*streams[i]);
      ASSERT_TRUE(c.complete);
      ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
      EXPECT_EQ(c.final.stop_reason, StopReason::kLength);
      EXPECT_EQ(c.tokens, alone[i].tokens) << kPrompts[i];
      EXPECT_EQ(c.text, alone[i].text) << kPrompts[i];
      EXPECT_EQ(c.final.timings.predicted_n, n_predict);
      EXPECT_EQ(c.final.timings.prompt_n, static_cast<int32_t>(prompts[i].size()));
    }
    EngineMetrics m = engine->metrics();
    EXPECT_EQ(m.generated_tokens_total, static_cast<uint64_t>(n_predict) * prompts.size());
    EXPECT_EQ(m.ttft.count, prompts.size());
  }
}

// The same on quantized weights of other architectures (activations are quantized per row, so
// a token's logits must not depend on which other tokens share its batch).
TEST_F(ServingEngineTest, ConcurrentGreedyRequestsMatchAloneOnQuantizedModels) {
  for (const char* name : {"llama-Q8_0", "qwen2-Q4_K_M"}) {
    SCOPED_TRACE(name);
    const std::string path = test::models_dir() + "/random/" + name + ".gguf";
    HEARTH_REQUIRE_FILE(path);
    auto ctx = open(path, 4 * 64);
    ASSERT_NE(ctx, nullptr);
    const int32_t n_predict = 8;
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::vector<int32_t>> alone;
    for (const auto& p : kPrompts) {
      prompts.push_back(ctx->tokenizer().encode(p, true, false));
      auto r = generate_from_tokens(*ctx, prompts.back(), greedy_alone(n_predict));
      ASSERT_TRUE(r.ok()) << r.error().to_string();
      alone.push_back(r->tokens);
    }
    ServingOptions o;
    o.n_slots = 4;
    o.step_token_budget = 8;
    auto engine = start(*ctx, o);
    ASSERT_NE(engine, nullptr);
    std::vector<std::shared_ptr<ResultStream>> streams;
    for (const auto& p : prompts) streams.push_back(engine->submit(greedy(p, n_predict)));
    for (size_t i = 0; i < streams.size(); ++i) EXPECT_EQ(collect(*streams[i]).tokens, alone[i]) << kPrompts[i];
  }
}

// With 4 streams generating, a long prompt arrives: it is split across steps, no step exceeds
// the budget, and each stream gets a token in every step until it ends.
TEST_F(ServingEngineTest, LongPromptIsChunkedWithoutPausingActiveStreams) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 5 * 256);
  ASSERT_NE(ctx, nullptr);
  StepLog log;
  ServingOptions o;
  o.n_slots = 5;
  o.step_token_budget = 12;
  o.step_observer = log.observer();
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);

  std::vector<std::shared_ptr<ResultStream>> streams;
  for (int i = 0; i < 4; ++i) {
    streams.push_back(engine->submit(greedy(ctx->tokenizer().encode(kPrompts[static_cast<size_t>(i)], true, false), 120)));
  }
  for (auto& s : streams) ASSERT_EQ(first_event(*s).kind, EngineEvent::Kind::kText);
  std::vector<int32_t> long_prompt = ctx->tokenizer().encode(kPrompts[4] + " " + kPrompts[7] + " " + kPrompts[1], true, false);
  ASSERT_GT(long_prompt.size(), 60u);
  auto long_stream = engine->submit(greedy(long_prompt, 4));
  Collected long_result = collect(*long_stream);
  ASSERT_EQ(long_result.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(long_result.final.timings.cached_n, 0);
  for (auto& s : streams) ASSERT_EQ(collect(*s).final.kind, EngineEvent::Kind::kDone);

  const auto steps = log.snapshot();
  const int64_t long_id = long_stream->id();
  int prefill_steps = 0;
  int32_t prefilled = 0;
  std::map<int64_t, std::vector<uint64_t>> decode_steps;  // request -> steps with its decode token
  for (const auto& r : steps) {
    EXPECT_LE(r.n_tokens, o.step_token_budget) << "step " << r.step;
    bool long_prefill = false;
    for (const auto& sh : r.shares) {
      if (sh.n_decode > 0) decode_steps[sh.request_id].push_back(r.step);
      if (sh.request_id == long_id && sh.n_prompt > 0) {
        long_prefill = true;
        prefilled += sh.n_prompt;
      }
    }
    if (!long_prefill) continue;
    ++prefill_steps;
    int streams_in_step = 0;
    for (const auto& sh : r.shares) {
      if (sh.request_id != long_id && sh.n_decode == 1) ++streams_in_step;
    }
    EXPECT_EQ(streams_in_step, 4) << "step " << r.step << " left a stream out";
  }
  EXPECT_EQ(prefilled, static_cast<int32_t>(long_prompt.size()));
  EXPECT_GE(prefill_steps, static_cast<int>(long_prompt.size()) / (o.step_token_budget - 4));
  // No stream ever skipped a step between its first and last decode.
  for (const auto& s : streams) {
    const auto& st = decode_steps[s->id()];
    ASSERT_FALSE(st.empty());
    EXPECT_EQ(st.back() - st.front() + 1, st.size()) << "request " << s->id() << " was paused";
  }
}

// A second request sharing a prefix with a cached one reports cached_n > 0 and gives the same
// output as without the cache; an unrelated request goes to another slot and keeps that cache.
TEST_F(ServingEngineTest, PrefixCacheIsReusedWithoutChangingTheOutput) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 2 * 256);
  ASSERT_NE(ctx, nullptr);
  const auto base = ctx->tokenizer().encode("Tom had a toy car. He liked to play with it every day.", true, false);
  auto longer = ctx->tokenizer().encode("Tom had a toy car. He liked to play with it every day. One day, his friend", true, false);
  auto other = ctx->tokenizer().encode("The sun was hot and the sky was blue.", true, false);
  auto want = generate_from_tokens(*ctx, longer, greedy_alone(16));
  ASSERT_TRUE(want.ok());

  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  Collected first = collect(*engine->submit(greedy(base, 8)));
  ASSERT_EQ(first.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(first.final.timings.cached_n, 0);
  Collected unrelated = collect(*engine->submit(greedy(other, 8)));
  ASSERT_EQ(unrelated.final.kind, EngineEvent::Kind::kDone);
  EXPECT_NE(unrelated.final.slot, first.final.slot);

  Collected cached = collect(*engine->submit(greedy(longer, 16)));
  ASSERT_EQ(cached.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(cached.final.slot, first.final.slot);
  // The shared prefix is the base prompt (its generated tokens diverge from `longer`).
  EXPECT_GE(cached.final.timings.cached_n, static_cast<int32_t>(common_prefix(base, longer)));
  EXPECT_GT(cached.final.timings.cached_n, 0);
  EXPECT_EQ(cached.tokens, want->tokens);

  GenerationRequest no_cache = greedy(longer, 16);
  no_cache.cache_prompt = false;
  Collected uncached = collect(*engine->submit(no_cache));
  EXPECT_EQ(uncached.final.timings.cached_n, 0);
  EXPECT_EQ(uncached.tokens, want->tokens);
  EXPECT_GT(engine->metrics().cached_tokens_total, 0u);
}

}  // namespace
}  // namespace hearth::engine
