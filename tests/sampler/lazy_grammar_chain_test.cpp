// A lazy grammar (tool_choice "auto"): free text until a trigger appears, the grammar from the
// trigger on; a token that would open a call the grammar rejects is redrawn; a start-only
// trigger (Llama 3's bare JSON call) counts only as the first text of the output.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sampler/sampler_chain.h"

namespace hearth::sampler {
namespace {

// 0 EOG, 1 "a", 2 "<", 3 "go>", 4 "<go>", 5 "{", 6 "}", 7 "x", 8 "<go>x", 9 " ", 10 "<go>{"
const std::vector<std::string> kPieces = {"", "a", "<", "go>", "<go>", "{", "}", "x", "<go>x", " ", "<go>{"};
const std::string kGrammar = "root ::= \"<go>\" \"{\" \"a\"* \"}\"\n";

GrammarConstraint lazy(std::vector<GrammarTrigger> triggers) {
  std::vector<uint8_t> eog(kPieces.size(), 0);
  eog[0] = 1;
  auto g = compile_gbnf(kGrammar);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return {*g, TokenTrie::build(kPieces, eog), std::move(triggers)};
}

// Logits where `best` wins, `second` comes next, everything else far behind.
std::vector<float> prefer(int32_t best, int32_t second = -1) {
  std::vector<float> l(kPieces.size(), 0.0f);
  l[static_cast<size_t>(best)] = 10.0f;
  if (second >= 0) l[static_cast<size_t>(second)] = 5.0f;
  return l;
}

SamplerChain greedy(std::vector<GrammarTrigger> triggers) {
  SamplerParams p;
  p.temperature = 0.0f;
  auto chain = SamplerChain::create(p, kPieces.size(), 64, lazy(std::move(triggers)));
  EXPECT_TRUE(chain.ok()) << chain.error().message;
  return std::move(chain).value();
}

TEST(LazyGrammarChain, FreeTextUntilTheTriggerThenTheGrammar) {
  SamplerChain chain = greedy({{"<go>"}});
  EXPECT_FALSE(chain.grammar_active());
  EXPECT_EQ(chain.sample(prefer(7).data()).token, 7);  // "x": free text, the grammar is off
  EXPECT_EQ(chain.sample(prefer(0).data()).token, 0);  // EOG is fine before a trigger
  EXPECT_FALSE(chain.grammar_complete());
  // The trigger split over two tokens switches the grammar on.
  EXPECT_EQ(chain.sample(prefer(2).data()).token, 2);
  EXPECT_FALSE(chain.grammar_active());
  EXPECT_EQ(chain.sample(prefer(3).data()).token, 3);
  EXPECT_TRUE(chain.grammar_active());
  // Now "x" and EOG are masked: only "{" continues the match.
  EXPECT_EQ(chain.sample(prefer(7, 0).data()).token, 5);
  EXPECT_EQ(chain.sample(prefer(7, 1).data()).token, 1);
  EXPECT_EQ(chain.sample(prefer(7, 6).data()).token, 6);
  EXPECT_TRUE(chain.grammar_finished());
  EXPECT_EQ(chain.sample(prefer(7).data()).token, 0);
}

TEST(LazyGrammarChain, ATokenThatOpensACallTheGrammarRejectsIsRedrawn) {
  SamplerChain chain = greedy({{"<go>"}});
  EXPECT_EQ(chain.sample(prefer(7).data()).token, 7);
  // "<go>x" completes the trigger but the grammar needs "{" after it: the next best is drawn.
  EXPECT_EQ(chain.sample(prefer(8, 10).data()).token, 10);  // "<go>{" opens the call and goes on
  EXPECT_TRUE(chain.grammar_active());
  EXPECT_EQ(chain.sample(prefer(7, 6).data()).token, 6);
  EXPECT_TRUE(chain.grammar_finished());
}

TEST(LazyGrammarChain, RandomDrawsNeverLeaveACallUnconstrained) {
  std::vector<float> logits(kPieces.size(), 1.0f);
  logits[8] = 3.0f;  // the rejected opener is the likeliest token
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    SamplerParams p;
    p.seed = seed;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    auto chain = SamplerChain::create(p, kPieces.size(), 64, lazy({{"<go>"}}));
    ASSERT_TRUE(chain.ok());
    std::string text;
    for (int step = 0; step < 40 && !chain->grammar_finished(); ++step) {
      const int32_t t = chain->sample(logits.data()).token;
      ASSERT_GE(t, 0);
      if (t == 0) break;
      text += kPieces[static_cast<size_t>(t)];
    }
    const size_t at = text.find("<go>");
    if (at == std::string::npos) continue;
    // From the trigger on the text is a prefix of <go>{a*}.
    const std::string call = text.substr(at);
    ASSERT_GE(call.size(), 5u) << text;
    EXPECT_EQ(call.substr(0, 5), "<go>{") << text;
    for (size_t i = 5; i < call.size(); ++i) {
      EXPECT_TRUE(call[i] == 'a' || (call[i] == '}' && i + 1 == call.size())) << text;
    }
  }
}

TEST(LazyGrammarChain, AStartOnlyTriggerCountsOnlyBeforeAnyText) {
  SamplerChain late = greedy({{"<go>", /*at_start=*/true}});
  EXPECT_EQ(late.sample(prefer(7).data()).token, 7);
  EXPECT_EQ(late.sample(prefer(4).data()).token, 4);  // after "x": plain text
  EXPECT_FALSE(late.grammar_active());

  SamplerChain early = greedy({{"<go>", /*at_start=*/true}});
  EXPECT_EQ(early.sample(prefer(9).data()).token, 9);  // leading whitespace is allowed
  EXPECT_EQ(early.sample(prefer(4).data()).token, 4);
  EXPECT_TRUE(early.grammar_active());
  early.reset();
  EXPECT_FALSE(early.grammar_active());
}

}  // namespace
}  // namespace hearth::sampler
