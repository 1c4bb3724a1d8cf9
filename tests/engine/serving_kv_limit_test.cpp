// The serving engine under a KV limit (what the cross-process KV budget asks of it): idle
// slots' cached prefixes are dropped first, no queued request starts while the KV in use
// reaches the limit, a running request always finishes with all its tokens, and a request
// cancelled while it waits ends. On real weights (stories260K).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/serving_test_util.h"

namespace hearth::engine {
namespace {

constexpr uint64_t kNoLimit = UINT64_MAX;

bool wait_until(const std::function<bool()>& condition) {
  for (int i = 0; i < 200; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

TEST_F(ServingEngineTest, KvLimitDropsIdleCaches) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 2 * 256);
  ASSERT_NE(ctx, nullptr);
  auto engine = start(*ctx, ServingOptions{});
  ASSERT_NE(engine, nullptr);
  const auto prompt = ctx->tokenizer().encode("Once upon a time there was a little girl", true, false);
  ASSERT_EQ(collect(*engine->submit(greedy(prompt, 24))).final.kind, EngineEvent::Kind::kDone);
  ASSERT_TRUE(wait_until([&] { return engine->metrics().kv_blocks_used > 0; }));  // kept as the slot's cache
  engine->set_kv_limit(1);
  EXPECT_TRUE(wait_until([&] { return engine->metrics().kv_blocks_used == 0; }));
}

TEST_F(ServingEngineTest, KvLimitHoldsNewRequestsButFinishesRunningOnes) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 2 * 256);
  ASSERT_NE(ctx, nullptr);
  const auto prompt = ctx->tokenizer().encode("Lily and Ben went to the park", true, false);
  auto want = generate_from_tokens(*ctx, prompt, greedy_alone(48));
  ASSERT_TRUE(want.ok());
  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);

  auto running = engine->submit(greedy(prompt, 48));
  const size_t first_tokens = first_event(*running).tokens.size();
  engine->set_kv_limit(0);  // below what the running request holds
  auto held = engine->submit(greedy(prompt, 8));
  Collected done = collect(*running);
  EXPECT_EQ(done.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(first_tokens + done.tokens.size(), 48u);  // never cut short
  EngineEvent ev;
  EXPECT_FALSE(held->next(ev, std::chrono::milliseconds(300)));  // not admitted
  EXPECT_EQ(engine->metrics().requests_waiting, 1);
  EXPECT_EQ(engine->metrics().kv_blocks_used, 0);  // the finished request's cache went too

  auto cancelled = engine->submit(greedy(prompt, 8));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // queued behind `held`
  cancelled->cancel();
  Collected gone = collect(*cancelled);
  EXPECT_EQ(gone.final.stop_reason, StopReason::kCancelled);

  // It starts once the blocks of its prompt (and first token) fit, not a byte before.
  const auto& pool = ctx->kv().pool();
  const uint64_t block_bytes = pool.bytes_reserved() / static_cast<uint64_t>(pool.n_blocks());
  const uint64_t bt = static_cast<uint64_t>(ctx->kv().block_tokens());
  const uint64_t need = (prompt.size() + 1 + bt - 1) / bt * block_bytes;
  engine->set_kv_limit(need - 1);
  EXPECT_FALSE(held->next(ev, std::chrono::milliseconds(300)));
  engine->set_kv_limit(need);
  Collected later = collect(*held);
  EXPECT_EQ(later.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(later.tokens, std::vector<int32_t>(want->tokens.begin(), want->tokens.begin() + 8));
  engine->set_kv_limit(kNoLimit);
  EXPECT_EQ(collect(*engine->submit(greedy(prompt, 4))).final.kind, EngineEvent::Kind::kDone);
}

}  // namespace
}  // namespace hearth::engine
