// The serving engine over the cross-request prefix cache: a second conversation with the same
// long system prompt evaluates only its new tokens, even on another slot; greedy outputs are
// the same with sharing on and off (single and batched); an idle engine trims its cache and
// gives KV memory back; a busy one keeps cached prefixes only up to its cap; a KV limit holds
// new requests back without touching running ones.
#include <gtest/gtest.h>

#include <thread>

#include "common/test_paths.h"
#include "engine/generation.h"
#include "engine/serving_test_util.h"
#include "engine/slot_choice.h"

namespace hearth::engine {
namespace {

std::unique_ptr<InferenceContext> open_ctx(const std::string& path, int32_t n_ctx, bool sharing) {
  ContextOptions o;
  o.n_ctx = n_ctx;
  o.n_threads = 2;
  o.prefix_sharing = sharing;
  auto ctx = InferenceContext::load(path, o);
  EXPECT_TRUE(ctx.ok()) << ctx.error().to_string();
  return ctx.ok() ? std::move(ctx).value() : nullptr;
}

std::vector<int32_t> encode(InferenceContext& ctx, const std::string& text, bool bos = true) {
  return ctx.tokenizer().encode(text, bos, false);
}

std::string system_prompt() {
  std::string s = "You are a kind helper who tells short stories about animals. ";
  for (int i = 0; i < 3; ++i) s += "Every story has a cat, a dog and a bird who are friends and help each other. ";
  return s;
}

const char* const kQuestions[] = {"Tell me about the cat.", "What did the dog find?", "Where did the bird fly?",
                                  "Why were they happy?"};

TEST_F(ServingEngineTest, ASecondConversationWithTheSameSystemPromptEvaluatesOnlyItsNewTokens) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open_ctx(stories(), 2 * 256, true);
  ASSERT_NE(ctx, nullptr);
  auto first_prompt = encode(*ctx, system_prompt() + kQuestions[0]);
  auto second_prompt = encode(*ctx, system_prompt() + kQuestions[1]);
  const size_t shared = common_prefix(first_prompt, second_prompt);
  ASSERT_GT(shared, 100u);
  auto want = generate_from_tokens(*ctx, second_prompt, greedy_alone(12));
  ASSERT_TRUE(want.ok()) << want.error().to_string();

  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  GenerationRequest a = greedy(first_prompt, 8);
  a.slot = 0;
  Collected first = collect(*engine->submit(a));
  ASSERT_EQ(first.final.kind, EngineEvent::Kind::kDone) << first.final.error.to_string();
  EXPECT_EQ(first.final.timings.cached_n, 0);
  const uint64_t evaluated_before = engine->metrics().prompt_tokens_total;

