// Turns template source into one token stream: literal text between tags, and the expression
// tokens inside {{ }} and {% %}. Whitespace control ({%- -%}, trim_blocks, lstrip_blocks),
// comments and {% raw %} blocks are resolved here, so the parser sees only what matters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hearth::jinja {

enum class TokenKind {
  kText,        // literal template text (already whitespace-adjusted)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword
  kString,      // string literal, escapes resolved
  kInt,
  kFloat,
  kOperator,    // + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
  kEof,
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string text;
  int line = 1;
};

struct LexOptions {
  bool trim_blocks = true;    // drop the first newline after a block tag
  bool lstrip_blocks = true;  // drop spaces/tabs before a block tag at the start of a line
};

// Tokenizes `source`; throws JinjaError (caught at the module boundary) on malformed input.
std::vector<Token> lex_template(std::string_view source, const LexOptions& options);

}  // namespace hearth::jinja
