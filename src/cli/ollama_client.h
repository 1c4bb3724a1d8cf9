// A client for Hearth's (and ollama's) native HTTP API, used by the command line: plain JSON
// calls (show, tags, ps, copy, delete), NDJSON streams (generate, chat, pull, push, create)
// and blob uploads. It links no engine; it is a plain HTTP client like any other. A stream can
// be cancelled from another thread (Ctrl-C in the REPL), which closes the connection so the
// server stops generating.
#pragma once

#include <atomic>
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
  std::string to_string() const;  // "127.0.0.1:11434" ("[::1]:11434" for IPv6)
  bool is_loopback() const;       // 127.x, ::1, localhost (or 0.0.0.0, which a client reaches locally)
};

// Parses "host", "host:port", "http://host:port" or ":port" (HEARTH_HOST's forms; IPv6 in
// brackets, "[::1]:8080"). https is refused: the local server speaks plain HTTP.
Result<ServerAddress> parse_server_address(const std::string& text);

// The final chunk's counters (ollama's metrics): durations in nanoseconds.
struct ChatStats {
  std::string done_reason;
  int64_t total_duration_ns = 0;
  int64_t load_duration_ns = 0;
  int64_t prompt_eval_count = 0;
  int64_t prompt_eval_duration_ns = 0;
  int64_t eval_count = 0;
  int64_t eval_duration_ns = 0;
};
// Reads the counters of a final ("done": true) chunk.
ChatStats chat_stats_from_json(const nlohmann::json& done_chunk);

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

  // One JSON request and its JSON answer (an empty body reads as {}). Errors: kUnavailable
  // when the server cannot be reached, kNotFound for a 404, kIo for other statuses, each with
  // the server's message. `status_out`, when
  // given, receives the HTTP status (0: no connection) so callers can tell 404 from the rest.
  Result<nlohmann::json> call(const std::string& method, const std::string& path, const nlohmann::json* body,
                              int* status_out = nullptr);
  // A streaming request: each NDJSON object goes to on_chunk (return false to stop reading).
  // An {"error": ...} object in the stream, an HTTP error status or a connection failure is
  // an error. Cancelled (cancel() or on_chunk false) streams end without error; `cancelled()`
  // tells which.
  Status stream(const std::string& path, const nlohmann::json& body,
                const std::function<bool(const nlohmann::json&)>& on_chunk, int* status_out = nullptr);
  // HEAD /api/blobs/DIGEST: true when the server has the blob.
  Result<bool> blob_exists(const std::string& digest);
  // POST /api/blobs/DIGEST with the file's bytes, read in pieces (files larger than memory).
  Status upload_blob(const std::string& digest, const std::string& path, const std::function<void(uint64_t, uint64_t)>& on_sent);

  // Closes the connection of the request in flight (any thread); the call returns soon after.
  void cancel();
  bool cancelled() const { return cancelled_.load(); }

 private:
  Error failure(int status, const std::string& body) const;

  ServerAddress address_;
  std::string api_key_;
  std::unique_ptr<httplib::Client> http_;
  std::atomic<bool> cancelled_{false};
};

// The server's message from an error body ({"error": "..."} or {"error": {"message"}}), else
// "HTTP 500: body".
std::string error_text(int status, const std::string& body);

}  // namespace hearth::cli
