// Reads GBNF grammar text into a GbnfAst. The notation is the one llama.cpp documents:
//   name ::= alternatives          one rule per line; a rule continues on the next line
//                                  inside parentheses, after `|` or `::=`, or when the next
//                                  line starts with `|`
//   "text"  [a-z0-9_]  [^"\\]  .   literals, classes (ranges, negation), any code point
//   ( ... )  a | b  x* x+ x?       grouping, alternation, repetition
//   x{m}  x{m,}  x{m,n}  x{,n}     counted repetition
//   # comment                      to the end of the line
// Escapes in literals and classes: \n \r \t \\ \" \' \[ \] \- \^ \/ \xHH \uHHHH \UHHHHHHHH.
// Rule names are letters, digits, '-' and '_'. Token references (<...>) are not supported.
// Errors never abort: they are kInvalidArgument values naming the line, column and reason.
#pragma once

#include <string>
#include <string_view>

#include "sampler/grammar/gbnf_ast.h"
#include "util/result.h"

namespace hearth::sampler {

Result<GbnfAst> parse_gbnf(std::string_view text);

// "grammar: line L, column C: reason" for a byte offset into `text`.
Error gbnf_error(std::string_view text, size_t offset, const std::string& reason);

}  // namespace hearth::sampler
