// `hearth chat`: an interactive conversation with a running server over its native API. Reads
// one message per line, streams each reply as it arrives, and keeps the history so the model
// sees the whole conversation. Commands: /bye (or /exit), /clear, /help. Written against
// streams so it can be driven by a test or a pipe as well as a terminal.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/ollama_client.h"

namespace hearth::cli {

struct ChatReplOptions {
  std::string model;
  std::string system;       // optional system message at the start of the conversation
  nlohmann::json options = nlohmann::json::object();  // ollama `options` (temperature, seed, ...)
  bool interactive = false; // print ">>> " prompts (a terminal)
  bool show_stats = false;  // print token counts and speed after each reply (to `err`)
};

// Returns the process exit status: 0 at /bye or end of input, 1 when the server failed.
int run_chat_repl(OllamaClient& client, const ChatReplOptions& options, std::istream& in, std::ostream& out,
                  std::ostream& err);

// Sends one message and prints the reply (`hearth chat "question"`).
int run_chat_once(OllamaClient& client, const ChatReplOptions& options, const std::string& message, std::ostream& out,
                  std::ostream& err);

}  // namespace hearth::cli
