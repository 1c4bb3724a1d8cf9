// The three algorithms on small hand-made vocabularies, where the expected ids can be worked out
// by hand: SPM merge priority by score and byte fallback, BPE merge order by rank, WordPiece
// normalization, punctuation split, [UNK] and [CLS]/[SEP].
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_codec.h"

namespace hearth {
namespace {

struct Piece {
  std::string text;
  float score;
  TokenType type;
};

Vocabulary spm_vocab(bool with_whole_word) {
  Vocabulary v;
  v.kind = TokenizerKind::kSpm;
  v.add_bos = true;
  v.add_space_prefix = true;
  v.bos_id = 1, v.eos_id = 2, v.unk_id = 0;
  std::vector<Piece> pieces = {{"<unk>", 0, TokenType::kUnknown}, {"<s>", 0, TokenType::kControl},
                               {"</s>", 0, TokenType::kControl}};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    pieces.push_back({buf, 0, TokenType::kByte});
  }
  for (const Piece& p : std::vector<Piece>{{"\xE2\x96\x81", -1, TokenType::kNormal},  // 259 ▁
                                           {"h", -2, TokenType::kNormal},             // 260
                                           {"e", -2, TokenType::kNormal},             // 261
                                           {"l", -2, TokenType::kNormal},             // 262
                                           {"o", -2, TokenType::kNormal},             // 263
                                           {"\xE2\x96\x81h", -3, TokenType::kNormal},  // 264 ▁h
                                           {"he", -1.5f, TokenType::kNormal},          // 265
                                           {"ll", -1, TokenType::kNormal},             // 266
                                           {"llo", -0.5f, TokenType::kNormal},         // 267
                                           {"\xE2\x96\x81he", -0.2f, TokenType::kNormal},  // 268 ▁he
                                           {"hello", -0.3f, TokenType::kNormal}}) {        // 269
    pieces.push_back(p);
  }
  if (with_whole_word) pieces.push_back({"\xE2\x96\x81hello", -0.1f, TokenType::kNormal});  // 270
  for (const Piece& p : pieces) {
    v.tokens.push_back(p.text);
    v.scores.push_back(p.score);
    v.types.push_back(p.type);
  }
  return v;
}

TEST(SpmHandmade, HigherScoreMergesFirst) {
  auto tok = Tokenizer::from_vocabulary(spm_vocab(false));
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  // ll (-1) → llo (-0.5) → he (-1.5) → then ▁he (-0.2) beats hello (-0.3).
  EXPECT_EQ(tok->encode("hello", false, false), (std::vector<int32_t>{268, 267}));
  EXPECT_EQ(tok->encode("hello", true, false), (std::vector<int32_t>{1, 268, 267}));
  EXPECT_EQ(tok->decode({1, 268, 267}), "hello");
  auto whole = Tokenizer::from_vocabulary(spm_vocab(true));
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->encode("hello", false, false), (std::vector<int32_t>{270}));
}

TEST(SpmHandmade, UnknownCharactersFallBackToBytes) {
  auto tok = Tokenizer::from_vocabulary(spm_vocab(false));
  ASSERT_TRUE(tok.ok());
  // "hé": ▁h, then é = C3 A9 as byte tokens (3 + byte value).
  EXPECT_EQ(tok->encode("h\xC3\xA9", false, false), (std::vector<int32_t>{264, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok->decode(tok->encode("h\xC3\xA9 hello", false, false)), "h\xC3\xA9 hello");
  // Invalid UTF-8 survives as bytes.
  const std::string bad = "\xFF\xC3(";
  EXPECT_EQ(tok->decode(tok->encode(bad, true, false)), bad);
}

TEST(SpmHandmade, SpecialTokensOnlyWhenAsked) {
  auto tok = Tokenizer::from_vocabulary(spm_vocab(false));
  ASSERT_TRUE(tok.ok());
  const auto parsed = tok->encode("<s>hello", false, true);
  ASSERT_FALSE(parsed.empty());
  EXPECT_EQ(parsed[0], 1);
  const auto plain = tok->encode("<s>hello", false, false);
  for (int32_t id : plain) EXPECT_NE(id, 1);
  EXPECT_EQ(tok->token_to_piece(1, true), "<s>");
  EXPECT_EQ(tok->token_to_piece(1, false), "");
  EXPECT_EQ(tok->token_to_piece(3 + 'A', false), "A");
  EXPECT_EQ(tok->token_to_piece(-5, false), "");
  EXPECT_EQ(tok->token_to_piece(100000, false), "");
}

// GPT-2's byte alphabet, rebuilt here so the test does not trust the code under test.
std::string byte_char(int b) {
  int extra = 0;
  for (int x = 0; x < 256; ++x) {
    const bool printable = (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
    const uint32_t cp = printable ? static_cast<uint32_t>(x) : static_cast<uint32_t>(256 + extra++);
    if (x == b) {
      std::string s;
      utf8::append(s, cp);
      return s;
    }
  }
  return {};
}

Vocabulary bpe_vocab(std::vector<std::string> merges) {
  Vocabulary v;
  v.kind = TokenizerKind::kBpe;
  v.pre = "gpt-2";
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_char(b));
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ');
    v.tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
  }
  v.tokens.push_back("<|endoftext|>");
  v.types.assign(v.tokens.size(), TokenType::kNormal);
  v.types.back() = TokenType::kControl;
  v.bos_id = v.eos_id = static_cast<int32_t>(v.tokens.size() - 1);
  v.merges = std::move(merges);
  return v;
}

TEST(BpeHandmade, LowerRankMergesFirst) {
  {
    auto tok = Tokenizer::from_vocabulary(bpe_vocab({"l l", "e l"}));  // ll=256, el=257
    ASSERT_TRUE(tok.ok()) << tok.error().to_string();
    EXPECT_EQ(tok->encode("ell", false, false), (std::vector<int32_t>{'e', 256}));
  }
  {
    auto tok = Tokenizer::from_vocabulary(bpe_vocab({"e l", "l l"}));  // el=256, ll=257
    ASSERT_TRUE(tok.ok());
    EXPECT_EQ(tok->encode("ell", false, false), (std::vector<int32_t>{256, 'l'}));
  }
  {
    // h e → he, l l → ll, he ll → hell; "Ġ" + w for the space-prefixed word.
    auto tok = Tokenizer::from_vocabulary(bpe_vocab({"h e", "l l", "he ll", "\xC4\xA0 w"}));
    ASSERT_TRUE(tok.ok());
    EXPECT_EQ(tok->encode("hello world", false, false),
              (std::vector<int32_t>{258, 'o', 259, 'o', 'r', 'l', 'd'}));
    EXPECT_EQ(tok->decode(tok->encode("hello world", false, false)), "hello world");
  }
}

TEST(BpeHandmade, InvalidUtf8BecomesReplacementCharacter) {
  auto tok = Tokenizer::from_vocabulary(bpe_vocab({}));
  ASSERT_TRUE(tok.ok());
  // The stray byte 0xFF is read as U+FFFD (EF BF BD), as the reference does.
  EXPECT_EQ(tok->decode(tok->encode("a\xFF", false, false)), "a\xEF\xBF\xBD");
  EXPECT_EQ(tok->encode("<|endoftext|>", false, true), (std::vector<int32_t>{256}));
  EXPECT_GT(tok->encode("<|endoftext|>", false, false).size(), 1u);
  EXPECT_TRUE(tok->is_eog(256));
  EXPECT_FALSE(tok->is_eog('a'));
}

TEST(BpeHandmade, BadMergeIsAnError) {
  Vocabulary v = bpe_vocab({});
  v.merges.push_back("nospace");
  auto tok = Tokenizer::from_vocabulary(std::move(v));
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.error().message.find("nospace"), std::string::npos);
}

