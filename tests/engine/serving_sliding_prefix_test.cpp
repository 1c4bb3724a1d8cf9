// A shared system prompt on a sliding-window model (gemma3: 5 of 6 layers slide, window 32):
// the sliding layers release a prompt's early blocks while it is evaluated, so a new
// conversation could adopt a cached prefix only where the window at its end was still held.
// Prompt preparation finds where a chat's system messages end; the engine stops a prompt chunk
// there and publishes the prefix before the window moves on. A second conversation with the
// same system prompt and another user turn then adopts the system prompt, and its output
// (tokens and log-probabilities) equals a run with the prefix cache off.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/prompt_preparation.h"
#include "engine/serving_test_util.h"
#include "protocol/model_info.h"

namespace hearth::engine {
namespace {

const char* const kChatMl =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

std::string gemma3() { return test::shared_dir() + "/next/models/gemma3-F32.gguf"; }

std::string long_text(const std::string& seed, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += seed + " " + std::to_string(i) + ". ";
  return s;
}

protocol::CompletionRequest chat(const std::string& user, bool with_system) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (with_system) messages.push_back({{"role", "system"}, {"content", long_text("You tell short stories about a cat and a dog", 3)}});
  messages.push_back({{"role", "user"}, {"content", user}});
  protocol::CompletionRequest r;
  protocol::PromptSource source;
  source.kind = protocol::PromptSource::Kind::kChat;
  source.chat = {{"messages", messages}, {"add_generation_prompt", true}};
  r.prompts.push_back(source);
  return r;
}

GenerationRequest prepared(InferenceContext& ctx, const ChatTemplate& tmpl, const protocol::CompletionRequest& request) {
  protocol::ModelInfo info;
  PromptModel model{ctx.tokenizer(), tmpl, info};
  auto p = prepare_completion(model, request);
  EXPECT_TRUE(p.ok()) << p.error().to_string();
  if (!p.ok()) return {};
  GenerationRequest r = p->requests.at(0);
  r.sampling.temperature = 0;
  r.n_predict = 8;
  r.ignore_eos = true;
  r.logprobs = true;
  r.top_logprobs = 4;
  return r;
}

std::unique_ptr<InferenceContext> open_gemma3(bool sharing) {
  ContextOptions o;
  o.n_ctx = 2 * 512;
  o.n_threads = 2;
  o.prefix_sharing = sharing;
  auto ctx = InferenceContext::load(gemma3(), o);
  EXPECT_TRUE(ctx.ok()) << ctx.error().to_string();
  return ctx.ok() ? std::move(ctx).value() : nullptr;
}

TEST_F(ServingEngineTest, ASharedSystemPromptIsAdoptedOnASlidingWindowModel) {
  HEARTH_REQUIRE_FILE(gemma3());
  auto tmpl = ChatTemplate::create(kChatMl, "", "", "chatml");
  ASSERT_TRUE(tmpl.ok()) << tmpl.error().to_string();
  auto ctx = open_gemma3(true);
  ASSERT_NE(ctx, nullptr);
  ASSERT_TRUE(ctx->kv().has_sliding_pool());
  const int32_t window = 32;  // the model's (README)
  const int32_t bt = ctx->kv().block_tokens();

  // Preparation: the system prompt's end, within what two conversations share.
  GenerationRequest first = prepared(*ctx, *tmpl, chat(long_text("Where did the dog go", 6), true));
  GenerationRequest second = prepared(*ctx, *tmpl, chat(long_text("What did the cat eat", 6), true));
  EXPECT_EQ(prepared(*ctx, *tmpl, chat("Hi", false)).shared_prefix, 0);  // no system message
  ASSERT_GT(first.shared_prefix, 2 * bt);
  EXPECT_EQ(first.shared_prefix, second.shared_prefix);
  const auto common = std::mismatch(first.prompt.begin(), first.prompt.end(), second.prompt.begin(), second.prompt.end());
  EXPECT_LE(first.shared_prefix, common.first - first.prompt.begin());
  // The first prompt runs well past one window beyond the system prompt.
  ASSERT_GT(static_cast<int32_t>(first.prompt.size()), first.shared_prefix + window + 2 * bt);
  const int32_t adoptable = first.shared_prefix / bt * bt;

  // Reference: the prefix cache off (the engine still stops the chunk at the same point, so the
  // batches are the same as in the adopted run).
  auto plain_ctx = open_gemma3(false);
  ASSERT_NE(plain_ctx, nullptr);
  ServingOptions o;
  o.n_slots = 2;
  // Chunked prefill: a prompt evaluated in one batch keeps every sliding block until it is
  // published; over several steps the early ones are released as it goes.
  o.step_token_budget = 32;
  Collected want;
  {
    auto engine = start(*plain_ctx, o);
    ASSERT_NE(engine, nullptr);
    want = collect(*engine->submit(second));
    ASSERT_EQ(want.final.kind, EngineEvent::Kind::kDone) << want.final.error.to_string();
  }

  for (bool hint : {false, true}) {
    SCOPED_TRACE(hint ? "publishing at the system prompt's end" : "without the hint");
    auto shared_ctx = open_gemma3(true);
    ASSERT_NE(shared_ctx, nullptr);
    auto engine = start(*shared_ctx, o);
    ASSERT_NE(engine, nullptr);
    GenerationRequest a = first, b = second;
    if (!hint) a.shared_prefix = b.shared_prefix = 0;
    a.slot = 0;
    b.slot = 1;  // another slot: only the shared cache can supply the prefix
    Collected one = collect(*engine->submit(a));
    ASSERT_EQ(one.final.kind, EngineEvent::Kind::kDone) << one.final.error.to_string();
    Collected two = collect(*engine->submit(b));
    ASSERT_EQ(two.final.kind, EngineEvent::Kind::kDone) << two.final.error.to_string();
    if (!hint) {
      // The window at the system prompt's end was gone before the first prompt was published.
      EXPECT_LT(two.final.timings.cached_n, adoptable);
      continue;
    }
    EXPECT_EQ(two.final.timings.cached_n, adoptable);
    ASSERT_EQ(two.tokens, want.tokens);
    ASSERT_EQ(two.outputs.size(), want.outputs.size());
    for (size_t i = 0; i < want.outputs.size(); ++i) {
      EXPECT_EQ(two.outputs[i].logprob, want.outputs[i].logprob) << i;
      ASSERT_EQ(two.outputs[i].top.size(), want.outputs[i].top.size());
      for (size_t k = 0; k < want.outputs[i].top.size(); ++k) {
        EXPECT_EQ(two.outputs[i].top[k].token, want.outputs[i].top[k].token);
        EXPECT_EQ(two.outputs[i].top[k].logprob, want.outputs[i].top[k].logprob);
      }
    }
    // The sliding pool still holds only a window per sequence plus the cached windows.
    EXPECT_GT(engine->metrics().kv_sliding_blocks_total, 0);
  }
}

}  // namespace
}  // namespace hearth::engine
