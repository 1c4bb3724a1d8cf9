// The grammar mask on real vocabularies (SentencePiece 32k, byte-level BPE 50k): the trie walk
// must allow exactly the tokens whose bytes the matcher accepts one token at a time, at many
// points of a JSON document, including inside strings where almost every token fits and
// after a token that ended in the middle of a UTF-8 character.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "sampler/grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

namespace hearth::sampler {
namespace {

const char* kJsonGrammar = R"(root   ::= "{" ws members? "}" ws
members ::= pair ("," ws pair)*
pair   ::= string ":" ws value
value  ::= "{" ws members? "}" ws | "[" ws (value ("," ws value)*)? "]" ws | string | number ws | ("true" | "false" | "null") ws
string ::= "\"" ([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))* "\"" ws
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
ws     ::= [ \t\n]{0,4}
)";

struct Vocab {
  std::vector<std::string> pieces;
  std::shared_ptr<const TokenTrie> trie;
};

Vocab load_vocab(const std::string& path) {
  auto file = gguf::File::open(path);
  EXPECT_TRUE(file.ok()) << file.error().message;
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.error().message;
  Vocab v;
  std::vector<uint8_t> eog;
  for (int32_t i = 0; i < tok->n_vocab(); ++i) {
    v.pieces.push_back(tok->token_to_piece(i, false));
    eog.push_back(tok->is_eog(i) ? 1 : 0);
  }
  v.trie = TokenTrie::build(v.pieces, eog);
  return v;
}

void expect_mask_matches_one_by_one(const std::string& vocab_file) {
  const std::string path = test::vocab_dir() + "/" + vocab_file;
  HEARTH_REQUIRE_FILE(path);
  const Vocab v = load_vocab(path);
  auto g = compile_gbnf(kJsonGrammar);
  ASSERT_TRUE(g.ok()) << g.error().message;
  GrammarMatcher m(*g);
  GrammarMatcher probe(*g);
  // Split into pieces the way tokens might: through keys, inside strings, before numbers, and
  // once through the middle of "é" (C3 | A9).
  const std::vector<std::string> steps = {"{", "\"na", "me\": \"Ad", "a L\xC3", "\xA9", "o\",", " \"tags\": [",
                                          "1, -2.5e3", ", true", "]}"};
  std::vector<uint64_t> bits((v.trie->n_vocab() + 63) / 64);
  std::string text;
  for (size_t s = 0; s <= steps.size(); ++s) {
    m.fill_mask(*v.trie, bits);
    size_t n_allowed = 0;
    for (size_t id = 0; id < v.pieces.size(); ++id) {
      bool want;
      if (v.trie->is_eog(static_cast<int32_t>(id))) {
        want = m.is_complete();
      } else if (v.pieces[id].empty()) {
        want = false;
      } else {
        probe.reset();
        want = probe.accept_bytes(text) && probe.can_accept_bytes(v.pieces[id]);
      }
      const bool got = (bits[id >> 6] >> (id & 63)) & 1u;
      ASSERT_EQ(got, want) << vocab_file << ": token " << id << " '" << v.pieces[id] << "' after '" << text << "'";
      n_allowed += got ? 1 : 0;
    }
    EXPECT_GT(n_allowed, 0u) << "after '" << text << "'";
    if (s == steps.size()) {
      EXPECT_TRUE(m.is_complete());
      break;
    }
    ASSERT_TRUE(m.accept_bytes(steps[s])) << steps[s];
    text += steps[s];
  }
}

TEST(GrammarVocab, MaskMatchesTokenByTokenSentencePiece) { expect_mask_matches_one_by_one("ggml-vocab-llama-spm.gguf"); }

TEST(GrammarVocab, MaskMatchesTokenByTokenByteLevelBpe) { expect_mask_matches_one_by_one("ggml-vocab-gpt-2.gguf"); }

}  // namespace
}  // namespace hearth::sampler
