// The per-family readers of tool-call text (see call_bodies.h). Each returns false, adding
// nothing, when the text is not a complete, valid call in its family's shape; the parser then
// gives the text back as answer text.
#include "chat_output/call_bodies.h"

#include <algorithm>
#include <cctype>

#include "chat_output/family_markers.h"
#include "util/json_nesting.h"

namespace hearth::chat_output_detail {
namespace {

using namespace chat_output_markers;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_word(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

// Text nested deeper than any real call is not a call (and would overflow the stack when printed).
Json parse(std::string_view text) {
  if (!json_nesting_within(text)) return Json(Json::value_t::discarded);
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// Calls from a parsed object or non-empty array of objects, all or nothing.
bool calls_from_value(const Json& value, std::vector<ParsedToolCall>& calls, const char* name_key,
                      const char* args_key, const char* id_key) {
  std::vector<ParsedToolCall> found;
  if (value.is_array()) {
    if (value.empty()) return false;
    for (const auto& item : value) {
      ParsedToolCall call;
      if (!call_from_object(item, call, name_key, args_key, id_key)) return false;
      found.push_back(std::move(call));
    }
  } else {
    ParsedToolCall call;
    if (!call_from_object(value, call, name_key, args_key, id_key)) return false;
    found.push_back(std::move(call));
  }
  for (auto& c : found) calls.push_back(std::move(c));
  return true;
}

}  // namespace

size_t json_value_end(std::string_view text, size_t from) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = from; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::string compact(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

bool arguments_text(const Json& args, std::string& out) {
  if (args.is_object()) {
    out = compact(args);
    return true;
  }
  if (args.is_string()) {
    Json parsed = parse(args.get<std::string>());
    if (parsed.is_object()) {
      out = compact(parsed);
      return true;
    }
  }
  return false;
}

bool object_text(std::string_view text, std::string& out) {
  Json parsed = parse(trim(text));
  if (!parsed.is_object()) return false;
  out = compact(parsed);
  return true;
}

bool call_from_object(const Json& obj, ParsedToolCall& call, const char* name_key, const char* args_key, const char* id_key) {
  if (!obj.is_object() || !obj.contains(name_key) || !obj[name_key].is_string()) return false;
  call.name = obj[name_key].get<std::string>();
  if (call.name.empty()) return false;
  const char* key = args_key != nullptr ? (obj.contains(args_key) ? args_key : nullptr)
                    : obj.contains("arguments") ? "arguments"
                    : obj.contains("parameters") ? "parameters"
                                                  : nullptr;
  if (key == nullptr) {
    call.arguments = "{}";
  } else if (!arguments_text(obj[key], call.arguments)) {
    return false;
  }
  if (obj.contains(id_key) && obj[id_key].is_string()) call.id = obj[id_key].get<std::string>();
  return true;
}

bool parse_json_calls(std::string_view body, std::vector<ParsedToolCall>& calls) {
  Json parsed = parse(body);
  if (parsed.is_discarded()) return false;
  return calls_from_value(parsed, calls, "name", nullptr, "id");
}

bool parse_deepseek_calls(std::string_view body, std::vector<ParsedToolCall>& calls) {
  size_t at = 0;
  std::vector<ParsedToolCall> found;
  while ((at = body.find(kDeepSeekCallOpen, at)) != std::string_view::npos) {
    at += kDeepSeekCallOpen.size();
    size_t end = body.find(kDeepSeekCallClose, at);
    if (end == std::string_view::npos) return false;
    std::string_view one = body.substr(at, end - at);
    at = end + kDeepSeekCallClose.size();
    size_t sep = one.find(kDeepSeekSep);
    if (sep == std::string_view::npos) return false;
    std::string_view rest = one.substr(sep + kDeepSeekSep.size());
    size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) return false;
    ParsedToolCall call;
    call.name = std::string(rest.substr(0, nl));
    std::string_view args = rest.substr(nl + 1);
    size_t brace = args.find('{');
    if (brace == std::string_view::npos || call.name.empty()) return false;
    size_t args_end = json_value_end(args, brace);
    if (args_end == std::string_view::npos) return false;
    if (!arguments_text(parse(args.substr(brace, args_end - brace)), call.arguments)) return false;
    found.push_back(std::move(call));
  }
  if (found.empty()) return false;
  for (auto& c : found) calls.push_back(std::move(c));
  return true;
}

bool parse_command_r7b_calls(std::string_view body, std::vector<ParsedToolCall>& calls) {
  Json parsed = parse(body);
  if (!parsed.is_array()) return false;
  return calls_from_value(parsed, calls, "tool_name", "parameters", "tool_call_id");
}

bool parse_functionary_call(std::string_view body, std::vector<ParsedToolCall>& calls) {
  size_t gt = body.find('>');
  if (gt == std::string_view::npos || !is_word(body.substr(0, gt))) return false;
  ParsedToolCall call;
  call.name = std::string(body.substr(0, gt));
  if (!object_text(body.substr(gt + 1), call.arguments)) return false;
  calls.push_back(std::move(call));
  return true;
}

bool parse_kimi_calls(std::string_view body, std::vector<ParsedToolCall>& calls) {
  std::vector<ParsedToolCall> found;
  size_t at = 0;
  while ((at = body.find(kKimiCallOpen, at)) != std::string_view::npos) {
    at += kKimiCallOpen.size();
    size_t end = body.find(kKimiCallClose, at);
    if (end == std::string_view::npos) return false;
    std::string_view one = body.substr(at, end - at);
    at = end + kKimiCallClose.size();
    size_t args = one.find(kKimiArgsOpen);
    if (args == std::string_view::npos) return false;
    // functions.NAME:IDX; the whole of it is the call's id.
    std::string_view id = trim(one.substr(0, args));
    std::string_view name = id;
    if (name.substr(0, 10) == "functions.") name.remove_prefix(10);
    size_t colon = name.rfind(':');
    if (colon != std::string_view::npos) name = name.substr(0, colon);
    if (!is_word(name)) return false;
    ParsedToolCall call;
    call.id = std::string(id);
    call.name = std::string(name);
    if (!object_text(one.substr(args + kKimiArgsOpen.size()), call.arguments)) return false;
    found.push_back(std::move(call));
  }
  if (found.empty()) return false;
  for (auto& c : found) calls.push_back(std::move(c));
  return true;
}

bool parse_generic_reply(std::string_view body, std::vector<ParsedToolCall>& calls, std::string& content) {
  Json parsed = parse(body);
  if (!parsed.is_object()) return false;
  if (parsed.contains("tool_calls")) return parsed["tool_calls"].is_array() && calls_from_value(parsed["tool_calls"], calls, "name", nullptr, "id");
  if (parsed.contains("tool_call")) return parsed["tool_call"].is_object() && calls_from_value(parsed["tool_call"], calls, "name", nullptr, "id");
  if (parsed.contains("response")) {
    const Json& r = parsed["response"];
    content = r.is_string() ? r.get<std::string>() : r.dump(2, ' ', false, Json::error_handler_t::replace);
    return true;
  }
  return false;
}

bool salvage_generic_response(std::string_view body, std::string& content) {
  size_t at = 0;
  auto skip_space = [&] {
    while (at < body.size() && is_space(body[at])) ++at;
  };
  auto literal = [&](std::string_view word) {
    skip_space();
    if (body.substr(at, word.size()) != word) return false;
    at += word.size();
    return true;
  };
  if (!literal("{") || !literal("\"response\"") || !literal(":") || !literal("\"")) return false;
  // The string's text up to its closing quote, or all of the rest when it was cut off.
  size_t end = at;
  while (end < body.size() && body[end] != '"') end += body[end] == '\\' ? 2 : 1;
  std::string_view text = body.substr(at, std::min(end, body.size()) - at);
  // A cut escape (\, \u00) does not parse: drop its bytes from the end until the rest does.
  for (size_t cut = 0; cut <= 6 && cut <= text.size(); ++cut) {
    Json value = parse("\"" + std::string(text.substr(0, text.size() - cut)) + "\"");
    if (value.is_string()) {
      content = value.get<std::string>();
      return true;
    }
  }
  return false;
}

}  // namespace hearth::chat_output_detail
