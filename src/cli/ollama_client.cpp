// Native-API HTTP client (see ollama_client.h).
#include "cli/ollama_client.h"

#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace hearth::cli {
namespace {

using Json = nlohmann::json;

ErrorKind kind_for_status(int status) {
  if (status == 0) return ErrorKind::kUnavailable;
  if (status == 404) return ErrorKind::kNotFound;
  if (status == 400) return ErrorKind::kInvalidArgument;
  return ErrorKind::kIo;
}

// What went wrong with the connection, in words.
std::string connection_problem(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return "nothing is listening there";
    case httplib::Error::ConnectionTimeout: return "the connection timed out";
    case httplib::Error::Read: return "the connection broke while reading the answer";
    case httplib::Error::Write: return "the connection broke while sending the request";
    default: return httplib::to_string(e);
  }
}

}  // namespace

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

std::string ServerAddress::to_string() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool ServerAddress::is_loopback() const {
  return host == "localhost" || host == "::1" || host == "0.0.0.0" || host == "::" || host.rfind("127.", 0) == 0;
}

ChatStats chat_stats_from_json(const Json& j) {
  ChatStats s;
  auto num = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<int64_t>() : int64_t{0};
  };
  if (j.contains("done_reason") && j["done_reason"].is_string()) s.done_reason = j["done_reason"].get<std::string>();
  s.total_duration_ns = num("total_duration");
  s.load_duration_ns = num("load_duration");
  s.prompt_eval_count = num("prompt_eval_count");
  s.prompt_eval_duration_ns = num("prompt_eval_duration");
  s.eval_count = num("eval_count");
  s.eval_duration_ns = num("eval_duration");
  return s;
}

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

Error OllamaClient::failure(int status, const std::string& body) const {
  if (status == 0) {
    return make_error(ErrorKind::kUnavailable, "cannot reach the server at " + address_.to_string() + " (" + body +
                                                   "); start it with `hearth serve` or set HEARTH_HOST");
  }
  return make_error(kind_for_status(status), error_text(status, body));
}

Result<Json> OllamaClient::call(const std::string& method, const std::string& path, const Json* body, int* status_out) {
  httplib::Request req;
  req.method = method;
  req.path = path;
  if (body != nullptr) {
    req.body = body->dump();
    req.set_header("Content-Type", "application/json");
  }
  auto res = http_->send(req);
  if (status_out != nullptr) *status_out = res ? res->status : 0;
  if (!res) return failure(0, connection_problem(res.error()));
  if (res->status < 200 || res->status >= 300) return failure(res->status, res->body);
  if (res->body.empty()) return Json::object();
  Json j = Json::parse(res->body, nullptr, false);
  if (j.is_discarded()) return make_error(ErrorKind::kCorrupt, "the server sent invalid JSON for " + method + " " + path);
  return j;
}

Result<std::string> OllamaClient::version() {
  HEARTH_ASSIGN(Json j, call("GET", "/api/version", nullptr));
  if (!j.contains("version") || !j["version"].is_string()) return make_error(ErrorKind::kCorrupt, "no version in /api/version");
  return j["version"].get<std::string>();
}

Result<std::vector<std::string>> OllamaClient::model_names() {
  HEARTH_ASSIGN(Json j, call("GET", "/api/tags", nullptr));
  std::vector<std::string> names;
  if (j.contains("models") && j["models"].is_array()) {
    for (const auto& m : j["models"]) {
      if (m.contains("name") && m["name"].is_string()) names.push_back(m["name"].get<std::string>());
    }
  }
  return names;
}

Status OllamaClient::stream(const std::string& path, const Json& body, const std::function<bool(const Json&)>& on_chunk,
                            int* status_out) {
  cancelled_ = false;
  std::optional<Error> stream_error;
  bool stopped = false;
  LineSplitter lines;
  std::string error_body;
  int status = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (cancelled_.load()) return false;
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
      if (!on_chunk(j)) {
        stopped = true;
        return false;
      }
      return true;
    });
  };
  auto res = http_->send(req);
  if (status_out != nullptr) *status_out = status;
  if (stream_error) return *stream_error;
  if (stopped || cancelled_.load()) return ok_status();
  if (!res) return failure(0, connection_problem(res.error()));
  if (status != 200) return failure(status, error_body);
  if (!lines.pending().empty()) return make_error(ErrorKind::kCorrupt, "the stream ended inside a line: " + lines.pending());
  return ok_status();
}

void OllamaClient::cancel() {
  cancelled_ = true;
  http_->stop();
}

Result<bool> OllamaClient::blob_exists(const std::string& digest) {
  int status = 0;
  auto r = call("HEAD", "/api/blobs/" + digest, nullptr, &status);
  if (r.ok()) return true;
  if (status == 404) return false;
  return r.error();
}

Status OllamaClient::upload_blob(const std::string& digest, const std::string& path,
                                 const std::function<void(uint64_t, uint64_t)>& on_sent) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorKind::kIo, "cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return make_error(ErrorKind::kIo, "cannot stat '" + path + "': " + std::strerror(errno));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  std::string buffer(1 << 20, '\0');
  bool read_failed = false;
  auto provider = [&](size_t offset, size_t length, httplib::DataSink& sink) {
    const size_t n = std::min(length, buffer.size());
    ssize_t got = ::pread(fd, buffer.data(), n, static_cast<off_t>(offset));
    if (got <= 0) {
      read_failed = true;
      return false;
    }
    sink.write(buffer.data(), static_cast<size_t>(got));
    if (on_sent) on_sent(offset + static_cast<uint64_t>(got), size);
    return true;
  };
  auto res = http_->Post(("/api/blobs/" + digest).c_str(), static_cast<size_t>(size), provider, "application/octet-stream");
  ::close(fd);
  if (read_failed) return make_error(ErrorKind::kIo, "cannot read '" + path + "'");
  if (!res) return failure(0, connection_problem(res.error()));
  if (res->status < 200 || res->status >= 300) return failure(res->status, res->body);
  return ok_status();
}

}  // namespace hearth::cli
