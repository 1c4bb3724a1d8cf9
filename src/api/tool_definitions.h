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
  kOllama,     // ollama /api/chat: tools as OpenAI chat spells them; tool_choice (a Hearth extension) too
  kResponses,  // OpenAI /v1/responses
  kAnthropic,  // Anthropic /v1/messages
};

// Checks every tool definition and the tool_choice of `body` and writes them into the chat body
// `chat` in the chat template's form: "tools" (when any may be called; none when tool_choice is
// "none"), "tool_choice" for a forced choice ("required" or {"name": ...}), and
// "parallel_tool_calls": false when the request allows one call only. Errors are
// kInvalidArgument, or kUnsupported for tool types Hearth cannot offer (hosted tools, custom
// tools), and name the field: "'tools[0].function' is required".
Status put_tools(const Json& body, ToolSpelling spelling, Json& chat);

}  // namespace hearth::api
