// Native-API HTTP client (see ollama_client.h).
#include "cli/ollama_client.h"

#include <httplib.h>

#include <cstdlib>
#include <optional>

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

// The server's error message from an error body ({"error": "..."} or {"error": {"message"}}).
std::string error_text(int status, const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    if (j["error"].is_string()) return j["error"].get<std::string>();
    if (j["error"].is_object() && j["error"].contains("message") && j["error"]["message"].is_string()) {
      return j["error"]["message"].get<std::string>();
    }
  }
  return "HTTP " + std::to_string(status) + (body.empty() ? "" : ": " + body);
}

Error http_failure(const ServerAddress& a, httplib::Error e) {
  return make_error(ErrorKind::kIo, "cannot reach the server at " + a.host + ":" + std::to_string(a.port) + " (" +
                                        httplib::to_string(e) + "); is `hearth serve` running?");
}

}  // namespace

Result<ServerAddress> parse_server_address(const std::string& text_in) {
  std::string text = text_in;
  ServerAddress a;
  if (text.rfind("https://", 0) == 0) {
    return make_error(ErrorKind::kInvalidArgument, "https is not supported for the local server: '" + text_in + "'");
  }
  if (text.rfind("http://", 0) == 0) text = text.substr(7);
  if (!text.empty() && text.back() == '/') text.pop_back();
  if (text.empty()) return a;
  std::string port_text;
  if (text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) return make_error(ErrorKind::kInvalidArgument, "bad address '" + text_in + "'");
    a.host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return make_error(ErrorKind::kInvalidArgument, "bad address '" + text_in + "'");
      port_text = text.substr(close + 2);
    }
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      a.host = text;
    } else {
      if (colon > 0) a.host = text.substr(0, colon);
      port_text = text.substr(colon + 1);
    }
  }
  if (!port_text.empty()) {
    char* end = nullptr;
    long port = std::strtol(port_text.c_str(), &end, 10);
    if (*end != '\0' || port < 0 || port > 65535) {
      return make_error(ErrorKind::kInvalidArgument, "bad port in '" + text_in + "'");
    }
    a.port = static_cast<int>(port);
  }
  if (a.host.empty()) a.host = "127.0.0.1";
  return a;
}

bool LineSplitter::feed(std::string_view bytes, const std::function<bool(const std::string&)>& on_line) {
  pending_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = pending_.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && !on_line(line)) {
      pending_.erase(0, nl + 1);
      return false;
    }
  }
  pending_.erase(0, start);
  return true;
}

OllamaClient::OllamaClient(ServerAddress address, std::string api_key, int timeout_seconds)
    : address_(std::move(address)), api_key_(std::move(api_key)),
      http_(std::make_unique<httplib::Client>(address_.host, address_.port)) {
  http_->set_connection_timeout(5, 0);
  http_->set_read_timeout(timeout_seconds, 0);
  http_->set_write_timeout(30, 0);
  if (!api_key_.empty()) http_->set_bearer_token_auth(api_key_);
}

OllamaClient::~OllamaClient() = default;

Result<Json> OllamaClient::get_json(const std::string& path) {
  auto res = http_->Get(path);
  if (!res) return http_failure(address_, res.error());
  if (res->status != 200) return make_error(ErrorKind::kIo, error_text(res->status, res->body));
  Json j = Json::parse(res->body, nullptr, false);
  if (j.is_discarded()) return make_error(ErrorKind::kCorrupt, "the server sent invalid JSON for " + path);
  return j;
}

Result<std::string> OllamaClient::version() {
  HEARTH_ASSIGN(Json j, get_json("/api/version"));
  if (!j.contains("version") || !j["version"].is_string()) return make_error(ErrorKind::kCorrupt, "no version in /api/version");
  return j["version"].get<std::string>();
}

Result<std::vector<std::string>> OllamaClient::model_names() {
  HEARTH_ASSIGN(Json j, get_json("/api/tags"));
  std::vector<std::string> names;
  if (j.contains("models") && j["models"].is_array()) {
    for (const auto& m : j["models"]) {
      if (m.contains("name") && m["name"].is_string()) names.push_back(m["name"].get<std::string>());
    }
  }
  return names;
}

Result<ChatStats> OllamaClient::chat(const std::string& model, const std::vector<ChatMessage>& messages,
                                     const Json& options, const std::function<bool(std::string_view)>& on_text) {
  Json body = {{"model", model}, {"stream", true}, {"messages", Json::array()}};
  for (const auto& m : messages) body["messages"].push_back(Json{{"role", m.role}, {"content", m.content}});
  if (options.is_object() && !options.empty()) body["options"] = options;

  ChatStats stats;
  std::optional<Error> stream_error;
  bool stopped = false;
  LineSplitter lines;
  std::string error_body;
  int status = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/api/chat";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  if (!api_key_.empty()) req.set_header("Authorization", "Bearer " + api_key_);
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      error_body.append(data, n);
      return true;
    }
    return lines.feed(std::string_view(data, n), [&](const std::string& line) {
      Json j = Json::parse(line, nullptr, false);
      if (!j.is_object()) {
        stream_error = make_error(ErrorKind::kCorrupt, "the server sent a line that is not JSON: " + line);
        return false;
      }
      if (j.contains("error")) {
        stream_error = make_error(ErrorKind::kIo, error_text(500, line));
        return false;
      }
      if (j.contains("message") && j["message"].contains("content") && j["message"]["content"].is_string()) {
        const std::string piece = j["message"]["content"].get<std::string>();
        if (!piece.empty() && !on_text(piece)) {
          stopped = true;
          return false;
        }
      }
      if (j.value("done", false)) {
        stats.done_reason = j.value("done_reason", "");
        stats.prompt_eval_count = j.value("prompt_eval_count", int64_t{0});
        stats.eval_count = j.value("eval_count", int64_t{0});
        stats.eval_duration_ns = j.value("eval_duration", int64_t{0});
        stats.total_duration_ns = j.value("total_duration", int64_t{0});
      }
      return true;
    });
  };
  auto res = http_->send(req);
  if (stream_error) return *stream_error;
  if (stopped) {
    stats.done_reason = "interrupted";
    return stats;
  }
  if (!res) return http_failure(address_, res.error());
  if (status != 200) return make_error(ErrorKind::kIo, error_text(status, error_body));
  return stats;
}

}  // namespace hearth::cli
