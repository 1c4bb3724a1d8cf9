// A GBNF grammar compiled for matching bytes: rules whose alternatives are flat sequences of
// symbols, each symbol a set of bytes (one byte of input) or a reference to a rule. Literals
// and character classes have been turned into the UTF-8 byte patterns of their code points,
// repetitions into helper rules. Compilation checks what would make matching loop or stall:
// undefined rules, left recursion (a rule reaching itself before any input) and alternatives
// that can never finish, which are removed (the grammar's language does not change), so every
// partial match the matcher keeps can still be completed. Immutable; shared across requests.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace hearth::sampler {

using ByteSet = std::array<uint64_t, 4>;

inline bool byte_set_has(const ByteSet& s, uint8_t b) { return (s[b >> 6] >> (b & 63)) & 1u; }

struct CompiledGrammar {
  // A symbol is one uint32: the kind in the top two bits, the byte-set or rule index below.
  enum class SymbolKind : uint32_t { kEnd = 0, kBytes = 1, kRule = 2 };
  static constexpr uint32_t kKindShift = 30;
  static constexpr uint32_t kValueMask = (1u << kKindShift) - 1;
  static SymbolKind kind_of(uint32_t sym) { return static_cast<SymbolKind>(sym >> kKindShift); }
  static uint32_t value_of(uint32_t sym) { return sym & kValueMask; }
  static uint32_t make_symbol(SymbolKind kind, uint32_t value) {
    return (static_cast<uint32_t>(kind) << kKindShift) | value;
  }

  // Every alternative's symbols, each alternative terminated by a kEnd symbol.
  std::vector<uint32_t> symbols;
  // Index into `symbols` of each alternative's first symbol.
  std::vector<uint32_t> alt_begin;
  // Rule r's alternatives are alt_begin[rule_alts[r]] .. alt_begin[rule_alts[r + 1] - 1].
  std::vector<uint32_t> rule_alts;
  std::vector<ByteSet> byte_sets;
  // Names for messages: the grammar's own names, or "<rule>-<n>" for helper rules.
  std::vector<std::string> rule_names;
  uint32_t root = 0;

  size_t n_rules() const { return rule_names.size(); }
};

// Parses and compiles GBNF text (see gbnf_parser.h for the notation); the start rule is
// `root`. Errors are kInvalidArgument with the line and column, or naming the rule at fault.
Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view text);

}  // namespace hearth::sampler
