// ollama's /api/generate accepts a `template` written in Go's text/template language
// ({{ .System }}, {{ .Prompt }}, {{ if .System }}...{{ end }}). This renders the subset that
// single-turn prompt templates use: field substitution of .System, .Prompt, .Response and
// .Suffix, if/else/end on those fields (nested), comments, and the {{- -}} whitespace trims.
// Anything else (range over .Messages, functions, pipelines) is a clear error, not a guess.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "util/result.h"

namespace hearth {

// `fields` maps "System", "Prompt", ... to their values; an absent field is empty.
Result<std::string> render_go_template(std::string_view source, const std::map<std::string, std::string>& fields);

}  // namespace hearth
