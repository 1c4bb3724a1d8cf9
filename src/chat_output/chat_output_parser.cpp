// ChatOutputParser: a small state machine over a buffer of unreleased text (see the header).
// Answer and reasoning text are released up to the longest tail that could still begin a marker;
// a tool call is held until its closing marker (or the end of its JSON value) and released whole.
// The harmony (gpt-oss) states are in chat_output_harmony.cpp; the call readers in call_bodies.cpp.
#include "chat_output/chat_output_parser.h"

#include <algorithm>
#include <cctype>

#include "chat_output/call_bodies.h"
#include "chat_output/family_markers.h"

namespace hearth {
namespace {

using namespace chat_output_markers;
using namespace chat_output_detail;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

// Length of the longest tail of `text` that is a proper prefix of `marker`.
size_t partial_tail(std::string_view text, std::string_view marker) {
  size_t longest = std::min(text.size(), marker.size() - 1);
  for (size_t n = longest; n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ChatOutputParser::ChatOutputParser(ChatOutputFormat format) : format_(format) {
  if (format_.family == ChatOutputFamily::kGptOss) {
    state_ = State::kHarmonyHeader;  // the prompt ends with <|start|>assistant
  } else if (format_.parse_reasoning && format_.reasoning_open) {
    state_ = State::kReasoning;
  }
  // The prefill is the client's own text: read for the state it leaves, released by nobody.
  // Bytes it leaves held back (a possible marker's start) are the client's too: dropped when
  // released as text, unless they turn out to begin a marker.
  if (!format_.prefilled.empty()) {
    feed(format_.prefilled);
    prefill_held_ = buffer_.size();
  }
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
    const State before = state_;
    switch (state_) {
      case State::kContent: progressed = step_content(out, final); break;
      case State::kReasoning: progressed = step_reasoning(out, final); break;
      case State::kCallBody: progressed = step_call_body(out, final); break;
      case State::kJsonBody: progressed = step_json_body(out, final); break;
      case State::kRecipient: progressed = step_recipient(out, final); break;
      case State::kHarmonyHeader: progressed = step_harmony_header(out, final); break;
      case State::kHarmonyBody: progressed = step_harmony_body(out, final); break;
    }
    if (state_ != before) prefill_held_ = 0;  // the held bytes were read as a marker
    if (!progressed) return;
  }
}

size_t ChatOutputParser::drop_prefill(const std::string& text) {
  const size_t n = std::min(prefill_held_, text.size());
  prefill_held_ -= n;
  return n;
}

void ChatOutputParser::emit_content(ChatOutputDelta& out, std::string text) {
  if (text.empty()) return;
  out.content.append(text, drop_prefill(text));
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
  const ChatOutputFamily family = format_.family;
  if (at_start_ && family_frames_replies(family)) {
    // The prompt ends with ">>>": the reply starts with a recipient (a function or "all"), with
    // or without tools.
    opener_.clear();
    state_ = State::kRecipient;
    at_start_ = false;
    return true;
  }
  if (tools && at_start_ && (family == ChatOutputFamily::kLlama3 || family == ChatOutputFamily::kGeneric)) {
    // Llama 3.x answers a call with a bare JSON object as its whole reply; the generic family
    // writes every reply as one JSON object.
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
  if (tools && at_start_ && family == ChatOutputFamily::kFirefunction) {
    // The reply may open with the call, without the space that precedes it after text.
    const std::string_view bare = kFirefunctionOpen.substr(1);
    if (buffer_.size() < bare.size() && bare.substr(0, buffer_.size()) == buffer_ && !final) return false;
    if (buffer_.compare(0, bare.size(), bare) == 0) {
      opener_ = std::string(bare);
      buffer_.erase(0, bare.size());
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
  if (format_.parse_reasoning) markers.push_back({reasoning_markers(family).open, State::kReasoning, {}});
  // Section markers the family wraps its answer in: dropped (kContent continues).
  if (family == ChatOutputFamily::kCommandR7B) {
    markers.push_back({kR7bResponseOpen, State::kContent, {}});
    markers.push_back({kR7bResponseClose, State::kContent, {}});
  } else if (family == ChatOutputFamily::kGranite) {
    markers.push_back({kGraniteResponseOpen, State::kContent, {}});
    markers.push_back({kGraniteResponseClose, State::kContent, {}});
  }
  if (tools) {
    switch (family) {
      case ChatOutputFamily::kPlain:
      case ChatOutputFamily::kHermes: markers.push_back({kHermesOpen, State::kCallBody, kHermesClose}); break;
      case ChatOutputFamily::kLlama3: markers.push_back({kPythonTag, State::kJsonBody, {}}); break;
      case ChatOutputFamily::kMistral: markers.push_back({kMistralOpen, State::kJsonBody, {}}); break;
      case ChatOutputFamily::kDeepSeekR1: markers.push_back({kDeepSeekOpen, State::kCallBody, kDeepSeekClose}); break;
      case ChatOutputFamily::kCommandR7B: markers.push_back({kR7bActionOpen, State::kCallBody, kR7bActionClose}); break;
      case ChatOutputFamily::kFunctionaryV31:
        markers.push_back({kFunctionOpen, State::kCallBody, kFunctionClose});
        markers.push_back({kPythonTag, State::kJsonBody, {}});
        break;
      case ChatOutputFamily::kFunctionaryV32: markers.push_back({kFunctionaryRecipient, State::kRecipient, {}}); break;
      case ChatOutputFamily::kFirefunction: markers.push_back({kFirefunctionOpen, State::kJsonBody, {}}); break;
      case ChatOutputFamily::kGranite: markers.push_back({kGraniteCall, State::kJsonBody, {}}); break;
      case ChatOutputFamily::kKimiK2: markers.push_back({kKimiSectionOpen, State::kCallBody, kKimiSectionClose}); break;
      case ChatOutputFamily::kGptOss:
      case ChatOutputFamily::kGeneric: break;
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
    prefill_held_ = 0;
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
  const std::string_view close = reasoning_markers(format_.family).close;
  size_t pos = buffer_.find(close);
  if (pos != std::string::npos) {
    const std::string text = buffer_.substr(0, pos);
    out.reasoning.append(text, drop_prefill(text));
    buffer_.erase(0, pos + close.size());
    state_ = State::kContent;
    skip_space_ = true;
    at_start_ = false;
    return true;
  }
  size_t hold = final ? 0 : partial_tail(buffer_, close);
  const std::string text = buffer_.substr(0, buffer_.size() - hold);
  out.reasoning.append(text, drop_prefill(text));
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
    call_name_.clear();
    state_ = State::kContent;
    return false;
  }
  size_t end = std::string::npos;
  const bool object_only = !call_name_.empty();  // the name came first: the value is the arguments
  if (buffer_[start] == '{' || (buffer_[start] == '[' && !object_only)) {
    end = json_value_end(buffer_, start);
  } else if (opener_ == kPythonTag || call_name_ == "python") {
    // A built-in code interpreter (Llama 3.x, Functionary): the rest of the reply is Python code.
    if (!final) return false;
    out.tool_calls.push_back(ParsedToolCall{"", "python", compact(Json{{"code", buffer_.substr(start)}})});
    buffer_.clear();
    call_name_.clear();
    state_ = State::kContent;
    return false;
  } else {
    // Not JSON: the marker was answer text, and what follows is read again as such (found by
    // fuzz_chat_output: taking the whole buffer made the result depend on the chunking).
    emit_content(out, opener_);
    call_name_.clear();
    state_ = State::kContent;
    return true;
  }
  if (end == std::string::npos && !final) return false;
  if (end == std::string::npos) end = buffer_.size();
  std::string body = buffer_.substr(0, end);
  std::vector<ParsedToolCall> calls;
  std::string content;
  bool ok = false;
  if (object_only) {
    ParsedToolCall call;
    call.name = call_name_;
    ok = object_text(body, call.arguments);
    if (ok) calls.push_back(std::move(call));
  } else if (format_.family == ChatOutputFamily::kGeneric) {
    ok = parse_generic_reply(body, calls, content);
    // Cut off (max tokens) inside the answer: the answer so far, never the broken JSON.
    if (!ok && final) ok = salvage_generic_response(body, content);
  } else {
    ok = parse_calls(body, calls);
  }
  if (ok) {
    emit_content(out, std::move(content));
    for (auto& c : calls) out.tool_calls.push_back(std::move(c));
    skip_space_ = true;
  } else {
    emit_content(out, opener_ + body);
  }
  buffer_.erase(0, end);
  call_name_.clear();
  state_ = State::kContent;
  return !buffer_.empty();
}

bool ChatOutputParser::step_recipient(ChatOutputDelta& out, bool final) {
  constexpr size_t kMaxName = 64;
  size_t n = 0;
  while (n < buffer_.size() && n <= kMaxName && is_word_char(buffer_[n])) ++n;
  if (n == buffer_.size() && n <= kMaxName && !final) return false;  // the name may go on
  if (n == 0 || n > kMaxName || n == buffer_.size() || buffer_[n] != '\n') {
    // Not a recipient line: the marker was answer text.
    emit_content(out, opener_);
    state_ = State::kContent;
    return !buffer_.empty() || final;
  }
  std::string name = buffer_.substr(0, n);
  if (name != "all" && !format_.parse_tool_calls) {
    // No tools were offered: only the answer's "all" line is framing; anything else is text.
    emit_content(out, opener_);
    state_ = State::kContent;
    return true;
  }
  buffer_.erase(0, n + 1);
  if (name == "all") {
    state_ = State::kContent;  // the answer text follows
    at_start_ = false;
    return true;
  }
  call_name_ = name;
  opener_ += name + "\n";
  state_ = State::kJsonBody;
  return true;
}

bool ChatOutputParser::parse_calls(const std::string& body, std::vector<ParsedToolCall>& calls) const {
  switch (format_.family) {
    case ChatOutputFamily::kDeepSeekR1: return parse_deepseek_calls(body, calls);
    case ChatOutputFamily::kCommandR7B: return parse_command_r7b_calls(body, calls);
    case ChatOutputFamily::kKimiK2: return parse_kimi_calls(body, calls);
    case ChatOutputFamily::kFunctionaryV31:
      if (opener_ == kFunctionOpen) return parse_functionary_call(body, calls);
      return parse_json_calls(body, calls);
    default: return parse_json_calls(body, calls);
  }
}

}  // namespace hearth
