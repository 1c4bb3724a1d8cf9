// UTF-8 helpers the tokenizers share: sequence lengths by lead byte, tolerant decoding (a bad
// byte becomes U+FFFD and decoding moves on by one byte, as the reference tokenizer does),
// encoding, and the length of a trailing incomplete sequence for the streaming detokenizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::utf8 {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length the lead byte announces (1 for ASCII and for stray continuation bytes, as llama.cpp's
// table does: the high nibble picks 1, 2, 3 or 4).
inline size_t sequence_length(uint8_t lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

// Decodes one code point at text[pos]; sets *consumed. Invalid or truncated sequences, overlong
// forms and surrogates decode as U+FFFD consuming one byte.
uint32_t decode_one(std::string_view text, size_t pos, size_t* consumed);

// Appends the UTF-8 encoding of cp (values above U+10FFFF and surrogates become U+FFFD).
void append(std::string& out, uint32_t cp);

// Every code point of text, bad bytes as U+FFFD.
std::vector<uint32_t> decode_all(std::string_view text);

// text with each invalid byte replaced by U+FFFD; returns text unchanged when already valid.
std::string sanitize(std::string_view text);

// Number of bytes at the end of text that begin a valid but incomplete sequence (0..3).
size_t incomplete_tail_length(std::string_view text);

}  // namespace hearth::utf8
