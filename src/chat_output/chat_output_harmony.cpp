// The harmony states of ChatOutputParser (gpt-oss). A reply is a run of messages, each a header
// and a body: `<|channel|>analysis<|message|>...<|end|>`, then `<|start|>assistant<|channel|>
// final<|message|>...`; a tool call is a message addressed to a function, `<|channel|>commentary
// to=functions.NAME <|constrain|>json<|message|>{...}` ended by <|call|> (or the recipient may
// come first: `<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>`).
// The analysis channel is reasoning, the final and commentary channels are the answer.
#include <algorithm>

#include "chat_output/call_bodies.h"
#include "chat_output/chat_output_parser.h"
#include "chat_output/family_markers.h"

namespace hearth {
namespace {

using namespace chat_output_markers;

// A header longer than this without <|message|> is not harmony: the text is answer text.
constexpr size_t kMaxHeader = 256;

constexpr std::string_view kBodyEnds[] = {kHarmonyEnd, kHarmonyCall, kHarmonyReturn, kHarmonyStart};

size_t partial_tail(std::string_view text, std::string_view marker) {
  size_t longest = std::min(text.size(), marker.size() - 1);
  for (size_t n = longest; n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// The word after `key` in a header (up to a space, '<' or the end).
std::string header_word(std::string_view header, std::string_view key) {
  size_t at = header.find(key);
  if (at == std::string_view::npos) return {};
  at += key.size();
  size_t end = at;
  while (end < header.size() && header[end] != ' ' && header[end] != '<' && header[end] != '\n') ++end;
  return std::string(header.substr(at, end - at));
}

}  // namespace

bool ChatOutputParser::step_harmony_header(ChatOutputDelta& out, bool final) {
  size_t pos = buffer_.find(kHarmonyMessage);
  if (pos == std::string::npos || pos > kMaxHeader) {
    if (!final && buffer_.size() < kMaxHeader + kHarmonyMessage.size()) return false;
    // Not a harmony message: the rest of the reply is answer text.
    state_ = State::kContent;
    return true;
  }
  const std::string header = buffer_.substr(0, pos);
  const std::string channel = header_word(header, kChannel);
  const std::string recipient = header_word(header, "to=");
  opener_ = header + std::string(kHarmonyMessage);
  buffer_.erase(0, pos + kHarmonyMessage.size());
  call_name_.clear();
  if (recipient.rfind("functions.", 0) == 0 && recipient.size() > 10 && format_.parse_tool_calls) {
    channel_ = Channel::kCall;
    call_name_ = recipient.substr(10);
  } else if (channel == "analysis" && format_.parse_reasoning) {
    channel_ = Channel::kReasoning;
  } else {
    channel_ = Channel::kContent;
  }
  state_ = State::kHarmonyBody;
  return true;
}

bool ChatOutputParser::step_harmony_body(ChatOutputDelta& out, bool final) {
  size_t pos = std::string::npos;
  std::string_view ender;
  for (std::string_view e : kBodyEnds) {
    size_t p = buffer_.find(e);
    if (p < pos) {
      pos = p;
      ender = e;
    }
  }
  if (pos == std::string::npos && channel_ != Channel::kCall) {
    size_t hold = 0;
    if (!final) {
      for (std::string_view e : kBodyEnds) hold = std::max(hold, partial_tail(buffer_, e));
    }
    std::string text = buffer_.substr(0, buffer_.size() - hold);
    buffer_.erase(0, buffer_.size() - hold);
    if (channel_ == Channel::kReasoning) out.reasoning += text;
    else emit_content(out, std::move(text));
    return false;
  }
  if (pos == std::string::npos && !final) return false;  // a call is released whole
  std::string text = buffer_.substr(0, pos);
  buffer_.erase(0, pos == std::string::npos ? buffer_.size() : pos + ender.size());
  if (channel_ == Channel::kReasoning) {
    out.reasoning += text;
  } else if (channel_ == Channel::kContent) {
    emit_content(out, std::move(text));
  } else {
    ParsedToolCall call;
    call.name = call_name_;
    if (chat_output_detail::object_text(text, call.arguments)) {
      out.tool_calls.push_back(std::move(call));
    } else {
      emit_content(out, opener_ + text);  // broken arguments: the raw text, never lost
    }
  }
  call_name_.clear();
  // After <|end|> the next message's header starts with <|start|>ROLE; after <|start|>, ROLE.
  state_ = State::kHarmonyHeader;
  return !buffer_.empty();
}

}  // namespace hearth
