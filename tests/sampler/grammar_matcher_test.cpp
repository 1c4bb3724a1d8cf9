// The grammar matcher: byte sequences accepted or rejected, completeness, repetition bounds,
// UTF-8 classes matched byte by byte (tokens end inside characters), ambiguity that must not
// blow up, and the token mask against a hand-made vocabulary.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sampler/grammar/grammar_matcher.h"

namespace hearth::sampler {
namespace {

GrammarMatcher matcher(const std::string& gbnf) {
  auto g = compile_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return GrammarMatcher(g.ok() ? *g : *compile_gbnf("root ::= \"unused\""));
}

// Whole text accepted and complete.
bool matches(const std::string& gbnf, const std::string& text) {
  GrammarMatcher m = matcher(gbnf);
  return m.accept_bytes(text) && m.is_complete();
}

// Accepted as a prefix (complete or not).
bool prefix_ok(const std::string& gbnf, const std::string& text) { return matcher(gbnf).accept_bytes(text); }

TEST(GrammarMatcher, LiteralsAlternativesAndCompleteness) {
  const std::string g = "root ::= \"ab\" (\"c\" | \"de\") \"!\"?\n";
  EXPECT_TRUE(matches(g, "abc"));
  EXPECT_TRUE(matches(g, "abde!"));
  EXPECT_FALSE(matches(g, "abd"));     // a prefix, not complete
  EXPECT_TRUE(prefix_ok(g, "abd"));
  EXPECT_FALSE(prefix_ok(g, "abx"));
  EXPECT_FALSE(prefix_ok(g, "abc!!"));
  GrammarMatcher m = matcher(g);
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(m.accept_bytes("abc"));
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.can_continue());  // "!" may follow
  EXPECT_TRUE(m.accept_bytes("!"));
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.can_continue());
}

TEST(GrammarMatcher, RejectedBytesLeaveThePositionUnchanged) {
  GrammarMatcher m = matcher("root ::= \"abc\" | \"abd\"\n");
  EXPECT_TRUE(m.accept_bytes("ab"));
  EXPECT_FALSE(m.accept_bytes("cx"));  // 'c' alone would do, 'x' after it not
  EXPECT_TRUE(m.can_accept_bytes("d"));
  EXPECT_TRUE(m.accept_bytes("c"));
  EXPECT_TRUE(m.is_complete());
  m.reset();
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(m.accept_bytes("abd"));
}

TEST(GrammarMatcher, RepetitionBounds) {
  const std::string g = "root ::= [0-9]{2,4} \"x\"{3} (\"ab\"){0,2} \"-\"*\n";
  EXPECT_FALSE(matches(g, "1xxx"));
  EXPECT_TRUE(matches(g, "12xxx"));
  EXPECT_TRUE(matches(g, "1234xxx"));
  EXPECT_FALSE(prefix_ok(g, "12345"));
  EXPECT_FALSE(matches(g, "12xx"));
  EXPECT_FALSE(prefix_ok(g, "12xxxx"));
  EXPECT_TRUE(matches(g, "12xxxabab"));
  EXPECT_FALSE(prefix_ok(g, "12xxxababa"));
  EXPECT_TRUE(matches(g, "12xxxab----------"));
  EXPECT_TRUE(matches("root ::= \"a\"{0}\"b\"\n", "b"));
  EXPECT_TRUE(matches("root ::= \"a\"{,2}\n", ""));
  EXPECT_TRUE(matches("root ::= \"a\"+\n", "aaaa"));
  EXPECT_FALSE(matches("root ::= \"a\"+\n", ""));
}

