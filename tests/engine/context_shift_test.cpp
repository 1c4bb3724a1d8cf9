// Context shift (llama-server's semantics, GenerationRequest::context_shift): a greedy request
// on stories260K in a 64-token slot asks for more tokens than fit. Each time the sequence
// fills, the first n_keep tokens (+ BOS) stay, half of the rest is dropped and generation goes
// on; the token generated right after a shift must be the one a fresh context gives for
// exactly the kept tokens at their new positions. Without the option the request ends with
// the context reason; n_keep -1 keeps the whole prompt.
#include <algorithm>

#include "serving_test_util.h"

namespace hearth::engine {
namespace {

constexpr int32_t kSlot = 64;

// The greedy next token after `tokens`, evaluated from an empty cache.
int32_t fresh_next_token(InferenceContext& ctx, const std::vector<int32_t>& tokens) {
  const int32_t seq = ctx.seq_create();
  std::vector<model::BatchToken> batch;
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.push_back({tokens[i], seq, static_cast<int32_t>(i), i + 1 == tokens.size()});
  }
  std::vector<float> logits;
  EXPECT_TRUE(ctx.decode(batch, logits).ok());
  ctx.seq_free(seq);
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// What the sequence holds after each shift, replayed from the whole output: every time it
// holds kSlot tokens, keep `keep`, drop half of the rest. Returns (index into `all` of the
// first token generated after the shift, the kept tokens) per shift.
std::vector<std::pair<size_t, std::vector<int32_t>>> replay_shifts(const std::vector<int32_t>& all, int32_t keep) {
  std::vector<std::pair<size_t, std::vector<int32_t>>> shifts;
  std::vector<int32_t> held;
  for (size_t i = 0; i < all.size(); ++i) {
    if (static_cast<int32_t>(held.size()) == kSlot) {
      const int32_t discard = (kSlot - keep) / 2;
      held.erase(held.begin() + keep, held.begin() + keep + discard);
      shifts.push_back({i, held});
    }
    held.push_back(all[i]);
  }
  return shifts;
}

class ContextShiftTest : public ServingEngineTest {};

TEST_F(ContextShiftTest, KeepsNKeepDropsHalfAndGoesOn) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 256);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 1;
  o.n_ctx_slot = kSlot;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = ctx->tokenizer().encode("Once upon a time, there was a little girl", true, false);
  ASSERT_EQ(prompt.front(), ctx->tokenizer().bos_id());

  for (int32_t n_keep : {4, -1}) {
    SCOPED_TRACE("n_keep " + std::to_string(n_keep));
    GenerationRequest r = greedy(prompt, 150);
    r.context_shift = true;
    r.n_keep = n_keep;
    Collected c = collect(*engine->submit(std::move(r)));
    ASSERT_TRUE(c.complete);
    EXPECT_EQ(c.final.stop_reason, StopReason::kLength);
    ASSERT_EQ(c.tokens.size(), 150u);

    std::vector<int32_t> all = prompt;
    all.insert(all.end(), c.tokens.begin(), c.tokens.end());
    const int32_t keep = n_keep < 0 ? static_cast<int32_t>(prompt.size()) : n_keep + 1;  // + BOS
    const auto shifts = replay_shifts(all, keep);
    ASSERT_GE(shifts.size(), 2u);  // 150 + 10 tokens through a 64-token slot
    for (const auto& [index, kept] : shifts) {
      EXPECT_TRUE(std::equal(prompt.begin(), prompt.begin() + std::min<int32_t>(keep, static_cast<int32_t>(prompt.size())),
                             kept.begin()));
      EXPECT_EQ(all[index], fresh_next_token(*ctx, kept)) << "after the shift at output token " << index - prompt.size();
    }
  }
}

TEST_F(ContextShiftTest, WithoutTheOptionTheContextEndsTheRequest) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 256);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 1;
  o.n_ctx_slot = kSlot;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = ctx->tokenizer().encode("Once upon a time", true, false);
  Collected c = collect(*engine->submit(greedy(prompt, 150)));
  ASSERT_TRUE(c.complete);
  EXPECT_EQ(c.final.stop_reason, StopReason::kContext);
  EXPECT_EQ(prompt.size() + c.tokens.size(), static_cast<size_t>(kSlot));
}

}  // namespace
}  // namespace hearth::engine
