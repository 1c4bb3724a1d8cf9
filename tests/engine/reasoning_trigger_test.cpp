// A lazy tool-call grammar (tool_choice "auto") in a reasoning family (Qwen3: <think>, then
// Hermes <tool_call>): a call opener the model writes inside its reasoning does not switch the
// grammar on; the same opener after </think> does. The loop below is the serving slot's per
// token: pause the triggers while ThinkingBudget says the reply is inside the reasoning, sample,
// then let ThinkingBudget see the token's text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/thinking_budget.h"
#include "engine/tool_call_grammar.h"
#include "sampler/grammar/compiled_grammar.h"
#include "sampler/sampler_chain.h"

namespace hearth::engine {
namespace {

using Json = nlohmann::ordered_json;

const std::vector<std::string> kPieces = {
    "",  // 0: end of generation
    "<think>", "</think>", "<tool_call>", "\n", "{\"name\": \"f\", \"arguments\": ", "{\"x\": 1}", "}", "</tool_call>", "hmm", "ok"};
enum Piece { kEog, kOpen, kClose, kCall, kNewline, kHead, kArgs, kBrace, kCallEnd, kHmm, kOk };

sampler::SamplerChain lazy_chain() {
  Json chat = Json::parse(R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f",
    "parameters":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}}}]})");
  auto g = tool_call_grammar(ChatOutputFamily::kHermes, chat);
  EXPECT_TRUE(g.ok() && !g->triggers.empty());
  auto compiled = sampler::compile_gbnf(g->gbnf);
  EXPECT_TRUE(compiled.ok()) << (compiled.ok() ? "" : compiled.error().message);
  std::vector<uint8_t> eog(kPieces.size(), 0);
  eog[kEog] = 1;
  sampler::SamplerParams p;
  p.temperature = 0.0f;
  auto chain = sampler::SamplerChain::create(p, kPieces.size(), 64, {*compiled, sampler::TokenTrie::build(kPieces, eog), g->triggers});
  EXPECT_TRUE(chain.ok());
  return std::move(chain).value();
}

// One step of the slot: the model's favourite is `want`.
int32_t step(sampler::SamplerChain& chain, ThinkingBudget& thinking, int32_t want) {
  chain.set_triggers_paused(thinking.inside());
  std::vector<float> logits(kPieces.size(), 0.0f);
  logits[static_cast<size_t>(want)] = 10.0f;
  const int32_t token = chain.sample(logits.data()).token;
  thinking.on_token(kPieces[static_cast<size_t>(token)]);
  return token;
}

TEST(ReasoningTrigger, AnOpenerInsideTheReasoningIsNotACall) {
  for (bool open_at_start : {false, true}) {
    SCOPED_TRACE(open_at_start ? "the prompt opened <think>" : "the model opens <think>");
    sampler::SamplerChain chain = lazy_chain();
    ThinkingBudget thinking(-1, open_at_start, "<think>", "</think>");
    if (!open_at_start) EXPECT_EQ(step(chain, thinking, kOpen), kOpen);
    EXPECT_EQ(step(chain, thinking, kHmm), kHmm);
    // The opener while reasoning: free text, the grammar stays off, and text that no call
    // allows ("ok" right after <tool_call>) is still free.
    EXPECT_EQ(step(chain, thinking, kCall), kCall);
    EXPECT_FALSE(chain.grammar_active());
    EXPECT_EQ(step(chain, thinking, kOk), kOk);
    EXPECT_EQ(step(chain, thinking, kClose), kClose);
    EXPECT_FALSE(thinking.inside());
    // After the reasoning the opener is a call, held to the grammar.
    EXPECT_EQ(step(chain, thinking, kCall), kCall);
    EXPECT_TRUE(chain.grammar_active());
    EXPECT_EQ(step(chain, thinking, kOk), kNewline);  // "ok" is masked: the call goes on
    EXPECT_EQ(thinking.reasoning_tokens(), 4);
  }
}

TEST(ReasoningTrigger, WithoutTrackingTheSameOpenerSwitchesTheGrammarOn) {
  // The contrast: a chain whose triggers are never paused takes the opener inside <think>.
  sampler::SamplerChain chain = lazy_chain();
  ThinkingBudget untracked;  // no markers: never inside
  EXPECT_EQ(step(chain, untracked, kOpen), kOpen);
  EXPECT_EQ(step(chain, untracked, kCall), kCall);
  EXPECT_TRUE(chain.grammar_active());
}

}  // namespace
}  // namespace hearth::engine
