// The sampler chain under a grammar: the mask runs before every other sampler, so greedy and
// random draws only ever produce allowed tokens, end-of-generation only where the grammar may
// end, and the chain reports when the grammar is finished or allows nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sampler/sampler_chain.h"

namespace hearth::sampler {
namespace {

// 0 EOG, 1 "a", 2 "b", 3 "c", 4 "ab", 5 "x", 6 "ca", 7 "" (control, no text)
const std::vector<std::string> kPieces = {"", "a", "b", "c", "ab", "x", "ca", ""};

GrammarConstraint constraint(const std::string& gbnf) {
  std::vector<uint8_t> eog(kPieces.size(), 0);
  eog[0] = 1;
  auto g = compile_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return {*g, TokenTrie::build(kPieces, eog), {}};
}

TEST(GrammarChain, GreedyTakesTheBestAllowedToken) {
  SamplerParams p;
  p.temperature = 0.0f;
  auto chain = SamplerChain::create(p, kPieces.size(), 64, constraint("root ::= \"ab\" \"c\"{2}\n"));
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  // "x" and the control token have the best logits but are never allowed.
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 3.0f, 0.5f, 9.0f, 4.0f, 8.0f};
  EXPECT_EQ(chain->sample(logits.data()).token, 1);  // "a" (and "ab") fit; "a" scores higher
  EXPECT_FALSE(chain->grammar_complete());
  EXPECT_EQ(chain->sample(logits.data()).token, 2);  // "b"
  EXPECT_EQ(chain->sample(logits.data()).token, 3);  // "c" ("ca" would need an "a" next)
  EXPECT_FALSE(chain->grammar_finished());
  EXPECT_EQ(chain->sample(logits.data()).token, 3);
  EXPECT_TRUE(chain->grammar_complete());
  EXPECT_TRUE(chain->grammar_finished());
  EXPECT_EQ(chain->sample(logits.data()).token, 0);  // only end of generation is left
  EXPECT_EQ(chain->history().size(), 5u);
}

TEST(GrammarChain, RandomDrawsStayInsideTheGrammar) {
  const std::string gbnf = "root ::= (\"a\" | \"b\" | \"ab\")+ \"c\"\n";
  std::vector<float> logits = {3.0f, 0.1f, 0.2f, 0.3f, 0.4f, 5.0f, 1.0f, 6.0f};
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SamplerParams p;
    p.seed = seed;
    p.temperature = 1.5f;
    p.top_k = 3;  // after the mask: three of the allowed tokens, never "x"
    p.top_p = 1.0f;
    auto chain = SamplerChain::create(p, kPieces.size(), 64, constraint(gbnf));
    ASSERT_TRUE(chain.ok());
    std::string text;
    for (int step = 0; step < 50 && !chain->grammar_finished(); ++step) {
      const int32_t t = chain->sample(logits.data()).token;
      ASSERT_GE(t, 1) << "seed " << seed;
      ASSERT_NE(t, 5);
      ASSERT_NE(t, 7);
      text += kPieces[static_cast<size_t>(t)];
    }
    // The grammar cannot finish early without "c", and nothing may follow it.
    if (chain->grammar_finished()) {
      EXPECT_EQ(text.back(), 'c') << text;
      EXPECT_EQ(text.find('c'), text.size() - 1) << text;
    }
  }
}

TEST(GrammarChain, EndOfGenerationOnlyWhereTheGrammarMayEnd) {
  SamplerParams p;
  p.temperature = 0.0f;
  auto chain = SamplerChain::create(p, kPieces.size(), 64, constraint("root ::= \"a\"+\n"));
  ASSERT_TRUE(chain.ok());
  const std::vector<float> eog_first = {9.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  EXPECT_EQ(chain->sample(eog_first.data()).token, 1);  // EOG is not allowed before any "a"
  EXPECT_EQ(chain->sample(eog_first.data()).token, 0);  // now it is
}

TEST(GrammarChain, NothingAllowedIsReportedNotGuessed) {
  SamplerParams p;
  p.temperature = 0.7f;
  p.seed = 3;
  auto chain = SamplerChain::create(p, kPieces.size(), 64, constraint("root ::= \"a\" \"z\"\n"));
  ASSERT_TRUE(chain.ok());
  const std::vector<float> logits(kPieces.size(), 1.0f);
  EXPECT_EQ(chain->sample(logits.data()).token, 1);
  const SampleResult none = chain->sample(logits.data());  // no token spells "z"
  EXPECT_EQ(none.token, -1);
  EXPECT_FALSE(chain->grammar_complete());
  EXPECT_EQ(chain->history().size(), 1u);
  chain->reset();
  EXPECT_EQ(chain->sample(logits.data()).token, 1);  // the grammar starts over too
}

TEST(GrammarChain, ConstraintMustMatchTheVocabulary) {
  SamplerParams p;
  GrammarConstraint c = constraint("root ::= \"a\"\n");
  EXPECT_FALSE(SamplerChain::create(p, kPieces.size() + 1, 16, c).ok());
  GrammarConstraint no_vocab{c.grammar, nullptr, {}};
  auto r = SamplerChain::create(p, kPieces.size(), 16, no_vocab);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace hearth::sampler
