// The pre-tokenizer regex sequences: every supported tokenizer.ggml.pre compiles, pieces cover
// the input exactly, and the splits that tell the variants apart (digit grouping, contractions,
// newlines, CJK runs) come out as the reference splits them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"

namespace hearth {
namespace {

std::vector<std::string> split(std::string_view pre, const std::string& text) {
  auto pt = PreTokenizer::for_name(pre);
  EXPECT_TRUE(pt.ok()) << (pt.ok() ? "" : pt.error().to_string());
  if (!pt.ok()) return {};
  std::vector<std::string> out;
  size_t expect_start = 0;
  for (const auto& [start, len] : pt->split(text)) {
    EXPECT_EQ(start, expect_start) << "pieces must be contiguous";
    expect_start = start + len;
    out.push_back(text.substr(start, len));
  }
  EXPECT_EQ(expect_start, text.size());
  return out;
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, EveryKnownVariantCompilesAndCoversInput) {
  const std::string text = "Hello World's 12345 \xE4\xB8\x96\xE7\x95\x8C!!  \n\n  x\xC2\xBD";
  for (const char* pre : {"default", "", "gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder", "falcon",
                          "starcoder", "refact", "mpt", "gpt-neox", "dbrx", "smaug-bpe", "stablelm2", "olmo",
                          "command-r", "smollm"}) {
    SCOPED_TRACE(pre);
    EXPECT_FALSE(split(pre, text).empty());
  }
  EXPECT_FALSE(PreTokenizer::for_name("not-a-pre").ok());
}

TEST(PreTokenizer, Gpt2Split) {
  EXPECT_EQ(split("gpt-2", "Hello world's   test 123"),
            (Pieces{"Hello", " world", "'s", "  ", " test", " 123"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndKeepsNewlines) {
  EXPECT_EQ(split("llama-bpe", "1234567 I'M\n\nok"), (Pieces{"123", "456", "7", " I", "'M", "\n\n", "ok"}));
}

TEST(PreTokenizer, Qwen2SplitsEveryDigit) {
  EXPECT_EQ(split("qwen2", "x 2024"), (Pieces{"x", " ", "2", "0", "2", "4"}));
}

TEST(PreTokenizer, StarcoderSplitsDigitsFirst) {
  EXPECT_EQ(split("starcoder", "a12 b"), (Pieces{"a", "1", "2", " b"}));
}

TEST(PreTokenizer, FalconGroupsPunctuationAndDigitTriples) {
  EXPECT_EQ(split("falcon", "hi!!! 12345"), (Pieces{"hi", "!!!", " ", "123", "45"}));
}

TEST(PreTokenizer, DeepseekCoderSplitsCjkRunsAndDigits) {
  EXPECT_EQ(split("deepseek-coder", "ab\n12"), (Pieces{"ab", "\n", "1", "2"}));
}

TEST(PreTokenizer, DeepseekLlmLetterClassIsExact) {
  // The letter class holds U+212A KELVIN SIGN as a range start (U+212A-U+212D). Written as
  // the normalized letter 'K' that range would swallow '[' and keep "b[" together.
  EXPECT_EQ(split("deepseek-llm", "b["), (Pieces{"b", "["}));
  // The CJK step's range U+0800-U+4E00 also takes the Kelvin sign out of " K".
  EXPECT_EQ(split("deepseek-llm", " \xE2\x84\xAA"), (Pieces{" ", "\xE2\x84\xAA"}));
}

}  // namespace
}  // namespace hearth
