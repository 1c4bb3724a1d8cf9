// Server test fixture and HTTP helpers (see server_fixture.h).
#include "server_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/loopback_socket.h"

namespace hearth::test {

api::Json HttpReply::json() const {
  auto parsed = api::Json::parse(body, nullptr, false);
  return parsed.is_discarded() ? api::Json() : parsed;
}

std::string HttpReply::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

int RawReply::responses() const {
  int n = 0;
  // Status lines anywhere: a body right before the next response ends without a newline.
  for (size_t pos = 0; (pos = bytes.find("HTTP/1.", pos)) != std::string::npos; pos += 7) {
    if (pos + 12 <= bytes.size() && bytes[pos + 8] == ' ' && std::isdigit(static_cast<unsigned char>(bytes[pos + 9]))) ++n;
  }
  return n;
}

int RawReply::first_status() const {
  if (bytes.size() < 12 || bytes.compare(0, 7, "HTTP/1.") != 0) return 0;
  return std::atoi(bytes.c_str() + 9);
}

std::string RawReply::first_body() const {
  const size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string::npos) return "";
  std::string head = bytes.substr(0, head_end);
  for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t cl = head.find("content-length:");
  if (cl == std::string::npos) return "";
  const size_t len = std::strtoul(head.c_str() + cl + 15, nullptr, 10);
  return bytes.substr(head_end + 4, len);
}

RawReply raw_exchange(int port, const std::string& bytes, std::chrono::milliseconds wait) {
  RawReply r;
  const auto start = std::chrono::steady_clock::now();
  int fd = connect_loopback(port);
  if (fd < 0) return r;
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  const auto deadline = start + wait;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      r.closed = true;
      break;
    }
    r.bytes.append(buf, static_cast<size_t>(n));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  return r;
}

std::string raw_request(const std::string& method, const std::string& path, const std::string& body,
                        const std::string& extra_headers) {
  return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body;
}

std::string scripted_model_path() { return models_dir() + "/stories260K-llama-f32.gguf"; }

void ServerTest::SetUp() {
  HEARTH_REQUIRE_FILE(scripted_model_path());
  server::ServerOptions o;
  o.max_body_bytes = 256 * 1024;
  o.http_threads = 8;
  restart(o);
}

void ServerTest::TearDown() {
  if (server_) server_->stop();
  server_.reset();
  backend_.reset();
}

void ServerTest::restart(server::ServerOptions options, bool with_backend) {
  if (server_) server_->stop();
  server_.reset();
  backend_ = ScriptedBackend::create(scripted_model_path(), kScriptedReply);
  ASSERT_NE(backend_, nullptr);
  options.host = "127.0.0.1";
  options.port = 0;
  options.version = "9.9.9";
  server_ = std::make_unique<server::HttpServer>(options);
  ASSERT_TRUE(server_->bind().ok());
  port_ = server_->port();
  server_->start();
  if (with_backend) server_->set_backend(backend_);
}

std::string ServerTest::scripted_text(int n) const {
  // The scripted engine repeats its reply when asked for more tokens than it has.
  auto ids = backend_->tokenizer().encode(kScriptedReply, false, false);
  const size_t count = n < 0 ? ids.size() : static_cast<size_t>(n);
  std::string text;
  for (size_t i = 0; i < count; ++i) text += backend_->tokenizer().token_to_piece(ids[i % ids.size()], false);
  return text;
}

HttpReply ServerTest::request(const std::string& method, const std::string& path, const std::string& body,
                              const httplib::Headers& headers) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(20, 0);
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers = headers;
  if (!body.empty() || method == "POST") {
    req.body = body;
    if (!req.has_header("Content-Type")) req.set_header("Content-Type", "application/json");
  }
  auto res = cli.send(req);
  HttpReply r;
  if (res) {
    r.sent = true;
    r.status = res->status;
    r.body = res->body;
    r.headers = res->headers;
  }
  return r;
}

HttpReply ServerTest::get(const std::string& path, const httplib::Headers& headers) { return request("GET", path, "", headers); }
HttpReply ServerTest::post(const std::string& path, const std::string& body, const httplib::Headers& headers) {
  return request("POST", path, body, headers);
}
HttpReply ServerTest::del(const std::string& path, const httplib::Headers& headers) { return request("DELETE", path, "", headers); }

HttpReply ServerTest::post_stream(const std::string& path, const std::string& body, const httplib::Headers& headers,
                                  const std::function<bool(const std::string&)>& on_chunk) {
  httplib::Client cli("127.0.0.1", port_);
  cli.set_read_timeout(20, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = headers;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  HttpReply r;
  req.response_handler = [&](const httplib::Response& res) {
    r.status = res.status;
    r.headers = res.headers;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    std::string chunk(data, n);
    r.body += chunk;
    return on_chunk(chunk);
  };
  auto res = cli.send(req);
  r.sent = static_cast<bool>(res);
  return r;
}

}  // namespace hearth::test
