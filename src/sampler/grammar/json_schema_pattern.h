// A JSON Schema `pattern` (an ECMA-262 regular expression) → a GBNF expression for the content
// of a JSON string that the pattern matches, for the simple regexes schemas use: literals,
// escapes (\d \w \s \D \W \S and escaped punctuation), classes with ranges and negation, `.`,
// groups ((...) and (?:...)), `|`, and the quantifiers * + ? {m} {m,} {m,n} (lazy forms too).
// Without `^` / `$` the match may be surrounded by any characters, as the keyword means.
// Characters JSON must escape are produced in their escaped form (`\"`, `\\`); classes that
// would include control characters leave them out, \s is a space, `.` excludes escapes other
// than `\"` and `\\`: the language is a subset of the pattern's strings. Anything else
// (lookaround, backreferences, named groups, \b, Unicode property classes, ^/$ inside) is an
// error that says what, for the caller to report as an unsupported pattern.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace hearth::sampler {

// `json_char_rule` names the grammar's rule for one JSON string character (used for the
// unanchored ends). Errors are kUnsupported with the reason.
Result<std::string> json_pattern_to_gbnf(std::string_view pattern, const std::string& json_char_rule);

}  // namespace hearth::sampler
