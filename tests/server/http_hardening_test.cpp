// Hostile bytes over raw sockets (docs/security.md): a rejected request's body is never served
// as the next request; malformed heads and ambiguous framing are answered at once and the
// connection closed; the Host allowlist and exact Origin parsing; a resumable stream's live
// response never depends on its replay buffer; a busy port is refused.
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace hearth::test {
namespace {

using namespace std::chrono_literals;

const std::string kGenerate = R"({"model":"scripted","prompt":"x","stream":false,"options":{"num_predict":3}})";

// A valid completion request: served, it would reach the backend and answer a second time.
std::string smuggled() { return raw_request("POST", "/api/generate", kGenerate); }

class HttpHardening : public ServerTest {
 protected:
  // One response, then the server closed, and nothing reached the backend.
  void expect_only_rejection(const RawReply& r, int status, const std::string& what) {
    EXPECT_EQ(r.first_status(), status) << what << "\n" << r.bytes;
    EXPECT_EQ(r.responses(), 1) << what << "\n" << r.bytes;
    EXPECT_TRUE(r.closed) << what;
    EXPECT_LT(r.seconds, 2.0) << what;
    EXPECT_TRUE(backend_->records().empty()) << what << ": the smuggled request ran";
  }
};

TEST_F(HttpHardening, RejectedRequestBodyIsNeverServedAsTheNextRequest) {
  // Foreign Origin: 403, and the body (a whole request) must not run.
  auto r = raw_exchange(port_, raw_request("POST", "/api/generate", smuggled(), "Origin: https://evil.example\r\n"));
  expect_only_rejection(r, 403, "foreign origin");
  EXPECT_NE(r.bytes.find("Connection: close"), std::string::npos);
  // The same body sent chunked.
  const std::string inner = smuggled();
  char size[16];
  std::snprintf(size, sizeof(size), "%zx", inner.size());
  r = raw_exchange(port_, "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://evil.example\r\n"
                          "Transfer-Encoding: chunked\r\n\r\n" + std::string(size) + "\r\n" + inner + "\r\n0\r\n\r\n");
  expect_only_rejection(r, 403, "foreign origin, chunked");
  // A DNS-rebinding Host.
  r = raw_exchange(port_, "POST /api/generate HTTP/1.1\r\nHost: evil.example\r\nContent-Length: " +
                              std::to_string(inner.size()) + "\r\n\r\n" + inner);
  expect_only_rejection(r, 403, "foreign host");
  // A body on a GET: cpp-httplib never reads it.
  r = raw_exchange(port_, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(inner.size()) +
                              "\r\n\r\n" + inner);
  EXPECT_EQ(r.first_status(), 200);
  EXPECT_EQ(r.responses(), 1) << r.bytes;
  EXPECT_TRUE(backend_->records().empty());
  // 404 and 405: no route, so the body is read and discarded; only one answer either way.
  for (const char* path : {"/nope", "/api/tags"}) {
    r = raw_exchange(port_, raw_request(path == std::string("/nope") ? "POST" : "DELETE", path, inner), 1000ms);
    EXPECT_EQ(r.responses(), 1) << path << "\n" << r.bytes;
    EXPECT_TRUE(backend_->records().empty()) << path;
  }
}

TEST_F(HttpHardening, WrongApiKeyBodyIsNeverServed) {
  server::ServerOptions o;
  o.api_key = "k3y";
  o.max_body_bytes = 256 * 1024;
  restart(o);
  const std::string inner = raw_request("POST", "/api/generate", kGenerate, "Authorization: Bearer k3y\r\n");
  auto r = raw_exchange(port_, raw_request("POST", "/api/generate", inner, "Authorization: Bearer wrong\r\n"));
  expect_only_rejection(r, 401, "bad key");
  // Keep-alive still works for accepted requests: two pipelined GETs get two answers.
  const std::string ok = "GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k3y\r\n\r\n";
  r = raw_exchange(port_, ok + ok, 500ms);
  EXPECT_EQ(r.responses(), 2) << r.bytes;
  EXPECT_FALSE(r.closed);
}

TEST_F(HttpHardening, MalformedHeadsAreAnsweredAndTheConnectionClosed) {
  struct Case {
    std::string name;
    std::string head;
    int status;
  };
  const std::string tail = "\r\n\r\n" + smuggled();
  const Case cases[] = {
      {"garbage request line", "GARBAGE" + tail, 400},
      {"three words, not HTTP", "GET / FTP/1.0" + tail, 400},
      {"two spaces", "GET  /health HTTP/1.1" + tail, 400},
      {"negative length", "POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Length: -5" + tail, 400},
      {"non-numeric length", "POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc" + tail, 400},
      {"two lengths", "POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6" + tail, 400},
      {"length and chunked", "POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked" + tail, 400},
      {"unknown coding", "POST /api/generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked" + tail, 400},
      {"space before colon", "POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Length : 5" + tail, 400},
      {"folded line", "GET /health HTTP/1.1\r\nHost: x\r\n  folded" + tail, 400},
      {"bare LF", "GET /health HTTP/1.1\nHost: x" + tail, 400},
      {"huge length", "POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000" + tail, 413},
      {"over the limit", "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 262145" + tail, 413},
  };
  for (const auto& c : cases) {
    auto r = raw_exchange(port_, c.head);
    expect_only_rejection(r, c.status, c.name);
    EXPECT_NE(r.bytes.find("Connection: close"), std::string::npos) << c.name;
  }
  // The answers keep their dialect's error shape.
  auto r = raw_exchange(port_, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n");
  EXPECT_EQ(api::Json::parse(r.first_body(), nullptr, false)["error"]["type"], "request_too_large") << r.bytes;
  r = raw_exchange(port_, "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n");
  EXPECT_TRUE(api::Json::parse(r.first_body(), nullptr, false)["error"].is_string()) << r.bytes;
  EXPECT_EQ(get("/health").status, 200);
}

TEST_F(HttpHardening, HeadDeadlineAndUnframedPost) {
  server::ServerOptions o;
  o.max_body_bytes = 256 * 1024;
  restart(o);
  // A POST without Content-Length or Transfer-Encoding has no body: answered at once (bad
  // JSON) instead of read until the client closes.
  auto r = raw_exchange(port_, "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 2000ms);
  EXPECT_EQ(r.first_status(), 400) << r.bytes;
  EXPECT_LT(r.seconds, 1.9);
  // Pipelined complete requests are all served, in order.
  const std::string health = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  r = raw_exchange(port_, health + raw_request("POST", "/api/generate", kGenerate) + health, 3000ms);
  EXPECT_EQ(r.responses(), 3) << r.bytes;
  EXPECT_EQ(backend_->records().size(), 1u);
}

TEST_F(HttpHardening, HostAllowlistStopsDnsRebinding) {
  EXPECT_EQ(get("/api/tags", {{"Host", "localhost:11434"}}).status, 200);
  EXPECT_EQ(get("/api/tags", {{"Host", "127.0.0.1"}}).status, 200);
  EXPECT_EQ(get("/api/tags", {{"Host", "[::1]:8080"}}).status, 200);
  EXPECT_EQ(get("/api/tags", {{"Host", "ui.localhost"}}).status, 200);
  auto evil = get("/api/tags", {{"Host", "evil.example:11434"}});
  EXPECT_EQ(evil.status, 403);
  EXPECT_TRUE(evil.json()["error"].is_string()) << evil.body;  // ollama shape
  auto evil_openai = get("/v1/models", {{"Host", "evil.example"}});
  EXPECT_EQ(evil_openai.status, 403);
  EXPECT_TRUE(evil_openai.json()["error"]["message"].is_string()) << evil_openai.body;
  EXPECT_EQ(get("/props", {{"Host", "localhost.evil.example"}}).status, 403);
  EXPECT_EQ(get("/health", {{"Host", "evil.example"}}).status, 200);  // open, like the key check

  server::ServerOptions listed;
  listed.allowed_hosts = {"box.lan", "*.corp.example"};
  restart(listed);
  EXPECT_EQ(get("/api/tags", {{"Host", "box.lan:11434"}}).status, 200);
  EXPECT_EQ(get("/api/tags", {{"Host", "a.corp.example"}}).status, 200);
  EXPECT_EQ(get("/api/tags", {{"Host", "corp.example.evil"}}).status, 403);

  server::ServerOptions keyed;
  keyed.api_key = "k3y";
  restart(keyed);
  EXPECT_EQ(get("/api/tags", {{"Host", "evil.example"}, {"Authorization", "Bearer k3y"}}).status, 200);
}

// A page this server served under a LAN name (`hearth serve --host 0.0.0.0`, opened from
// another machine) calls back to the same origin: allowed without --origins. Another port,
// scheme or name is still cross-origin, and a name the Host check refuses never gets this far.
TEST_F(HttpHardening, SameOriginPagesOnLanNamesAreAllowed) {
  server::ServerOptions listed;
  listed.allowed_hosts = {"box.lan"};
  restart(listed);
  const std::string self = "box.lan:" + std::to_string(port_);
  auto r = get("/api/version", {{"Host", self}, {"Origin", "http://" + self}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "http://" + self);
  EXPECT_EQ(get("/api/version", {{"Host", self}, {"Origin", "http://box.lan:" + std::to_string(port_ + 1)}}).status, 403);
  EXPECT_EQ(get("/api/version", {{"Host", self}, {"Origin", "https://" + self}}).status, 403);
  EXPECT_EQ(get("/api/version", {{"Host", self}, {"Origin", "http://other.lan:" + std::to_string(port_)}}).status, 403);
  const std::string evil = "evil.example:" + std::to_string(port_);
  EXPECT_EQ(get("/api/version", {{"Host", evil}, {"Origin", "http://" + evil}}).status, 403);  // the Host check
  EXPECT_EQ(get("/health", {{"Host", evil}, {"Origin", "http://" + evil}}).status, 403);       // /health skips it

  server::ServerOptions keyed;  // any Host passes with a key; the key is still required
  keyed.api_key = "k3y";
  restart(keyed);
  const std::string any = "evil.example:" + std::to_string(port_);
  EXPECT_EQ(get("/api/version", {{"Host", any}, {"Origin", "http://" + any}}).status, 401);
  EXPECT_EQ(get("/api/version", {{"Host", any}, {"Origin", "http://" + any}, {"Authorization", "Bearer k3y"}}).status, 200);
}

TEST_F(HttpHardening, OriginIsParsedExactly) {
  for (const char* bad : {"http://localhost:80@evil.com", "http://localhost.evil.com", "http://127.0.0.1.nip.io",
                          "http://localhost/path", "http://localhost:99999", "null"}) {
    auto r = get("/api/version", {{"Origin", bad}});
    EXPECT_EQ(r.status, 403) << bad;
  }
  for (const char* good : {"http://localhost:5173", "http://127.0.0.1", "http://[::1]:8080", "https://localhost"}) {
    auto r = get("/api/version", {{"Origin", good}});
    EXPECT_EQ(r.status, 200) << good;
    EXPECT_EQ(r.header("Access-Control-Allow-Origin"), good);
  }
}

TEST_F(HttpHardening, LiveStreamOutlivesItsReplayBuffer) {
  server::ServerOptions o;
  o.stream_buffer_bytes = 64;  // far less than one response
  restart(o);
  const std::string body = R"({"stream":true,"max_tokens":60,"messages":[{"role":"user","content":"go"}]})";
  for (int run = 0; run < 5; ++run) {
    const std::string id = "overflow-" + std::to_string(run);
    auto live = post_stream("/v1/chat/completions", body, {{"X-Conversation-Id", id}}, [](const std::string&) { return true; });
    EXPECT_EQ(live.status, 200);
    EXPECT_NE(live.body.find("data: [DONE]"), std::string::npos) << "run " << run << ": " << live.body;
    EXPECT_NE(live.body.find("\"finish_reason\":\"length\""), std::string::npos) << live.body;
    // A later replay from the start is refused: those bytes were dropped.
    EXPECT_EQ(get("/v1/stream/" + id + "?from=0").status, 410);
  }
  // Non-streaming with a conversation id: the whole answer too.
  auto whole = post("/api/generate", R"({"model":"scripted","prompt":"x","stream":false,"options":{"num_predict":40}})",
                    {{"X-Conversation-Id", "overflow-whole"}});
  EXPECT_EQ(whole.status, 200);
  EXPECT_TRUE(whole.json()["done"].get<bool>()) << whole.body;
}

TEST(HttpServerBind, BusyPortIsRefused) {
  server::ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  server::HttpServer first(o);
  ASSERT_TRUE(first.bind().ok());
  first.start();
  o.port = first.port();
  server::HttpServer second(o);
  auto st = second.bind();
  EXPECT_FALSE(st.ok()) << "a second server bound port " << o.port;
  first.stop();
}

}  // namespace
}  // namespace hearth::test
