// The parsed form of a GBNF grammar (the grammar notation llama.cpp documents), before it is
// compiled for matching: named rules whose bodies are expression trees over code points.
// Offsets point into the grammar text so later checks (undefined rules) can say where.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sampler/grammar/utf8_ranges.h"

namespace hearth::sampler {

struct GbnfExpr {
  enum class Kind {
    kSequence,     // children in order (an empty sequence matches the empty string)
    kAlternation,  // one of children
    kLiteral,      // the code points of `text`
    kClass,        // one code point in `ranges` (or not in them, when negated)
    kAny,          // any one code point (`.`)
    kRuleRef,      // the rule `name`
    kRepeat,       // children[0] between min and max times (max == kUnbounded: no upper bound)
  };
  static constexpr uint32_t kUnbounded = UINT32_MAX;

  Kind kind = Kind::kSequence;
  std::vector<GbnfExpr> children;
  std::u32string text;
  std::vector<CodePointRange> ranges;
  bool negated = false;
  std::string name;
  uint32_t min = 0;
  uint32_t max = 0;
  size_t offset = 0;  // byte offset of the expression in the grammar text
};

struct GbnfRule {
  std::string name;
  GbnfExpr body;
  size_t offset = 0;
};

struct GbnfAst {
  std::vector<GbnfRule> rules;
};

}  // namespace hearth::sampler
