// Grammar-constrained generation through the engine with a real model (stories260K, a story
// model that would never write this on its own): every seed's output matches the grammar and
// ends where the grammar ends; a bad grammar is refused at submission with its position, and
// requests with different grammars share the engine without mixing their states.
#include <gtest/gtest.h>

#include <set>

#include "engine/serving_test_util.h"
#include "sampler/grammar/grammar_matcher.h"

namespace hearth::engine {
namespace {

const char* kPersonGrammar =
    "root ::= \"{\\\"name\\\": \\\"\" [A-Za-z ]{1,12} \"\\\", \\\"age\\\": \" [1-9] [0-9]? \"}\"\n";

bool matches(const std::string& gbnf, const std::string& text) {
  auto g = sampler::compile_gbnf(gbnf);
  EXPECT_TRUE(g.ok());
  sampler::GrammarMatcher m(*g);
  return m.accept_bytes(text) && m.is_complete();
}

GenerationRequest sampled(std::vector<int32_t> prompt, uint64_t seed, std::string grammar) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 1.0f;
  r.sampling.top_k = 0;
  r.sampling.top_p = 1.0f;
  r.sampling.seed = seed;
  r.n_predict = 100;  // more than the grammar's longest text in bytes: it must finish
  r.grammar = std::move(grammar);
  return r;
}

TEST_F(ServingEngineTest, GrammarShapesEverySeedsOutput) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 4 * 256);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 4;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  const auto prompt = ctx->tokenizer().encode("Once upon a time", true, false);
  std::vector<std::shared_ptr<ResultStream>> streams;
  for (uint64_t seed = 1; seed <= 8; ++seed) streams.push_back(engine->submit(sampled(prompt, seed, kPersonGrammar)));
  std::set<std::string> distinct;
  for (auto& s : streams) {
    Collected c = collect(*s);
    ASSERT_TRUE(c.complete);
    ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.message;
    EXPECT_EQ(c.final.stop_reason, StopReason::kEog) << c.text;
    EXPECT_TRUE(matches(kPersonGrammar, c.text)) << c.text;
    distinct.insert(c.text);
  }
  EXPECT_GT(distinct.size(), 1u);  // the seeds did sample
}

TEST_F(ServingEngineTest, DifferentGrammarsRunSideBySide) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 3 * 256);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 3;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  const auto prompt = ctx->tokenizer().encode("Lily saw", true, false);
  const std::string digits = "root ::= [0-9]{3} \"-\" [0-9]{4}\n";
  const std::string words = "root ::= (\"yes\" | \"no\") (\", \" (\"yes\" | \"no\")){2}\n";
  auto a = engine->submit(sampled(prompt, 5, digits));
  auto b = engine->submit(sampled(prompt, 5, words));
  auto c = engine->submit(sampled(prompt, 5, ""));  // free text next to them
  Collected ca = collect(*a);
  Collected cb = collect(*b);
  Collected cc = collect(*c);
  EXPECT_TRUE(matches(digits, ca.text)) << ca.text;
  EXPECT_TRUE(matches(words, cb.text)) << cb.text;
  EXPECT_EQ(cc.final.kind, EngineEvent::Kind::kDone);
  EXPECT_FALSE(matches(digits, cc.text));
}

TEST_F(ServingEngineTest, BadGrammarIsRefusedAtSubmission) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 256);
  ASSERT_NE(ctx, nullptr);
  ServingOptions o;
  o.n_slots = 1;
  auto engine = start(*ctx, o);
  ASSERT_NE(engine, nullptr);
  const auto prompt = ctx->tokenizer().encode("Hi", true, false);
  auto stream = engine->submit(sampled(prompt, 1, "root ::= \"a\" (\"b\"\n"));
  EngineEvent ev;
  ASSERT_TRUE(stream->next(ev, std::chrono::milliseconds(0)));  // already there: never queued
  ASSERT_EQ(ev.kind, EngineEvent::Kind::kError);
  EXPECT_EQ(ev.error.kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(ev.error.message, "grammar: line 1, column 14: missing ')' for this '('");
  auto left = engine->submit(sampled(prompt, 1, "root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"\n"));
  ASSERT_TRUE(left->next(ev, std::chrono::milliseconds(0)));
  ASSERT_EQ(ev.kind, EngineEvent::Kind::kError);
  EXPECT_NE(ev.error.message.find("left recursion"), std::string::npos);
  EXPECT_EQ(engine->metrics().requests_total, 0u);
}

TEST_F(ServingEngineTest, GenerateTakesAGrammarToo) {
  HEARTH_REQUIRE_FILE(stories());
  auto ctx = open(stories(), 256);
  ASSERT_NE(ctx, nullptr);
  GenerateOptions o;
  o.n_predict = 100;
  o.sampling.seed = 9;
  o.sampling.temperature = 0.9f;
  o.grammar = kPersonGrammar;
  auto r = generate(*ctx, "Once upon a time", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stop_reason, "eog");
  EXPECT_TRUE(matches(kPersonGrammar, r->text)) << r->text;
  o.grammar = "root ::= [a-";
  auto bad = generate(*ctx, "Once upon a time", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace hearth::engine
