// Checks the fast SentencePiece path (cut into independent stretches, cached, heap-ordered)
// against a direct O(n^2) statement of the algorithm: repeatedly merge the adjacent pair whose
// joined piece is a token with the highest score (leftmost on ties), then map pieces that are
// not tokens to byte tokens. Random texts over a mixed alphabet, full 32k Llama vocabulary.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_codec.h"

namespace hearth {
namespace {

std::vector<int32_t> naive_spm(const Vocabulary& v, const std::string& raw) {
  std::string text;
  for (char c : " " + raw) {
    if (c == ' ') text += "\xE2\x96\x81";
    else text.push_back(c);
  }
  std::vector<std::string> pieces;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = std::min(utf8::sequence_length(static_cast<uint8_t>(text[pos])), text.size() - pos);
    pieces.push_back(text.substr(pos, n));
    pos += n;
  }
  while (true) {
    int best = -1;
    float best_score = 0;
    for (size_t i = 0; i + 1 < pieces.size(); ++i) {
      const int32_t id = v.find(pieces[i] + pieces[i + 1]);
      if (id == kNoToken) continue;
      if (best < 0 || v.score_of(id) > best_score) {
        best = static_cast<int>(i);
        best_score = v.score_of(id);
      }
    }
    if (best < 0) break;
    pieces[static_cast<size_t>(best)] += pieces[static_cast<size_t>(best) + 1];
    pieces.erase(pieces.begin() + best + 1);
  }
  std::vector<int32_t> ids;
  for (const std::string& p : pieces) {
    const int32_t id = v.find(p);
    if (id != kNoToken) {
      ids.push_back(id);
      continue;
    }
    for (unsigned char c : p) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "<0x%02X>", c);
      ids.push_back(v.find(buf));
    }
  }
  return ids;
}

TEST(SpmReference, FastPathMatchesDirectAlgorithm) {
  const std::string path = test::vocab_dir() + "/ggml-vocab-llama-spm.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto file = gguf::File::open(path);
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::from_gguf(file.value());
  ASSERT_TRUE(tok.ok());
  const std::vector<std::string> alphabet = {"a", "e", "t", "h", "n", "s", " ", "  ", "\n", "1", "9", ".", "'",
                                             "ing", "the", "\xC3\xA9", "\xE4\xB8\x96", "\xE7\x95\x8C",
                                             "\xF0\x9F\xA6\x99", "\xFF", "\xE2\x96\x81", "Th", "(", ")"};
  std::mt19937 rng(42);
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const size_t n = 1 + rng() % 40;
    for (size_t i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
    ASSERT_EQ(tok->encode(text, false, false), naive_spm(tok->vocabulary(), text)) << "text: " << text;
  }
}

TEST(SpecialTokens, Phi3TokensSwallowFollowingWhitespace) {
  // Phi-3's added tokens are rstrip in its tokenizer.json; the reference applies that by model
  // name, so "<|user|>\nHi" tokenizes as "<|user|>Hi" when specials are parsed.
  const std::string path = test::models_dir() + "/random/phi3-F32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto file = gguf::File::open(path);
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::from_gguf(file.value());
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->encode("<|user|>\n  Hi", false, true), tok->encode("<|user|>Hi", false, true));
  EXPECT_NE(tok->encode("<|user|>\n  Hi", false, false), tok->encode("<|user|>Hi", false, false));
}

TEST(Utf8Codec, DecodeSanitizeAndTails) {
  size_t n = 0;
  EXPECT_EQ(utf8::decode_one("\xE2\x82\xAC", 0, &n), 0x20ACu);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(utf8::decode_one("\xC0\x80", 0, &n), utf8::kReplacementChar);  // overlong
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(utf8::decode_one("\xED\xA0\x80", 0, &n), utf8::kReplacementChar);  // surrogate
  EXPECT_EQ(utf8::sanitize("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8::sanitize("ok \xF0\x9F\x99\x82"), "ok \xF0\x9F\x99\x82");
  EXPECT_EQ(utf8::incomplete_tail_length("ab\xF0\x9F"), 2u);
  EXPECT_EQ(utf8::incomplete_tail_length("ab\xF0\x9F\x99\x82"), 0u);
  EXPECT_EQ(utf8::incomplete_tail_length("ab\xE2"), 1u);
  EXPECT_EQ(utf8::incomplete_tail_length("\x80\x80"), 0u);
}

}  // namespace
}  // namespace hearth
