// How much a thinking model thinks, as each dialect asks for it, written into the chat body in
// one form: "enable_thinking" (false turns a thinking template's reasoning off),
// "reasoning_effort" (a level a template may read: gpt-oss's low/medium/high) and
// "thinking_budget" (reasoning tokens before the engine closes the reasoning itself). OpenAI
// spells the level reasoning_effort (chat) or reasoning.effort (Responses), ollama think:
// true/false/"low"/"medium"/"high", Anthropic thinking: {type: enabled, budget_tokens}.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "api/json_fields.h"

namespace hearth::api {

// An OpenAI effort level: "none" turns thinking off; any other level turns it on and is passed on.
Status put_reasoning_effort(const std::optional<std::string>& effort, std::string_view field, Json& chat);
// An integer budget of 0 or more at `key` of `body` ("'thinking_budget' must be ..." otherwise).
Status put_thinking_budget(const Json& body, std::string_view key, Json& chat, std::string_view where = "");
// ollama's think: a boolean or one of "low", "medium", "high".
Status put_ollama_think(const Json& body, Json& chat);

}  // namespace hearth::api
