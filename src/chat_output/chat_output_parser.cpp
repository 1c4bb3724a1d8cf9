// ChatOutputParser: a small state machine over a buffer of unreleased text (see the header).
// Answer and reasoning text are released up to the longest tail that could still begin a marker;
// a tool call is held until its closing marker (or the end of its JSON value) and released whole.
#include "chat_output/chat_output_parser.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace hearth {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralOpen = "[TOOL_CALLS]";
constexpr std::string_view kDeepSeekOpen = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kDeepSeekClose = "<｜tool▁calls▁end｜>";
constexpr std::string_view kDeepSeekCallOpen = "<｜tool▁call▁begin｜>";
constexpr std::string_view kDeepSeekCallClose = "<｜tool▁call▁end｜>";
constexpr std::string_view kDeepSeekSep = "<｜tool▁sep｜>";

struct FamilyName {
  ChatOutputFamily family;
  const char* name;
};
constexpr FamilyName kFamilyNames[] = {
    {ChatOutputFamily::kPlain, "plain"},     {ChatOutputFamily::kHermes, "hermes"},
    {ChatOutputFamily::kLlama3, "llama3"},   {ChatOutputFamily::kMistral, "mistral"},
    {ChatOutputFamily::kDeepSeekR1, "deepseek_r1"},
};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Length of the longest tail of `text` that is a proper prefix of `marker`.
size_t partial_tail(std::string_view text, std::string_view marker) {
  size_t longest = std::min(text.size(), marker.size() - 1);
  for (size_t n = longest; n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// End (one past) of the JSON object or array starting at `from` (after whitespace), or npos
// while it is incomplete. `from` must point at '{' or '['.
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

// Arguments as compact JSON object text: an object as is, or a string holding one.
bool arguments_text(const Json& args, std::string& out) {
  if (args.is_object()) {
    out = args.dump(-1, ' ', false, Json::error_handler_t::replace);
    return true;
  }
  if (args.is_string()) {
    Json parsed = Json::parse(args.get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) {
      out = parsed.dump(-1, ' ', false, Json::error_handler_t::replace);
      return true;
    }
  }
  return false;
}

// {"name": ..., "arguments"|"parameters": {...}, "id"?} -> a call.
bool call_from_object(const Json& obj, ParsedToolCall& call) {
  if (!obj.is_object() || !obj.contains("name") || !obj["name"].is_string()) return false;
  call.name = obj["name"].get<std::string>();
  if (call.name.empty()) return false;
  const char* key = obj.contains("arguments") ? "arguments" : obj.contains("parameters") ? "parameters" : nullptr;
  if (key == nullptr) {
    call.arguments = "{}";
  } else if (!arguments_text(obj[key], call.arguments)) {
    return false;
  }
  if (obj.contains("id") && obj["id"].is_string()) call.id = obj["id"].get<std::string>();
  return true;
}

bool parse_deepseek_calls(std::string_view body, std::vector<ParsedToolCall>& calls) {
  size_t at = 0;
  bool any = false;
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
    Json parsed = Json::parse(args.substr(brace, args_end - brace), nullptr, /*allow_exceptions=*/false);
    if (!arguments_text(parsed, call.arguments)) return false;
    calls.push_back(std::move(call));
    any = true;
  }
  return any;
}

}  // namespace

const char* chat_output_family_name(ChatOutputFamily family) {
  for (const auto& f : kFamilyNames) if (f.family == family) return f.name;
  return "plain";
}

bool chat_output_family_from_name(std::string_view name, ChatOutputFamily& out) {
  for (const auto& f : kFamilyNames) {
    if (name == f.name) {
      out = f.family;
      return true;
    }
  }
  return false;
}

bool tool_call_syntax(ChatOutputFamily family, ToolCallSyntax& out) {
  out = ToolCallSyntax{};
  switch (family) {
    case ChatOutputFamily::kPlain:
    case ChatOutputFamily::kHermes:
      out.before_call = std::string(kHermesOpen) + "\n";
      out.after_call = "\n" + std::string(kHermesClose);
      out.between_calls = "\n";
      return true;
    case ChatOutputFamily::kLlama3:
      out.arguments_key = "parameters";
      out.parallel = false;
      out.trigger = "{\"name\"";
      out.trigger_at_start = true;
      return true;
    case ChatOutputFamily::kMistral:
      out.before_calls = std::string(kMistralOpen) + "[";
      out.between_calls = ", ";
      out.after_calls = "]";
      return true;
    case ChatOutputFamily::kDeepSeekR1: return false;
  }
  return false;
}

