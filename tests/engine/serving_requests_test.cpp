// The serving engine's request lifecycle on stories260K: cancellation (running and queued),
// queue limits, prompts too long for a slot (error or truncation), bad requests, options that
// do not fit, shutdown with work in flight, and the context-full stop.
#include <gtest/gtest.h>

#include <thread>

#include "engine/prompt_fit.h"
#include "engine/serving_test_util.h"

namespace hearth::engine {
namespace {

std::vector<int32_t> encode(InferenceContext& ctx, const std::string& text) {
  return ctx.tokenizer().encode(text, true, false);
}

// Waits (bounded) until the engine's published snapshot shows `slot` idle.
bool wait_slot_idle(const ServingEngine& engine, int32_t slot) {
  for (int i = 0; i < 2000; ++i) {
    if (!engine.slots()[static_cast<size_t>(slot)].busy) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST_F(ServingEngineTest, CancelledStreamStopsWithinOneStepAndFreesItsSlot) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 1024);
  ASSERT_NE(ctx, nullptr);
  StepLog log;
  ServingOptions o;
  o.n_slots = 1;
  o.step_observer = log.observer();
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);

  auto stream = engine->submit(greedy(encode(*ctx, "Once upon a time"), -1));  // until the context is full
  ASSERT_EQ(first_event(*stream).kind, EngineEvent::Kind::kText);
  stream->cancel();
  const uint64_t at_cancel = log.last_step();
  Collected c = collect(*stream);
  ASSERT_TRUE(c.complete);
  ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(c.final.stop_reason, StopReason::kCancelled);
  EXPECT_LT(c.final.timings.predicted_n, 1000);
  // At most the step already under way when cancel() was called still carried it.
  uint64_t last_with_it = 0;
  for (const auto& r : log.snapshot()) {
    for (const auto& sh : r.shares) {
      if (sh.request_id == stream->id()) last_with_it = r.step;
    }
  }
  EXPECT_LE(last_with_it, at_cancel + 1);
  EXPECT_TRUE(wait_slot_idle(*engine, 0));
  // The one slot takes the next request.
  Collected next = collect(*engine->submit(greedy(encode(*ctx, "The cat"), 4)));
  EXPECT_EQ(next.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(next.final.stop_reason, StopReason::kLength);
  const EngineMetrics m = engine->metrics();
  EXPECT_EQ(m.requests_cancelled_total, 1u);
  EXPECT_EQ(m.requests_total, 2u);
}

TEST_F(ServingEngineTest, QueuedRequestsCanBeCancelledAndAFullQueueRefuses) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 1024);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 1;
  o.max_queue = 1;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  auto running = engine->submit(greedy(encode(*ctx, "Once upon a time"), -1));
  ASSERT_EQ(first_event(*running).kind, EngineEvent::Kind::kText);  // in the slot, out of the queue
  auto queued = engine->submit(greedy(encode(*ctx, "The cat"), 4));
  auto refused = engine->submit(greedy(encode(*ctx, "The dog"), 4));
  Collected r = collect(*refused);
  ASSERT_EQ(r.final.kind, EngineEvent::Kind::kError);
  EXPECT_EQ(r.final.error.kind, ErrorKind::kUnavailable);
  EXPECT_NE(r.final.error.message.find("queue is full"), std::string::npos) << r.final.error.message;
  EXPECT_EQ(engine->metrics().requests_waiting, 1);

  // A queued request cancelled while every slot is busy ends at once, without running.
  queued->cancel();
  Collected q = collect(*queued);
  ASSERT_EQ(q.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(q.final.stop_reason, StopReason::kCancelled);
  EXPECT_EQ(q.final.timings.predicted_n, 0);
  EXPECT_TRUE(engine->slots()[0].busy);
  EXPECT_EQ(engine->metrics().requests_waiting, 0);
  running->cancel();
  EXPECT_EQ(collect(*running).final.stop_reason, StopReason::kCancelled);
}

TEST_F(ServingEngineTest, TooLongPromptIsAnErrorUnlessTruncationIsAsked) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 64);
  ASSERT_NE(ctx, nullptr);
  std::string text;
  for (int i = 0; i < 12; ++i) text += "The cat sat on the mat. ";
  const std::vector<int32_t> prompt = encode(*ctx, text);
  ASSERT_GT(prompt.size(), 64u);
  // What truncation must produce: the first n_keep tokens and the newest tail, 8 positions left.
  const int32_t n_keep = 5, n_predict = 8;
  const int32_t kept = 64 - n_predict;
  std::vector<int32_t> want_prompt(prompt.begin(), prompt.begin() + n_keep);
  want_prompt.insert(want_prompt.end(), prompt.end() - (kept - n_keep), prompt.end());
  auto want = generate_from_tokens(*ctx, want_prompt, greedy_alone(n_predict));
  ASSERT_TRUE(want.ok());

  ServingOptions o;
  o.n_slots = 1;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->n_ctx_slot(), 64);
  Collected err = collect(*engine->submit(greedy(prompt, n_predict)));
  ASSERT_EQ(err.final.kind, EngineEvent::Kind::kError);
  EXPECT_EQ(err.final.error.kind, ErrorKind::kOutOfRange);
  EXPECT_NE(err.final.error.message.find(std::to_string(prompt.size())), std::string::npos) << err.final.error.message;
  EXPECT_NE(err.final.error.message.find("64"), std::string::npos);

  GenerationRequest req = greedy(prompt, n_predict);
  req.truncate = true;
  req.n_keep = n_keep;
  Collected ok = collect(*engine->submit(req));
  ASSERT_EQ(ok.final.kind, EngineEvent::Kind::kDone) << ok.final.error.to_string();
  EXPECT_EQ(ok.final.timings.truncated_n, static_cast<int32_t>(prompt.size()) - kept);
  EXPECT_EQ(ok.final.timings.prompt_n, kept);
  EXPECT_EQ(ok.tokens, want->tokens);
}

