// OpenAI chat body -> Jinja context (see chat_context.h). Validation errors name the message
// index and field so an API client can fix its request.
#include "template/chat_context.h"

#include "util/json_nesting.h"

namespace hearth {
namespace {

using Json = nlohmann::ordered_json;

Result<Json> normalize_content(const Json& content, size_t index) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) {
    return make_error(ErrorKind::kInvalidArgument, "messages[" + std::to_string(index) + "].content must be a string, an array of parts or null");
  }
  std::string joined;
  for (const auto& part : content) {
    if (part.is_string()) {
      joined += part.get<std::string>();
      continue;
    }
    if (!part.is_object() || !part.contains("type")) {
      return make_error(ErrorKind::kInvalidArgument, "messages[" + std::to_string(index) + "].content parts must be objects with a type");
    }
    if (part["type"] == "text") {
      if (!part.contains("text") || !part["text"].is_string()) {
        return make_error(ErrorKind::kInvalidArgument, "messages[" + std::to_string(index) + "].content text part needs a string 'text'");
      }
      joined += part["text"].get<std::string>();
    } else {
      return make_error(ErrorKind::kUnsupported, "messages[" + std::to_string(index) + "].content part type '" +
                                                     part["type"].dump() + "' is not supported (text only)");
    }
  }
  return Json(joined);
}

}  // namespace

Result<Json> build_chat_context(const Json& request, const ChatContextOptions& options) {
  if (!request.is_object()) return make_error(ErrorKind::kInvalidArgument, "chat request must be a JSON object");
  if (!request.contains("messages") || !request["messages"].is_array()) {
    return make_error(ErrorKind::kInvalidArgument, "chat request needs a 'messages' array");
  }
  Json messages = Json::array();
  size_t index = 0;
  for (const auto& m : request["messages"]) {
    if (!m.is_object()) return make_error(ErrorKind::kInvalidArgument, "messages[" + std::to_string(index) + "] must be an object");
    if (!m.contains("role") || !m["role"].is_string()) {
      return make_error(ErrorKind::kInvalidArgument, "messages[" + std::to_string(index) + "] needs a string 'role'");
    }
    Json out = m;
    if (m.contains("content")) {
      HEARTH_ASSIGN(out["content"], normalize_content(m["content"], index));
    }
    if (m.contains("tool_calls")) {
      if (!m["tool_calls"].is_array()) {
        return make_error(ErrorKind::kInvalidArgument, "messages[" + std::to_string(index) + "].tool_calls must be an array");
      }
      for (auto& call : out["tool_calls"]) {
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
        Json& fn = call["function"];
        // Arguments nested deeper than any real call stay a string, as unparseable ones do.
        if (options.parse_tool_arguments && fn.contains("arguments") && fn["arguments"].is_string() &&
            json_nesting_within(fn["arguments"].get_ref<const std::string&>())) {
          Json parsed = Json::parse(fn["arguments"].get<std::string>(), nullptr, /*allow_exceptions=*/false);
          if (!parsed.is_discarded()) fn["arguments"] = std::move(parsed);
        }
      }
    }
    messages.push_back(std::move(out));
    ++index;
  }
  Json context = Json::object();
  context["messages"] = std::move(messages);
  if (request.contains("tools") && !request["tools"].is_null()) {
    if (!request["tools"].is_array()) return make_error(ErrorKind::kInvalidArgument, "'tools' must be an array");
    context["tools"] = request["tools"];
  }
  bool add_generation_prompt = options.default_add_generation_prompt;
  if (request.contains("add_generation_prompt")) {
    if (!request["add_generation_prompt"].is_boolean()) {
      return make_error(ErrorKind::kInvalidArgument, "'add_generation_prompt' must be true or false");
    }
    add_generation_prompt = request["add_generation_prompt"].get<bool>();
  }
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = options.bos_token;
  context["eos_token"] = options.eos_token;
  return context;
}

}  // namespace hearth
