// Behaviour on the real vocabularies: lossless round trips (BPE always, SPM modulo the added
// leading space), special-token parsing on vs off (Phi-3), the streaming detokenizer with
// characters split over byte tokens, and garbage input that must not crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_codec.h"

namespace hearth {
namespace {

Result<Tokenizer> load(const std::string& path) {
  auto file = gguf::File::open(path);
  if (!file.ok()) return file.error();
  return Tokenizer::from_gguf(file.value());
}

const std::vector<std::string>& sample_texts() {
  static const std::vector<std::string> texts = {
      "Hello world",
      " Hello   world\n\n\tand\ttabs  ",
      "ied 4 \xC2\xBD months, \xC3\x84pfel",
      "int main() { return a[i] * 2; }  // comment\n    indented",
      "\xE7\x99\xBE\xE5\xBA\xA6\xE4\xB8\x80\xE4\xB8\x8B \xF0\x9F\xA6\x99.cpp \xF0\x9F\x98\x80\xE2\x80\x8D\xF0\x9F\x91\x8D",
      "C\xE1\xBB\xAD" "a Vi\xE1\xBB\x87t 333333333 !!!!!! 'll 're ' era",
      "\xE1\x9E\x80\xE1\x9E\xB6\xE1\x9E\x93\xE1\x9F\x8B\xE1\x9E\x8F\xE1\x9F\x82",
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",
  };
  return texts;
}

class BpeRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeRoundTrip, DecodeOfEncodeIsIdentity) {
  const std::string path = GetParam()[0] == 'r' ? test::models_dir() + "/" + GetParam()
                                                : test::vocab_dir() + "/" + GetParam();
  HEARTH_REQUIRE_FILE(path);
  auto tok = load(path);
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  for (const std::string& text : sample_texts()) {
    EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text);
    EXPECT_EQ(tok->decode(tok->encode(text, true, false)), text);  // BOS/EOS decode to ""
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, BpeRoundTrip,
                         ::testing::Values("ggml-vocab-gpt-2.gguf", "ggml-vocab-deepseek-llm.gguf",
                                           "ggml-vocab-falcon.gguf", "random/qwen2-F32.gguf"));

TEST(SpmRoundTrip, DecodeOfEncodeIsIdentityModuloLeadingSpace) {
  for (const std::string& path :
       {test::vocab_dir() + "/ggml-vocab-llama-spm.gguf", test::models_dir() + "/llama2-tiny-random-f16.gguf",
        test::models_dir() + "/random/llama-F32.gguf"}) {
    HEARTH_REQUIRE_FILE(path);
    auto tok = load(path);
    ASSERT_TRUE(tok.ok()) << tok.error().to_string();
    for (const std::string& text : sample_texts()) {
      EXPECT_EQ(tok->decode(tok->encode(text, true, false)), text) << path;
    }
  }
}

TEST(SpecialTokens, Phi3AssistantParsedOnlyWhenAsked) {
  const std::string path = test::models_dir() + "/random/phi3-F32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto tok = load(path);
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  const std::string text = "<|user|>\nHi<|end|>\n<|assistant|>";
  const auto on = tok->encode(text, true, true);
  ASSERT_GE(on.size(), 5u);
  EXPECT_EQ(on.front(), 1);      // BOS
  EXPECT_EQ(on[1], 1194);        // <|user|>
  EXPECT_EQ(on.back(), 1185);    // <|assistant|>
  EXPECT_NE(std::find(on.begin(), on.end(), 1191), on.end());  // <|end|>
  const auto off = tok->encode(text, true, false);
  for (int32_t id : off) EXPECT_LT(id, 1184) << "control token matched without parse_special";
  EXPECT_EQ(tok->decode(off), text);
  EXPECT_EQ(tok->token_to_piece(1185, true), "<|assistant|>");
  EXPECT_EQ(tok->token_to_piece(1185, false), "");
  EXPECT_TRUE(tok->is_eog(1184));  // <|endoftext|>
  EXPECT_TRUE(tok->is_eog(1191));  // <|end|>
  EXPECT_FALSE(tok->is_eog(1185));
}

TEST(StreamingDetokenizer, HoldsSplitCharactersUntilComplete) {
  const std::string path = test::vocab_dir() + "/ggml-vocab-llama-spm.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto tok = load(path);
  ASSERT_TRUE(tok.ok());
  // 🦙 (F0 9F A6 99) is not in the vocabulary: it becomes four byte tokens.
  const std::string text = "llama \xF0\x9F\xA6\x99 and \xE1\x9E\x80";
  const auto ids = tok->encode(text, true, false);
  StreamingDetokenizer stream(tok.value());
  std::string streamed;
  size_t byte_tokens = 0;
  for (int32_t id : ids) {
    const std::string part = stream.push(id);
    if (tok->vocabulary().type_of(id) == TokenType::kByte) ++byte_tokens;
    // Never half a character: every emitted chunk is complete UTF-8 on its own.
    EXPECT_EQ(utf8::incomplete_tail_length(part), 0u) << "chunk ends mid-character";
    if (!part.empty()) EXPECT_NE(static_cast<uint8_t>(part[0]) & 0xC0, 0x80) << "chunk starts mid-character";
    streamed += part;
  }
  streamed += stream.flush();
  EXPECT_GE(byte_tokens, 4u);
  EXPECT_EQ(streamed, text);
  EXPECT_EQ(streamed, tok->decode(ids));
}

TEST(StreamingDetokenizer, FlushesAnIncompleteTail) {
  const std::string path = test::vocab_dir() + "/ggml-vocab-llama-spm.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto tok = load(path);
  ASSERT_TRUE(tok.ok());
  const int32_t f0 = tok->vocabulary().find("<0xF0>");
  const int32_t x9f = tok->vocabulary().find("<0x9F>");
  ASSERT_GE(f0, 0);
  StreamingDetokenizer stream(tok.value());
  EXPECT_EQ(stream.push(f0), "");
  EXPECT_EQ(stream.push(x9f), "");
  EXPECT_EQ(stream.pending_bytes(), 2u);
  EXPECT_EQ(stream.flush(), "\xF0\x9F");
  EXPECT_EQ(stream.pending_bytes(), 0u);
}

TEST(StreamingDetokenizer, BpeBytesSplitAcrossTokens) {
  const std::string path = test::vocab_dir() + "/ggml-vocab-gpt-2.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto tok = load(path);
  ASSERT_TRUE(tok.ok());
  const std::string text = "\xE1\x9E\x80\xE1\x9E\xB6 \xF0\x9F\x98\x80\xE2\x80\x8D\xF0\x9F\x91\x8D end";
  const auto ids = tok->encode(text, false, false);
  StreamingDetokenizer stream(tok.value());
  std::string streamed;
  for (int32_t id : ids) {
    const std::string part = stream.push(id);
    EXPECT_EQ(utf8::incomplete_tail_length(part), 0u);
    streamed += part;
  }
  streamed += stream.flush();
  EXPECT_EQ(streamed, text);
}

TEST(Robustness, RandomBytesNeverCrash) {
  std::vector<std::string> paths = {test::vocab_dir() + "/ggml-vocab-llama-spm.gguf",
                                    test::vocab_dir() + "/ggml-vocab-gpt-2.gguf",
                                    test::vocab_dir() + "/ggml-vocab-bert-bge.gguf",
                                    test::vocab_dir() + "/ggml-vocab-deepseek-llm.gguf"};
  std::mt19937 rng(1234);
  for (const std::string& path : paths) {
    HEARTH_REQUIRE_FILE(path);
    auto tok = load(path);
    ASSERT_TRUE(tok.ok());
    for (int round = 0; round < 50; ++round) {
      std::string text(static_cast<size_t>(rng() % 200), '\0');
      for (char& c : text) c = static_cast<char>(rng() & 0xFF);
      for (bool special : {false, true}) {
        const auto ids = tok->encode(text, special, special);
        for (int32_t id : ids) {
          ASSERT_GE(id, 0);
          ASSERT_LT(id, tok->n_vocab());
        }
        (void)tok->decode(ids, special);
      }
    }
  }
}

}  // namespace
}  // namespace hearth
