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

// Requests without n_predict that run to their num_ctx (400 tokens each) in a 1,024-token pool:
// admission reserves room for kUnboundedGrowth more tokens each, so three start; as they grow
// past that, the newest are preempted and recomputed. Every one still produces exactly the
// tokens it produces on a slot of its own, and none is lost.
std::vector<GenerationRequest> run_to_context(const std::vector<std::vector<int32_t>>& prompts) {
  std::vector<GenerationRequest> out;
  for (const auto& p : prompts) {
    GenerationRequest r = greedy(p, -1);
    r.n_ctx = 400;
    out.push_back(std::move(r));
  }
  return out;
}

// The requests served one at a time on a split (not unified) engine of one slot, then by four
// unified slots at once.
class UnifiedKvTest : public ServingEngineTest {
 protected:
  std::vector<std::vector<int32_t>> alone(InferenceContext& ctx, const std::vector<GenerationRequest>& requests) {
    ServingOptions o;
    o.n_slots = 1;
    auto engine = start(ctx, o);
    std::vector<std::vector<int32_t>> out;
    if (engine == nullptr) return out;
    for (const GenerationRequest& r : requests) {
      Collected c = collect(*engine->submit(r));
      EXPECT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
      out.push_back(c.tokens);
    }
    return out;
  }

  void serve_all_unified(InferenceContext& ctx, const std::vector<GenerationRequest>& requests,
                         const std::vector<std::vector<int32_t>>& want, int32_t* cached_n) {
    ServingOptions o;
    o.n_slots = 4;
    o.kv_unified = true;
    auto engine = start(ctx, o);
    ASSERT_NE(engine, nullptr);
    std::vector<std::shared_ptr<ResultStream>> streams;
    for (const GenerationRequest& r : requests) streams.push_back(engine->submit(r));
    for (size_t i = 0; i < streams.size(); ++i) {
      Collected c = collect(*streams[i]);
      ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
      EXPECT_EQ(c.final.stop_reason, StopReason::kContext);
      EXPECT_EQ(c.tokens, want[i]) << "request " << i;
      if (cached_n != nullptr) *cached_n += c.final.timings.cached_n;
    }
    EXPECT_GT(engine->metrics().kv_preemptions_total, 0u);
    EXPECT_EQ(engine->metrics().requests_total, requests.size());
  }
};

TEST_F(UnifiedKvTest, PreemptsAndRecomputesWithoutChangingAnyOutput) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 1024);
  ASSERT_NE(ctx, nullptr);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(story_prompt(*ctx, i));
  const auto requests = run_to_context(prompts);
  const auto want = alone(*ctx, requests);
  ASSERT_EQ(want.size(), requests.size());
  serve_all_unified(*ctx, requests, want, nullptr);
}

// Prefix sharing and preemption together: requests behind one system prompt adopt it, and a
// preempted one adopts it again when it resumes.
TEST_F(UnifiedKvTest, SharesASystemPromptAcrossPreemptions) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 1024);
  ASSERT_NE(ctx, nullptr);
  std::string system = "Lily and Ben were friends. They liked to play with the red ball in the big park. ";
  system += system;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(ctx->tokenizer().encode(system + "Question " + std::to_string(i) + ": what happened?", true, false));
  }
  const auto requests = run_to_context(prompts);
  const auto want = alone(*ctx, requests);
  ASSERT_EQ(want.size(), requests.size());
  int32_t cached = 0;
  serve_all_unified(*ctx, requests, want, &cached);
  EXPECT_GT(cached, 0);
}

}  // namespace
}  // namespace hearth::engine