ChatOutputFamily detect_chat_output_family(std::string_view source) {
  auto has = [&](std::string_view marker) { return source.find(marker) != std::string_view::npos; };
  // The same order as the reference engine's dispatch.
  if (has(kDeepSeekOpen)) return ChatOutputFamily::kDeepSeekR1;
  if (has(kHermesOpen)) return ChatOutputFamily::kHermes;
  if (has("<|start_header_id|>ipython<|end_header_id|>")) return ChatOutputFamily::kLlama3;
  if (has(kMistralOpen)) return ChatOutputFamily::kMistral;
  return ChatOutputFamily::kPlain;
}

ChatOutputParser::ChatOutputParser(ChatOutputFormat format) : format_(format) {
  if (format_.parse_reasoning && format_.reasoning_open) state_ = State::kReasoning;
}

ChatOutputDelta ChatOutputParser::feed(std::string_view text) {
  ChatOutputDelta out;
  buffer_.append(text);
  run(out, /*final=*/false);
  return out;
}

ChatOutputDelta ChatOutputParser::finish() {
  ChatOutputDelta out;
  run(out, /*final=*/true);
  return out;
}

void ChatOutputParser::run(ChatOutputDelta& out, bool final) {
  for (int guard = 0; guard < 1'000'000; ++guard) {
    bool progressed = false;
    switch (state_) {
      case State::kContent: progressed = step_content(out, final); break;
      case State::kReasoning: progressed = step_reasoning(out, final); break;
      case State::kCallBody: progressed = step_call_body(out, final); break;
      case State::kJsonBody: progressed = step_json_body(out, final); break;
    }
    if (!progressed) return;
  }
}

void ChatOutputParser::emit_content(ChatOutputDelta& out, std::string text) {
  if (text.empty()) return;
  out.content += text;
  at_start_ = false;
}

bool ChatOutputParser::step_content(ChatOutputDelta& out, bool final) {
  if (skip_space_) {
    size_t n = 0;
    while (n < buffer_.size() && is_space(buffer_[n])) ++n;
    buffer_.erase(0, n);
    if (buffer_.empty()) return false;
    skip_space_ = false;
  }
  const bool tools = format_.parse_tool_calls;
  if (tools && at_start_ && format_.family == ChatOutputFamily::kLlama3) {
    // Llama 3.x answers a call with a bare JSON object as its whole reply.
    size_t n = 0;
    while (n < buffer_.size() && is_space(buffer_[n])) ++n;
    if (n == buffer_.size() && !final) return false;
    if (n < buffer_.size() && buffer_[n] == '{') {
      opener_.clear();
      state_ = State::kJsonBody;
      at_start_ = false;
      return true;
    }
  }
  struct Marker {
    std::string_view text;
    State next;
    std::string_view closer;
  };
  std::vector<Marker> markers;
  if (format_.parse_reasoning) markers.push_back({kThinkOpen, State::kReasoning, {}});
  if (tools) {
    switch (format_.family) {
      case ChatOutputFamily::kPlain:
      case ChatOutputFamily::kHermes: markers.push_back({kHermesOpen, State::kCallBody, kHermesClose}); break;
      case ChatOutputFamily::kLlama3: markers.push_back({kPythonTag, State::kJsonBody, {}}); break;
      case ChatOutputFamily::kMistral: markers.push_back({kMistralOpen, State::kJsonBody, {}}); break;
      case ChatOutputFamily::kDeepSeekR1: markers.push_back({kDeepSeekOpen, State::kCallBody, kDeepSeekClose}); break;
    }
  }
  size_t best = std::string::npos;
  const Marker* found = nullptr;
  for (const auto& m : markers) {
    size_t pos = buffer_.find(m.text);
    if (pos < best) {
      best = pos;
      found = &m;
    }
  }
  if (found != nullptr) {
    emit_content(out, buffer_.substr(0, best));
    opener_ = std::string(found->text);
    closer_ = std::string(found->closer);
    buffer_.erase(0, best + found->text.size());
    state_ = found->next;
    at_start_ = false;
    return true;
  }
  size_t hold = 0;
  if (!final) {
    for (const auto& m : markers) hold = std::max(hold, partial_tail(buffer_, m.text));
  }
  emit_content(out, buffer_.substr(0, buffer_.size() - hold));
  buffer_.erase(0, buffer_.size() - hold);
  return false;
}

