// A small client for Hearth's (and ollama's) native HTTP API, used by the command line: the
// server's version, the models it serves, and streaming chat. It links no engine; it is a
// plain HTTP client like any other.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace httplib {
class Client;
}

namespace hearth::cli {

struct ServerAddress {
  std::string host = "127.0.0.1";
  int port = 11434;
};

// Parses "host", "host:port", "http://host:port" or ":port" (HEARTH_HOST's forms; IPv6 in
// brackets, "[::1]:8080"). https is refused: the local server speaks plain HTTP.
Result<ServerAddress> parse_server_address(const std::string& text);

struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatStats {
  std::string done_reason;
  int64_t prompt_eval_count = 0;
  int64_t eval_count = 0;
  int64_t eval_duration_ns = 0;
  int64_t total_duration_ns = 0;
};

// Splits a byte stream into lines (NDJSON); keeps a partial line until its newline arrives.
class LineSplitter {
 public:
  // Appends bytes and calls on_line for each complete line (without the newline).
  bool feed(std::string_view bytes, const std::function<bool(const std::string&)>& on_line);
  const std::string& pending() const { return pending_; }

 private:
  std::string pending_;
};

class OllamaClient {
 public:
  OllamaClient(ServerAddress address, std::string api_key, int timeout_seconds = 600);
  ~OllamaClient();

  const ServerAddress& address() const { return address_; }
  Result<std::string> version();
  // Names from /api/tags.
  Result<std::vector<std::string>> model_names();
  // POST /api/chat with stream: true; `on_text` receives each piece of the reply as it arrives
  // (return false to stop early). Errors: connection failures, HTTP errors with the server's
  // message, and errors reported inside the stream.
  Result<ChatStats> chat(const std::string& model, const std::vector<ChatMessage>& messages,
                         const nlohmann::json& options, const std::function<bool(std::string_view)>& on_text);

 private:
  Result<nlohmann::json> get_json(const std::string& path);

  ServerAddress address_;
  std::string api_key_;
  std::unique_ptr<httplib::Client> http_;
};

}  // namespace hearth::cli
