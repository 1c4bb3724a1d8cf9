// The running state of one generated choice while an encoder collects events: its text so
// far, its tokens (for logprobs), and how it ended. Shared by every dialect's encoder.
#pragma once

#include <string>
#include <vector>

#include "protocol/events.h"

namespace hearth::api {

struct ChoiceState {
  std::string text;
  std::string reasoning;                              // parsed thinking (chat with reasoning)
  std::vector<protocol::ToolCallOutput> tool_calls;   // parsed calls (chat with tools)
  std::vector<protocol::TokenOutput> tokens;
  bool done = false;
  bool started = false;  // a streaming encoder sent this choice's opening chunk
  protocol::StopReason stop_reason = protocol::StopReason::kNone;
  std::string stop_word;
  protocol::Timings timings;

  // Adds an event's text and tokens; records the end for kDone.
  void absorb(const protocol::Event& event) {
    text += event.text;
    reasoning += event.reasoning;
    tool_calls.insert(tool_calls.end(), event.tool_calls.begin(), event.tool_calls.end());
    tokens.insert(tokens.end(), event.tokens.begin(), event.tokens.end());
    if (event.kind == protocol::Event::Kind::kDone) {
      done = true;
      stop_reason = event.stop_reason;
      stop_word = event.stop_word;
      timings = event.timings;
    }
  }
};

// OpenAI's and ollama's finish reason: "length" when a token limit or the context ended the
// text, otherwise "stop" ("tool_calls" is the caller's, when the choice made calls).
inline const char* finish_reason_stop_or_length(protocol::StopReason r) {
  return (r == protocol::StopReason::kLength || r == protocol::StopReason::kContext) ? "length" : "stop";
}

}  // namespace hearth::api