bool ChatOutputParser::step_reasoning(ChatOutputDelta& out, bool final) {
  size_t pos = buffer_.find(kThinkClose);
  if (pos != std::string::npos) {
    out.reasoning += buffer_.substr(0, pos);
    buffer_.erase(0, pos + kThinkClose.size());
    state_ = State::kContent;
    skip_space_ = true;
    at_start_ = false;
    return true;
  }
  size_t hold = final ? 0 : partial_tail(buffer_, kThinkClose);
  out.reasoning += buffer_.substr(0, buffer_.size() - hold);
  buffer_.erase(0, buffer_.size() - hold);
  return false;
}

bool ChatOutputParser::step_call_body(ChatOutputDelta& out, bool final) {
  size_t pos = buffer_.find(closer_);
  if (pos == std::string::npos && !final) return false;
  std::string body = buffer_.substr(0, pos);
  std::vector<ParsedToolCall> calls;
  if (parse_calls(body, calls)) {
    for (auto& c : calls) out.tool_calls.push_back(std::move(c));
  } else {
    emit_content(out, opener_ + body + (pos == std::string::npos ? "" : closer_));
  }
  buffer_.erase(0, pos == std::string::npos ? buffer_.size() : pos + closer_.size());
  state_ = State::kContent;
  skip_space_ = true;
  return !buffer_.empty();
}

bool ChatOutputParser::step_json_body(ChatOutputDelta& out, bool final) {
  size_t start = 0;
  while (start < buffer_.size() && is_space(buffer_[start])) ++start;
  if (start == buffer_.size()) {
    if (!final) return false;
    emit_content(out, opener_ + buffer_);
    buffer_.clear();
    state_ = State::kContent;
    return false;
  }
  size_t end = std::string::npos;
  if (buffer_[start] == '{' || buffer_[start] == '[') {
    end = json_value_end(buffer_, start);
  } else if (opener_ == kPythonTag) {
    // Llama 3.x's built-in code interpreter: the rest of the reply is Python code.
    if (!final) return false;
    out.tool_calls.push_back(ParsedToolCall{"", "python", Json{{"code", buffer_.substr(start)}}.dump(-1, ' ', false, Json::error_handler_t::replace)});
    buffer_.clear();
    state_ = State::kContent;
    return false;
  } else {
    end = buffer_.size();  // not JSON: put it back as answer text
  }
  if (end == std::string::npos && !final) return false;
  if (end == std::string::npos) end = buffer_.size();
  std::string body = buffer_.substr(0, end);
  std::vector<ParsedToolCall> calls;
  if (parse_calls(body, calls)) {
    for (auto& c : calls) out.tool_calls.push_back(std::move(c));
    skip_space_ = true;
  } else {
    emit_content(out, opener_ + body);
  }
  buffer_.erase(0, end);
  state_ = State::kContent;
  return !buffer_.empty();
}

bool ChatOutputParser::parse_calls(const std::string& body, std::vector<ParsedToolCall>& calls) const {
  if (format_.family == ChatOutputFamily::kDeepSeekR1) return parse_deepseek_calls(body, calls);
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return false;
  std::vector<ParsedToolCall> found;
  if (parsed.is_array()) {
    if (parsed.empty()) return false;
    for (const auto& item : parsed) {
      ParsedToolCall call;
      if (!call_from_object(item, call)) return false;
      found.push_back(std::move(call));
    }
  } else {
    ParsedToolCall call;
    if (!call_from_object(parsed, call)) return false;
    found.push_back(std::move(call));
  }
  for (auto& c : found) calls.push_back(std::move(c));
  return true;
}

}  // namespace hearth
