// ParsedEventStream: see the header.
#include "server/parsed_event_stream.h"

namespace hearth {
namespace {

ChatOutputFormat parser_format(const protocol::PromptInfo::OutputFormat& format) {
  ChatOutputFormat f;
  if (!chat_output_family_from_name(format.family, f.family)) f.family = ChatOutputFamily::kPlain;
  f.parse_tool_calls = format.tool_calls;
  f.parse_reasoning = format.reasoning;
  f.reasoning_open = format.reasoning_open;
  f.prefilled = format.prefilled;
  return f;
}

}  // namespace

ParsedEventStream::ParsedEventStream(std::shared_ptr<protocol::EventStream> inner,
                                     const protocol::PromptInfo::OutputFormat& format,
                                     std::function<std::string()> new_call_id)
    : inner_(std::move(inner)), parser_(parser_format(format)), new_call_id_(std::move(new_call_id)) {}

std::shared_ptr<protocol::EventStream> ParsedEventStream::wrap(std::shared_ptr<protocol::EventStream> inner,
                                                               const protocol::PromptInfo::OutputFormat& format,
                                                               std::function<std::string()> new_call_id) {
  if (!format.active()) return inner;
  return std::make_shared<ParsedEventStream>(std::move(inner), format, std::move(new_call_id));
}

bool ParsedEventStream::next(protocol::Event& out, std::chrono::milliseconds timeout) {
  if (!inner_->next(out, timeout)) return false;
  using Kind = protocol::Event::Kind;
  if (out.kind != Kind::kText && out.kind != Kind::kDone) return true;
  ChatOutputDelta delta = parser_.feed(out.text);
  if (out.kind == Kind::kDone) {
    ChatOutputDelta rest = parser_.finish();
    delta.content += rest.content;
    delta.reasoning += rest.reasoning;
    for (auto& c : rest.tool_calls) delta.tool_calls.push_back(std::move(c));
  }
  out.text = std::move(delta.content);
  out.reasoning = std::move(delta.reasoning);
  for (auto& c : delta.tool_calls) {
    protocol::ToolCallOutput call;
    call.index = next_index_++;
    call.id = c.id.empty() ? new_call_id_() : std::move(c.id);
    call.name = std::move(c.name);
    call.arguments = std::move(c.arguments);
    out.tool_calls.push_back(std::move(call));
  }
  return true;
}

}  // namespace hearth
