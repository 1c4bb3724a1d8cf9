// One model turn as `hearth run` and its REPL take it: the session's settings (format, think,
// keep_alive, parameters, system, wrap, verbose), the request body they make, and the
// streamed reply, printed as it comes and stoppable with Ctrl-C (which closes the stream so
// the server stops generating).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/console.h"
#include "cli/ollama_client.h"

namespace hearth::cli {

struct SessionOptions {
  std::string model;
  std::string format;            // "" or "json"
  std::string keep_alive;        // "" leaves the server's default; else a Go duration ("5m", "0", "-1")
  nlohmann::json think;          // null: not sent; true, false, "high", "medium", "low"
  bool hide_thinking = false;
  bool word_wrap = true;
  bool verbose = false;
  bool insecure = false;
  nlohmann::json parameters = nlohmann::json::object();  // ollama options set by the user
  std::string system;            // set with /set system (sent as the first message)
};

// model, stream, options, format, keep_alive, think: the fields both routes share.
nlohmann::json session_request(const SessionOptions& options);

struct ReplyOutcome {
  std::string content;
  std::string thinking;
  ChatStats stats;
  bool interrupted = false;  // Ctrl-C stopped it
};

// Streams /api/chat or /api/generate `body`, printing the reply to console.out (wrapped to
// the terminal unless word_wrap is off). The caller prints the timings (format_metrics).
Result<ReplyOutcome> stream_reply(OllamaClient& client, const std::string& path, const nlohmann::json& body,
                                  const SessionOptions& options, Console& console);
// Asks the server to load the model (an empty /api/generate with the session's keep_alive),
// as ollama's `run` does before its first prompt, so a bad keep_alive or a model that will
// not load is reported at once.
Status preload_model(OllamaClient& client, const SessionOptions& options);

}  // namespace hearth::cli
