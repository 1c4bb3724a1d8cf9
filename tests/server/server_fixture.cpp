// Server test fixture and HTTP helpers (see server_fixture.h).
#include "server_fixture.h"

namespace hearth::test {

api::Json HttpReply::json() const {
  auto parsed = api::Json::parse(body, nullptr, false);
  return parsed.is_discarded() ? api::Json() : parsed;
}

std::string HttpReply::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
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
