// Builds the variables a chat template sees (messages, tools, add_generation_prompt, bos_token,
// eos_token) from an OpenAI-style chat request body, normalising what templates cannot handle:
// content given as an array of parts is joined into one string, and tool-call arguments sent as
// a JSON string are parsed into an object (kept as the string when they do not parse).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace hearth {

struct ChatContextOptions {
  std::string bos_token = "<s>";
  std::string eos_token = "</s>";
  bool default_add_generation_prompt = true;  // when the request does not say
  bool parse_tool_arguments = true;           // turn JSON-string tool-call arguments into objects
};

// Returns the template context, or an error naming the malformed field of the request.
Result<nlohmann::ordered_json> build_chat_context(const nlohmann::ordered_json& request,
                                                  const ChatContextOptions& options = {});

}  // namespace hearth
