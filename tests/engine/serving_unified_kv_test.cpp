// The serving engine with unified KV (slots share the pool): one request may use the whole
// context, more requests run at once than the pool's static split allows, and requests the pool
// cannot hold any more are preempted and recomputed - with exactly the tokens they would have
// produced alone, and none lost.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/serving_test_util.h"

namespace hearth::engine {
namespace {

std::vector<int32_t> story_prompt(InferenceContext& ctx, int i) {
  const char* const openings[] = {"Once upon a time, there was a little girl named Lily.",
                                  "One day, a big dog went to the park with his ball.",
                                  "Tom and Sue liked to play in the garden near the tree.",
                                  "The sun was shining and the bird sang a happy song."};
  return ctx.tokenizer().encode(openings[i % 4], true, false);
}

TEST_F(ServingEngineTest, UnifiedKvLetsOneRequestUseTheWholeContext) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 256);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 4;
  o.kv_unified = true;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->n_ctx_slot(), 256);  // split, each slot would get 64
  auto prompt = story_prompt(*ctx, 0);
  Collected c = collect(*engine->submit(greedy(prompt, 200)));
  ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
  EXPECT_EQ(c.final.stop_reason, StopReason::kLength);
  EXPECT_EQ(c.tokens.size(), 200u);
}

TEST_F(ServingEngineTest, UnifiedKvRunsAsManyShortRequestsAsTheirTokensAllow) {
  HEARTH_REQUIRE_FILE(stories());
  constexpr int32_t kCtx = 1024, kRequests = 10, kPredict = 56;
  auto ctx = open(stories(), kCtx);
  ASSERT_NE(ctx, nullptr);
  const int32_t bt = ctx->kv().block_tokens();
  int32_t blocks = 0;
  for (int i = 0; i < kRequests; ++i) {
    const auto n = static_cast<int32_t>(story_prompt(*ctx, i).size()) + kPredict;
    ASSERT_GT(n, kCtx / 16);  // a static split over 16 slots could not hold one of them
    blocks += (n + bt - 1) / bt;
  }
  ASSERT_LE(blocks + kRequests, kCtx / bt);  // all of them (and their headroom) fit the pool
  StepLog log;
  ServingOptions o;
  o.n_slots = 16;
  o.kv_unified = true;
  o.step_observer = log.observer();
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  std::vector<std::shared_ptr<ResultStream>> streams;
  for (int i = 0; i < kRequests; ++i) streams.push_back(engine->submit(greedy(story_prompt(*ctx, i), kPredict)));
  for (auto& s : streams) {
    Collected c = collect(*s);
    ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
    EXPECT_EQ(c.tokens.size(), static_cast<size_t>(kPredict));
  }
  size_t most = 0;
  for (const StepRecord& r : log.snapshot()) most = std::max(most, r.shares.size());
  EXPECT_EQ(most, static_cast<size_t>(kRequests));  // all of them in one batch
  EXPECT_EQ(engine->metrics().kv_preemptions_total, 0u);
}

// Four requests of ~110 tokens each in a 256-token pool: they cannot all stay; the newest are
// preempted and recomputed, and every one still produces its greedy tokens from running alone.
TEST_F(ServingEngineTest, UnifiedKvPreemptsAndRecomputesWithoutChangingAnyOutput) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 256);
  ASSERT_NE(ctx, nullptr);
  constexpr int32_t kPredict = 96;
  std::vector<std::vector<int32_t>> prompts, want;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(story_prompt(*ctx, i));
    auto alone = generate_from_tokens(*ctx, prompts.back(), greedy_alone(kPredict));
    ASSERT_TRUE(alone.ok()) << alone.error().to_string();
    want.push_back(alone->tokens);
  }
  ServingOptions o;
  o.n_slots = 4;
  o.kv_unified = true;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  std::vector<std::shared_ptr<ResultStream>> streams;
  for (const auto& p : prompts) streams.push_back(engine->submit(greedy(p, kPredict)));
  for (size_t i = 0; i < streams.size(); ++i) {
    Collected c = collect(*streams[i]);
    ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
    EXPECT_EQ(c.tokens, want[i]) << "request " << i;
    EXPECT_EQ(c.final.timings.predicted_n, kPredict);
  }
  EXPECT_GT(engine->metrics().kv_preemptions_total, 0u);
  EXPECT_EQ(engine->metrics().requests_total, 4u);
}

// Prefix sharing and preemption together: requests behind one long system prompt adopt it,
// and a preempted one adopts it again when it resumes.
TEST_F(ServingEngineTest, UnifiedKvSharesASystemPromptAcrossPreemptions) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 256);
  ASSERT_NE(ctx, nullptr);
  std::string system = "Lily and Ben were friends. They liked to play with the red ball in the big park. ";
  system += system;
  constexpr int32_t kPredict = 64;
  std::vector<std::vector<int32_t>> prompts, want;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(ctx->tokenizer().encode(system + "Question " + std::to_string(i) + ": what happened?", true, false));
    auto alone = generate_from_tokens(*ctx, prompts.back(), greedy_alone(kPredict));
    ASSERT_TRUE(alone.ok()) << alone.error().to_string();
    want.push_back(alone->tokens);
  }
  ServingOptions o;
  o.n_slots = 4;
  o.kv_unified = true;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  // The first request evaluates the system prompt; the others adopt it.
  ASSERT_EQ(collect(*engine->submit(greedy(prompts[0], 1))).final.kind, EngineEvent::Kind::kDone);
  std::vector<std::shared_ptr<ResultStream>> streams;
  for (const auto& p : prompts) streams.push_back(engine->submit(greedy(p, kPredict)));
  int32_t cached = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    Collected c = collect(*streams[i]);
    ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
    EXPECT_EQ(c.tokens, want[i]) << "request " << i;
    cached += c.final.timings.cached_n;
  }
  EXPECT_GT(cached, 0);
}

}  // namespace
}  // namespace hearth::engine
