// Tool definitions and tool_choice of every dialect, checked in one place. The dialects spell a
// function tool three ways (OpenAI chat and ollama: {"type": "function", "function": {name,
// description, parameters}}; the Responses API: {"type": "function", name, description,
// parameters}; Anthropic: {name, description, input_schema}) and tool_choice three ways. Each
// spelling is read into the chat template's form (OpenAI chat's) and one ToolChoice, and one
// function checks what they share: every tool has a name, a forced choice has tools to choose
// from, and a named choice names one of them. Without this a tool with no function, or
// tool_choice: 5, was accepted and silently did nothing.
#pragma once

#include <string>

#include "api/json_fields.h"

namespace hearth::api {

enum class ToolSpelling {
  kChat,       // OpenAI /v1/chat/completions: tools + tool_choice
  kOllama,     // ollama /api/chat: tools as OpenAI chat spells them, no tool_choice
  kResponses,  // OpenAI /v1/responses
  kAnthropic,  // Anthropic /v1/messages
};

// The tools of `body` in the chat template's form (an array, empty when there are none or when
// tool_choice is "none"), after checking every tool definition and the tool_choice. Errors are
// kInvalidArgument, or kUnsupported for tool types Hearth cannot offer (hosted tools, custom
// tools), and name the field: "'tools[0].function' is required".
Result<Json> read_tools(const Json& body, ToolSpelling spelling);

}  // namespace hearth::api
