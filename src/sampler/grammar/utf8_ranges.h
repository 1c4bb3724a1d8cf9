// Code point ranges as UTF-8 byte patterns. The grammar matcher works on bytes (tokens end in
// the middle of characters), so each character class of a grammar is compiled into the byte
// sequences that encode exactly its code points: [a-z] is one byte range, [^"] is a handful of
// 1- to 4-byte patterns. Surrogates (U+D800..U+DFFF) have no UTF-8 encoding and are never part
// of a class.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace hearth::sampler {

struct CodePointRange {
  char32_t lo;
  char32_t hi;  // inclusive
};

constexpr char32_t kMaxCodePoint = 0x10FFFF;

// One byte pattern: byte i of an encoding lies in [lo[i], hi[i]], for i < length.
struct Utf8Pattern {
  uint8_t length = 0;
  std::array<uint8_t, 4> lo{};
  std::array<uint8_t, 4> hi{};
};

// Sorts and merges ranges, drops surrogates and anything above U+10FFFF.
std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges);
// The code points of [0, U+10FFFF] (without surrogates) not in `ranges` (normalized input).
std::vector<CodePointRange> complement_ranges(const std::vector<CodePointRange>& ranges);
// Byte patterns whose union is exactly the UTF-8 encodings of the (normalized) ranges; no two
// patterns match the same byte sequence.
std::vector<Utf8Pattern> utf8_patterns(const std::vector<CodePointRange>& ranges);
// Appends the UTF-8 encoding of cp (a valid scalar value) to out.
void append_utf8(char32_t cp, std::vector<uint8_t>& out);

}  // namespace hearth::sampler
