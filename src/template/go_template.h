// ollama's /api/generate accepts a `template` written in Go's text/template language
// ({{ .System }}, {{ .Prompt }}, {{ if .System }}...{{ end }}). This renders the subset that
// single-turn prompt templates use: field substitution of .System, .Prompt, .Response and
// .Suffix, if/else/end on those fields (nested), comments, and the {{- -}} whitespace trims.
// Anything else (range over .Messages, functions, pipelines) is a clear error, not a guess.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace hearth {

// `fields` maps "System", "Prompt", ... to their values; an absent field is empty.
Result<std::string> render_go_template(std::string_view source, const std::map<std::string, std::string>& fields);

// One chat message for render_go_template_chat.
struct GoTemplateMessage {
  std::string role;  // system, user, assistant (others count as user text)
  std::string content;
};

// A conversation through a single-turn template, the way ollama applied templates written
// before .Messages existed: system messages gather into the .System of their turn, user text
// into .Prompt, and each assistant message closes a turn rendered with it as .Response; the
// last turn is rendered up to where its .Response would start (the model continues there).
Result<std::string> render_go_template_chat(std::string_view source, const std::vector<GoTemplateMessage>& messages);

}  // namespace hearth