  GenerationRequest b = greedy(second_prompt, 12);
  b.slot = 1;  // another slot: only the shared cache can supply the prefix
  Collected second = collect(*engine->submit(b));
  ASSERT_EQ(second.final.kind, EngineEvent::Kind::kDone);
  const int32_t bt = ctx->kv().block_tokens();
  EXPECT_EQ(second.final.timings.cached_n, static_cast<int32_t>(shared) / bt * bt);
  EXPECT_EQ(engine->metrics().prompt_tokens_total - evaluated_before,
            second_prompt.size() - static_cast<size_t>(second.final.timings.cached_n));
  EXPECT_EQ(second.tokens, want->tokens);
  const std::vector<SlotInfo> slots = engine->slots();
  EXPECT_GT(slots[1].kv_blocks_shared, 0);
  EXPECT_GT(engine->metrics().kv_blocks_cached, 0);
}

// Greedy outputs of conversations sharing a system prompt, one at a time and four at once on
// four slots, are the same with the prefix cache on and off.
TEST_F(ServingEngineTest, OutputsAreTheSameWithPrefixSharingOnAndOff) {
  for (const std::string& path : {stories(), test::models_dir() + "/random/llama-Q8_0.gguf"}) {
    SCOPED_TRACE(path);
    HEARTH_REQUIRE_FILE(path);
    std::vector<std::vector<int32_t>> outputs[2];
    uint64_t cached[2] = {0, 0};
    for (int sharing = 0; sharing < 2; ++sharing) {
      auto ctx = open_ctx(path, 4 * 256, sharing == 1);
      ASSERT_NE(ctx, nullptr);
      ServingOptions o;
      o.n_slots = 4;
      o.step_token_budget = 64;
      auto engine = start(*ctx, o);
      ASSERT_NE(engine, nullptr);
      std::vector<std::vector<int32_t>> prompts;
      for (const char* q : kQuestions) prompts.push_back(encode(*ctx, system_prompt() + q));
      for (const auto& p : prompts) {
        GenerationRequest r = greedy(p, 6);
        outputs[sharing].push_back(collect(*engine->submit(r)).tokens);
      }
      std::vector<std::shared_ptr<ResultStream>> streams;
      for (const auto& p : prompts) streams.push_back(engine->submit(greedy(p, 6)));
      for (auto& s : streams) outputs[sharing].push_back(collect(*s).tokens);
      cached[sharing] = engine->metrics().cached_tokens_total;
    }
    EXPECT_EQ(outputs[0], outputs[1]);
    EXPECT_GT(cached[1], cached[0]);  // sharing reused more than per-slot reuse alone
  }
}

TEST_F(ServingEngineTest, AnIdleEngineTrimsItsCacheAndGivesMemoryBack) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open_ctx(stories(), 2 * 256, true);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 2;
  o.idle_cache_bytes = 0;
  o.idle_after = std::chrono::milliseconds(50);
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  Collected c = collect(*engine->submit(greedy(encode(*ctx, system_prompt()), 4)));
  ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
  EngineMetrics m;
  for (int i = 0; i < 200; ++i) {  // up to 2 s
    m = engine->metrics();
    if (m.kv_blocks_used == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(m.kv_blocks_cached, 0);
  EXPECT_LE(m.kv_bytes_committed, kv::kKvChunkBytes);  // at most the reserve chunk
  EXPECT_GE(m.kv_shrink_events_total, 1u);
  EXPECT_GE(m.kv_chunks_released_total, 1u);
  // The next request still works (and finds nothing cached).
  Collected again = collect(*engine->submit(greedy(encode(*ctx, system_prompt()), 4)));
  EXPECT_EQ(again.final.timings.cached_n, 0);
  EXPECT_EQ(again.tokens, c.tokens);
}

// While busy (idle_after far away), finished conversations stay cached only up to
// busy_cache_bytes: with a cap of 0 a slot that moves on to another prompt leaves nothing
// behind, with the default cap every conversation stays and a repeat finds its prefix.
TEST_F(ServingEngineTest, ABusyEngineKeepsCachedPrefixesOnlyUpToItsBusyCap) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open_ctx(stories(), 8 * 256, true);  // room for all four conversations
  ASSERT_NE(ctx, nullptr);
  int32_t cached_blocks[2] = {0, 0};
  int32_t repeat_cached[2] = {0, 0};
  for (int capped = 0; capped < 2; ++capped) {
    ServingOptions o;
    o.n_slots = 1;
    o.idle_after = std::chrono::hours(1);
    if (capped) o.busy_cache_bytes = 0;
    auto engine = start(*ctx, o);
    ASSERT_NE(engine, nullptr);
    for (const char* q : kQuestions) {
      Collected c = collect(*engine->submit(greedy(encode(*ctx, std::string(q) + " " + system_prompt()), 4)));
      ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
    }
    cached_blocks[capped] = engine->metrics().kv_blocks_cached;
    Collected again = collect(*engine->submit(greedy(encode(*ctx, std::string(kQuestions[0]) + " " + system_prompt()), 4)));
    repeat_cached[capped] = again.final.timings.cached_n;
  }
  // Uncapped: four conversations' blocks; capped: at most the last one, which its slot holds.
  EXPECT_GT(cached_blocks[0], 2 * cached_blocks[1]);
  EXPECT_GT(repeat_cached[0], 32);
  EXPECT_LE(repeat_cached[1], 1);  // at most the BOS its slot still holds from the last prompt
}

TEST_F(ServingEngineTest, AKvLimitHoldsNewRequestsBackAndLetsRunningOnesFinish) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open_ctx(stories(), 2 * 256, true);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 2;
  o.step_token_budget = 8;  // a long prompt takes many steps
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  const auto prompt = encode(*ctx, system_prompt());
  auto running = engine->submit(greedy(prompt, 16));
  first_event(*running);  // generating
  engine->set_kv_limit(1);  // below anything: no new block may be admitted
  auto held = engine->submit(greedy(encode(*ctx, "Once upon a time"), 4));
  Collected done = collect(*running);
  EXPECT_EQ(done.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(done.final.timings.predicted_n, 16);  // the running request was not cut short
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(engine->metrics().requests_waiting, 1);
  EXPECT_EQ(engine->kv_pool_stats().limit_bytes, 1u);
  engine->set_kv_limit(0);  // lifted
  Collected later = collect(*held);
  EXPECT_EQ(later.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(later.final.timings.predicted_n, 4);
}

// A busy engine never goes idle, so the idle trim never runs: a lower KV limit still takes idle
// slots' own sequences back at once (the running request keeps its blocks and finishes).
TEST_F(ServingEngineTest, AKvLimitTakesIdleSlotsSequencesBackWhileBusy) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open_ctx(stories(), 4 * 256, true);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 4;
  o.idle_after = std::chrono::hours(1);  // no idle trim in this test
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  for (int slot = 0; slot < 3; ++slot) {  // three idle slots keep ~200 tokens each
    GenerationRequest fill = greedy(encode(*ctx, kQuestions[slot]), 190);
    fill.slot = slot;
    ASSERT_EQ(collect(*engine->submit(std::move(fill))).final.kind, EngineEvent::Kind::kDone);
  }
  const size_t before = engine->kv_pool_stats().committed_bytes;
  GenerationRequest busy = greedy(encode(*ctx, kQuestions[3]), 200);
  busy.slot = 3;
  auto running = engine->submit(std::move(busy));
  first_event(*running);
  const size_t block = engine->kv_pool_stats().block_bytes;
  engine->set_kv_limit(20 * block);
  kv::KvPoolStats p;
  for (int i = 0; i < 200; ++i) {  // up to 2 s
    p = engine->kv_pool_stats();
    if (p.committed_bytes < before) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LT(p.committed_bytes, before);
  for (const SlotInfo& s : engine->slots()) {
    if (s.id != 3) {
      EXPECT_EQ(s.cached_tokens, 0) << "slot " << s.id;
    }
  }
  Collected done = collect(*running);
  EXPECT_EQ(done.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(done.final.timings.predicted_n, 200);
}

// Every block held by idle slots' cached sequences (each slot ran to its context's end) and no
// limit set: a new request reuses a slot instead of waiting for a block forever.
TEST_F(ServingEngineTest, APoolFullOfIdleSlotCachesStillAdmitsNewRequests) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open_ctx(stories(), 2 * 64, true);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  for (const char* text : {"Once upon a time", "Lily and Ben went to the park"}) {
    GenerationRequest fill = greedy(encode(*ctx, text), 200);
    fill.ignore_eos = true;
    Collected c = collect(*engine->submit(std::move(fill)));
    ASSERT_TRUE(c.complete) << text;
  }
  const kv::KvPoolStats full = engine->kv_pool_stats();
  EXPECT_EQ(full.blocks_used, full.blocks_total);
  Collected next = collect(*engine->submit(greedy(encode(*ctx, "Tom had a red ball"), 4)));
  ASSERT_TRUE(next.complete);
  EXPECT_EQ(next.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(next.final.timings.predicted_n, 4);
}

}  // namespace
}  // namespace hearth::engine
