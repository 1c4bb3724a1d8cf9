// The Modelfile: ollama's recipe for a model. Commands (case-insensitive), one per line:
//   FROM <model name | path to a .gguf | sha256:<digest>>     (required)
//   PARAMETER <name> <value>      (see model_parameters.h; `stop` may repeat)
//   TEMPLATE <text>   SYSTEM <text>   LICENSE <text> (may repeat)   ADAPTER <path | digest>
//   MESSAGE <system|user|assistant> <text>   REQUIRES <ollama version>
// A value is the rest of the line, a "quoted string" (\" and \\ escapes), or a """triple-quoted
// string""" that may span lines. Lines starting with # are comments. Every error names its line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace hearth::store {

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

struct Modelfile {
  std::string from;
  std::vector<std::string> adapters;
  // Where FROM and each ADAPTER stand (1-based), for a client's errors about the files they
  // name; 0 in a Modelfile not read from text. Not printed.
  int from_line = 0;
  std::vector<int> adapter_lines;
  nlohmann::json parameters = nlohmann::json::object();  // typed values; "stop" is a list
  std::optional<std::string> template_text;
  std::optional<std::string> system;
  std::vector<std::string> licenses;
  std::vector<ChatMessage> messages;
  std::string requires_version;
};

Result<Modelfile> parse_modelfile(std::string_view text);

// The Modelfile text of a model, as /api/show's `modelfile` reports it. `from` is what the
// FROM line names (a blob path or model name).
std::string format_modelfile(const Modelfile& m, const std::string& display_name);

// "user" -> ok; anything else an error listing the roles.
Status check_message_role(std::string_view role);

}  // namespace hearth::store
