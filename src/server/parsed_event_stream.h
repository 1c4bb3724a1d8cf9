// Splits a chat choice's generated text into answer, reasoning and tool calls as it streams
// (chat_output's parser, in the template family the engine reported for the prompt), so every
// dialect's encoder receives events whose `text` is the answer only, with `reasoning` and
// finished `tool_calls` beside it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "chat_output/chat_output_parser.h"
#include "protocol/backend.h"

namespace hearth {

class ParsedEventStream final : public protocol::EventStream {
 public:
  // `new_call_id` names a call the model gave no id.
  ParsedEventStream(std::shared_ptr<protocol::EventStream> inner, const protocol::PromptInfo::OutputFormat& format,
                    std::function<std::string()> new_call_id);

  bool next(protocol::Event& out, std::chrono::milliseconds timeout) override;
  void cancel() override { inner_->cancel(); }

  // `inner` wrapped when `format` asks for parsing, else `inner` itself.
  static std::shared_ptr<protocol::EventStream> wrap(std::shared_ptr<protocol::EventStream> inner,
                                                     const protocol::PromptInfo::OutputFormat& format,
                                                     std::function<std::string()> new_call_id);

 private:
  std::shared_ptr<protocol::EventStream> inner_;
  ChatOutputParser parser_;
  std::function<std::string()> new_call_id_;
  int32_t next_index_ = 0;
};

}  // namespace hearth
