// The three subword algorithms behind Tokenizer, each working on one piece of raw text (special
// tokens are already cut out): SentencePiece score merges, byte-level BPE rank merges, and
// WordPiece longest-match. Internal to the tokenizer module.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocabulary.h"
#include "util/result.h"

namespace hearth::detail {

// SentencePiece (llama.cpp's SPM): merges the adjacent pair whose joined piece has the best
// score first; pieces that are not tokens fall back to <0xNN> byte tokens (or unk when the
// vocabulary has none).
class SpmModel {
 public:
  static SpmModel build(const Vocabulary& vocab);
  // `text` already has spaces replaced by U+2581.
  void encode(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out) const;

 private:
  // Every pair of adjacent characters that occurs inside some token. Between two characters
  // that form no such pair no merge can ever happen, so the text is cut there and each part
  // merged on its own: the same result, with small queues (fast on megabytes of text).
  std::unordered_set<uint64_t> joinable_pairs_;
  std::array<int32_t, 256> byte_token_{};
};

// Byte-level BPE: GPT-2's byte↔unicode alphabet, merge ranks, the regex pre-tokenizer.
class BpeModel {
 public:
  static Result<BpeModel> build(const Vocabulary& vocab);
  // Encodes raw text (any bytes; invalid UTF-8 is read as U+FFFD like the reference).
  void encode(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out) const;
  // Token text in the byte alphabet → the raw bytes it stands for.
  std::string decode_text(std::string_view token_text) const;

 private:
  void encode_word(const Vocabulary& vocab, std::string_view word, std::vector<int32_t>& out) const;
  struct MergeResult {
    int32_t rank;
    int32_t merged_id;
  };
  PreTokenizer pre_;
  std::unordered_map<uint64_t, MergeResult> merges_;  // (left id << 32 | right id) → rank, result
  std::array<std::string, 256> byte_text_;            // byte → its alphabet character (UTF-8)
  std::array<int32_t, 256> byte_token_{};             // byte → token id of that character, or -1
  std::unordered_map<uint32_t, uint8_t> char_to_byte_;
};

// WordPiece (BERT): NFD, accent stripping, lowercasing, whitespace/punctuation/CJK split, then
// greedy longest match of "▁word" pieces; a word with no full cover becomes [UNK].
void wpm_encode(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out);

}  // namespace hearth::detail