TEST(VocabularyChecks, OutOfRangeSpecialIdIsAnError) {
  Vocabulary v = spm_vocab(false);
  v.eos_id = 99999;
  auto tok = Tokenizer::from_vocabulary(std::move(v));
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.error().kind, ErrorKind::kCorrupt);
}

TEST(VocabularyChecks, UnknownPreTokenizerIsAnError) {
  Vocabulary v = bpe_vocab({});
  v.pre = "no-such-pre";
  auto tok = Tokenizer::from_vocabulary(std::move(v));
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.error().message.find("no-such-pre"), std::string::npos);
}

Vocabulary wpm_vocab() {
  Vocabulary v;
  v.kind = TokenizerKind::kWpm;
  v.tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "\xE2\x96\x81hello", "\xE2\x96\x81world", "\xE2\x96\x81un",
              "aff", "able", "\xE2\x96\x81!", "\xE2\x96\x81" "cafe", "\xE2\x96\x81,", "\xE2\x96\x81\xE4\xB8\x96"};
  v.types.assign(v.tokens.size(), TokenType::kNormal);
  for (int i = 0; i < 4; ++i) v.types[static_cast<size_t>(i)] = TokenType::kControl;
  v.pad_id = 0, v.unk_id = 1, v.bos_id = 2, v.sep_id = 3;
  v.add_bos = true;
  return v;
}

TEST(WpmHandmade, NormalizesSplitsAndMatchesLongestPieces) {
  auto tok = Tokenizer::from_vocabulary(wpm_vocab());
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  // Lowercase, accents stripped (café → cafe), punctuation split, CJK split, [UNK] for xyz.
  EXPECT_EQ(tok->encode("Hello, WORLD! unaffable  CAF\xC3\x89 xyz \xE4\xB8\x96", true, false),
            (std::vector<int32_t>{2, 4, 11, 5, 9, 6, 7, 8, 10, 1, 12, 3}));
  EXPECT_EQ(tok->encode("hello", false, false), (std::vector<int32_t>{4}));
  // A word only partly covered is [UNK] as a whole.
  EXPECT_EQ(tok->encode("unaffablex", false, false), (std::vector<int32_t>{1}));
  EXPECT_EQ(tok->encode("", true, false), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(tok->decode({2, 4, 5, 3}), "hello world");
  EXPECT_EQ(tok->decode({2, 6, 7, 8, 3}), "unaffable");
}

}  // namespace
}  // namespace hearth

namespace hearth {
namespace {

TEST(EmptyTokenizer, DefaultConstructedIsSafe) {
  Tokenizer empty;
  EXPECT_EQ(empty.n_vocab(), 0);
  EXPECT_TRUE(empty.encode("hello <s>", true, true).empty());
  EXPECT_EQ(empty.token_to_piece(0, true), "");
  EXPECT_EQ(empty.decode({1, 2, 3}), "");
  EXPECT_FALSE(empty.is_eog(0));
}

}  // namespace
}  // namespace hearth
