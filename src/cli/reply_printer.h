// Prints a streamed reply: the answer word-wrapped to the terminal, and the model's thinking
// (ollama's "thinking" field) between "Thinking..." and "...done thinking." in grey on a
// terminal, or not at all with --hidethinking. Fed one NDJSON chunk at a time from
// /api/chat (message.content, message.thinking) or /api/generate (response, thinking).
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/word_wrap.h"

namespace hearth::cli {

class ReplyPrinter {
 public:
  // wrap_width <= 0: no wrapping; `color`: grey thinking (a terminal).
  ReplyPrinter(std::ostream& out, int wrap_width, bool hide_thinking, bool color)
      : out_(out), wrap_(wrap_width), hide_thinking_(hide_thinking), color_(color) {}

  void on_chunk(const nlohmann::json& chunk);
  // Ends the reply: closes a thinking block and prints the held word (dropped when the reply
  // was interrupted mid-word, so no fragment follows the ^C).
  void finish(bool print_held_word = true);
  const std::string& content() const { return content_; }
  const std::string& thinking() const { return thinking_; }

 private:
  void end_thinking();

  std::ostream& out_;
  WordWrapper wrap_;
  bool hide_thinking_;
  bool color_;
  bool in_thinking_ = false;
  std::string content_;
  std::string thinking_;
};

}  // namespace hearth::cli