TEST_F(ServingEngineTest, GenerationStopsWhenTheSlotContextIsFullLikeGenerate) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 48);
  ASSERT_NE(ctx, nullptr);
  const auto prompt = encode(*ctx, "Once upon a time");
  auto want = generate_from_tokens(*ctx, prompt, greedy_alone(-1));
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(want->stop_reason, "context");
  ServingOptions o;
  o.n_slots = 1;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  Collected c = collect(*engine->submit(greedy(prompt, -1)));
  ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(c.final.stop_reason, StopReason::kContext);
  EXPECT_EQ(c.tokens, want->tokens);
  EXPECT_EQ(c.text, want->text);
}

// A request's n_ctx (ollama's num_ctx) limits its own sequence inside the slot: prompt fitting
// and the context stop use it, and the next request without one has the whole slot again.
TEST_F(ServingEngineTest, ARequestContextLimitsItsSequenceNotTheSlot) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 128);
  ASSERT_NE(ctx, nullptr);
  const auto prompt = encode(*ctx, "Once upon a time");
  ServingOptions o;
  o.n_slots = 1;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  GenerationRequest small = greedy(prompt, -1);
  small.n_ctx = 24;
  Collected c = collect(*engine->submit(small));
  ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
  EXPECT_EQ(c.final.stop_reason, StopReason::kContext);
  EXPECT_EQ(c.final.timings.prompt_n + c.final.timings.predicted_n, 24);
  GenerationRequest too_long = greedy(prompt, 4);
  too_long.n_ctx = static_cast<int32_t>(prompt.size()) - 1;
  Collected err = collect(*engine->submit(too_long));
  EXPECT_EQ(err.final.kind, EngineEvent::Kind::kError);
  EXPECT_EQ(err.final.error.kind, ErrorKind::kOutOfRange);
  Collected whole = collect(*engine->submit(greedy(prompt, -1)));
  ASSERT_EQ(whole.final.kind, EngineEvent::Kind::kDone);
  EXPECT_EQ(whole.final.timings.prompt_n + whole.final.timings.predicted_n, 128);
  EXPECT_EQ(std::vector<int32_t>(whole.tokens.begin(), whole.tokens.begin() + static_cast<long>(c.tokens.size())), c.tokens);
}

TEST_F(ServingEngineTest, BadRequestsAreClearErrors) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 128);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  auto expect_error = [&](GenerationRequest req, ErrorKind kind, const std::string& words) {
    Collected c = collect(*engine->submit(std::move(req)));
    ASSERT_EQ(c.final.kind, EngineEvent::Kind::kError);
    EXPECT_EQ(c.final.error.kind, kind);
    EXPECT_NE(c.final.error.message.find(words), std::string::npos) << c.final.error.message;
  };
  expect_error(greedy({}, 4), ErrorKind::kInvalidArgument, "empty");
  expect_error(greedy({1, 100000}, 4), ErrorKind::kInvalidArgument, "100000");
  GenerationRequest bad_p = greedy({1, 403}, 4);
  bad_p.sampling.top_p = 2.0f;
  expect_error(bad_p, ErrorKind::kInvalidArgument, "top_p");
  GenerationRequest bad_slot = greedy({1, 403}, 4);
  bad_slot.slot = 5;
  expect_error(bad_slot, ErrorKind::kInvalidArgument, "slot 5");
  GenerationRequest bad_top = greedy({1, 403}, 4);
  bad_top.top_logprobs = -1;
  expect_error(bad_top, ErrorKind::kInvalidArgument, "top_logprobs");
  EXPECT_EQ(engine->metrics().requests_total, 0u);  // none of them reached the engine thread
}

TEST_F(ServingEngineTest, OptionsThatDoNotFitTheContextAreRefused) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 128);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 4;
  o.step_token_budget = 3;
  auto e = ServingEngine::create(*ctx, o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("budget"), std::string::npos);
  o.step_token_budget = 64;
  o.n_ctx_slot = 64;  // 4 x 64 > 128
  e = ServingEngine::create(*ctx, o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, ErrorKind::kOutOfRange);
  o.n_ctx_slot = 0;
  e = ServingEngine::create(*ctx, o);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->n_ctx_slot(), 32);
  EXPECT_EQ((*e)->slots().size(), 4u);
}

TEST_F(ServingEngineTest, NamedSlotIsUsedAndShutdownCancelsWorkInFlight) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 2 * 1024);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 2;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  GenerationRequest on_one = greedy(encode(*ctx, "The cat"), 4);
  on_one.slot = 1;
  Collected c = collect(*engine->submit(on_one));
  EXPECT_EQ(c.final.slot, 1);
  auto running = engine->submit(greedy(encode(*ctx, "Once upon a time"), -1));
  ASSERT_EQ(first_event(*running).kind, EngineEvent::Kind::kText);
  engine.reset();
  Collected r = collect(*running);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.final.stop_reason, StopReason::kCancelled);
  EXPECT_EQ(ctx->kv().n_sequences(), 0);  // the slots' sequences are gone with the engine
}

}  // namespace
}  // namespace hearth::engine