TEST(GrammarMatcher, Utf8ClassesAreMatchedBytewise) {
  const std::string greek = "root ::= [α-ω]+\n";  // U+03B1..U+03C9, two bytes each
  EXPECT_TRUE(matches(greek, "αβγ"));
  EXPECT_FALSE(prefix_ok(greek, "a"));
  GrammarMatcher m = matcher(greek);
  EXPECT_TRUE(m.accept_bytes("\xCE"));  // first byte of β (CE B2): may still become a letter
  EXPECT_FALSE(m.is_complete());
  EXPECT_FALSE(m.can_accept_bytes("\x80"));  // CE 80 is U+0380, outside the class
  EXPECT_TRUE(m.accept_bytes("\xB2"));
  EXPECT_TRUE(m.is_complete());

  const std::string not_quote = "root ::= [^\"]*\n";
  EXPECT_TRUE(matches(not_quote, "héllo wörld 😀 日本"));
  EXPECT_FALSE(prefix_ok(not_quote, "ab\"c"));
  // Only valid UTF-8 is generated: stray continuation bytes, overlong forms, surrogates and
  // bytes that never occur in UTF-8 are rejected.
  EXPECT_FALSE(prefix_ok(not_quote, "\x80"));
  EXPECT_FALSE(prefix_ok(not_quote, "\xC0\x80"));
  EXPECT_FALSE(prefix_ok(not_quote, "\xED\xA0\x80"));
  EXPECT_FALSE(prefix_ok(not_quote, "\xFF"));
  EXPECT_FALSE(prefix_ok(not_quote, "\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(matches(not_quote, "\xE6\x97"));              // a character cut short
  EXPECT_TRUE(matches("root ::= . . .\n", "a\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_TRUE(matches("root ::= [\\U0001F600-\\U0001F64F]\n", "\xF0\x9F\x98\x8E"));
  EXPECT_FALSE(matches("root ::= [\\U0001F600-\\U0001F64F]\n", "\xF0\x9F\x99\x90"));  // U+1F650
}

TEST(GrammarMatcher, NestedStructuresAndRightRecursion) {
  const std::string g =
      "root ::= value\n"
      "value ::= \"[\" (value (\",\" value)*)? \"]\" | [0-9]+\n";
  EXPECT_TRUE(matches(g, "[1,[2,[3,[]]],45]"));
  EXPECT_FALSE(matches(g, "[1,[2]"));
  EXPECT_FALSE(prefix_ok(g, "[1,]"));
  std::string deep(2000, '[');
  deep += std::string(2000, ']');
  EXPECT_TRUE(matches(g, deep));
  // A long run of a starred item reuses its states (the call in last position does not grow
  // the stack), so the number of parse states stays small.
  GrammarMatcher m = matcher("root ::= \"<\" [a-z]* \">\"\n");
  ASSERT_TRUE(m.accept_bytes("<" + std::string(5000, 'q')));
  EXPECT_LT(m.n_states(), 10u);
  EXPECT_TRUE(m.accept_bytes(">"));
  EXPECT_TRUE(m.is_complete());
}

TEST(GrammarMatcher, AmbiguityDoesNotMultiplyStacks) {
  // Every "a" can come from either alternative: without merging equal stacks this doubles the
  // stack set per byte.
  GrammarMatcher m = matcher("root ::= (\"a\" | \"a\" | [a-b])* \"!\"\n");
  ASSERT_TRUE(m.accept_bytes(std::string(3000, 'a')));
  EXPECT_LT(m.n_states(), 10u);
  EXPECT_TRUE(m.accept_bytes("!"));
  EXPECT_TRUE(m.is_complete());
}

TEST(GrammarMatcher, EmptyAlternativesAndOptionalRules) {
  const std::string g = "root ::= ws \"x\" ws\nws ::= | \" \" ws\n";
  EXPECT_TRUE(matches(g, "x"));
  EXPECT_TRUE(matches(g, "   x  "));
  EXPECT_FALSE(prefix_ok(g, " x y"));
  EXPECT_TRUE(matches("root ::= \"\"\n", ""));
}

std::shared_ptr<const TokenTrie> make_vocab(const std::vector<std::string>& pieces, const std::vector<uint8_t>& eog) {
  return TokenTrie::build(pieces, eog);
}

std::vector<int32_t> allowed_ids(GrammarMatcher& m, const TokenTrie& vocab) {
  std::vector<uint64_t> bits((vocab.n_vocab() + 63) / 64, ~uint64_t{0});  // garbage in: must be cleared
  m.fill_mask(vocab, bits);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < vocab.n_vocab(); ++i) {
    if ((bits[i >> 6] >> (i & 63)) & 1u) ids.push_back(static_cast<int32_t>(i));
  }
  return ids;
}

TEST(TokenMask, HandMadeVocabulary) {
  // 0 "" (control, not EOG), 1 EOG, 2 "a", 3 "ab", 4 "abc", 5 "b", 6 "{", 7 "}", 8 "{}", 9 "a}",
  // 10 "ab" again (same bytes, other id), 11 first byte of "é", 12 "é".
  const std::vector<std::string> pieces = {"", "", "a", "ab", "abc", "b", "{", "}", "{}", "a}", "ab", "\xC3", "\xC3\xA9"};
  std::vector<uint8_t> eog(pieces.size(), 0);
  eog[1] = 1;
  auto vocab = make_vocab(pieces, eog);
  GrammarMatcher m = matcher("root ::= \"{\" [ab]* \"}\"\n");
  EXPECT_EQ(allowed_ids(m, *vocab), (std::vector<int32_t>{6, 8}));
  ASSERT_TRUE(m.accept_token(*vocab, 6));
  EXPECT_EQ(allowed_ids(m, *vocab), (std::vector<int32_t>{2, 3, 5, 7, 9, 10}));
  EXPECT_FALSE(m.accept_token(*vocab, 4));  // "abc": c is not allowed
  EXPECT_FALSE(m.accept_token(*vocab, 1));  // EOG: not complete yet
  EXPECT_FALSE(m.accept_token(*vocab, 0));  // no bytes
  ASSERT_TRUE(m.accept_token(*vocab, 9));
  EXPECT_TRUE(m.is_complete());
  EXPECT_EQ(allowed_ids(m, *vocab), (std::vector<int32_t>{1}));  // only end of generation
  EXPECT_TRUE(m.accept_token(*vocab, 1));

  GrammarMatcher e = matcher("root ::= \"é\"+\n");
  EXPECT_EQ(allowed_ids(e, *vocab), (std::vector<int32_t>{11, 12}));
  ASSERT_TRUE(e.accept_token(*vocab, 11));
  EXPECT_EQ(allowed_ids(e, *vocab), (std::vector<int32_t>{}));  // needs the continuation byte A9 alone
  e.reset();
  ASSERT_TRUE(e.accept_token(*vocab, 12));
  EXPECT_EQ(allowed_ids(e, *vocab), (std::vector<int32_t>{1, 11, 12}));
}

TEST(TokenMask, CachedMasksAreTheSameAsWalkedOnes) {
  std::vector<std::string> pieces;
  for (char c = ' '; c <= '~'; ++c) {
    const std::string one(1, c);
    pieces.push_back(one);
    pieces.push_back(one + '"');
    pieces.push_back('"' + one + one);
  }
  auto vocab = make_vocab(pieces, std::vector<uint8_t>(pieces.size(), 0));
  const std::string g = "root ::= (\"\\\"\" [a-z]* \"\\\"\" \" \"?)+\n";
  GrammarMatcher cached = matcher(g);
  GrammarMatcher walked = matcher(g);
  walked.set_mask_cache(false);
  const std::string text = "\"abc\" \"xyzzy\"\"qq\" \"a\"";
  for (size_t i = 0; i <= text.size(); ++i) {
    EXPECT_EQ(allowed_ids(cached, *vocab), allowed_ids(walked, *vocab)) << "after " << text.substr(0, i);
    if (i < text.size()) {
      ASSERT_TRUE(cached.accept_bytes(text.substr(i, 1)));
      ASSERT_TRUE(walked.accept_bytes(text.substr(i, 1)));
    }
  }
}

}  // namespace
}  // namespace hearth::sampler
