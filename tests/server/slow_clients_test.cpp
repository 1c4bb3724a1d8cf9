// Slow and greedy clients over raw sockets (docs/security.md): connections that send half a
// head, or a head and no body, wait in the connection gate and hold no worker, so /health stays
// fast; a head must arrive by its deadline and a body keep a minimum rate (408); connections
// beyond the caps (in all, per client) get 503 with Retry-After; an oversized Content-Length is
// 413 at once; "Expect: 100-continue" and chunked bodies still work through the gate; memory a
// large body took is given back.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "common/loopback_socket.h"
#include "server_fixture.h"

namespace hearth::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Open connections that have sent `bytes` and then nothing; closed when this goes away.
class IdleClients {
 public:
  IdleClients(int port, int count, const std::string& bytes) {
    for (int i = 0; i < count; ++i) {
      const int fd = connect_loopback(port);
      if (fd < 0) continue;
      if (!bytes.empty()) ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      fds_.push_back(fd);
    }
  }
  ~IdleClients() { close_all(); }
  void close_all() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }
  size_t size() const { return fds_.size(); }

 private:
  std::vector<int> fds_;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Reads from `fd` until the peer closes or `wait` passes.
std::string read_until_close(int fd, std::chrono::milliseconds wait, bool* closed) {
  std::string out;
  const auto deadline = Clock::now() + wait;
  char buf[4096];
  *closed = false;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      *closed = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

class SlowClients : public ServerTest {};

TEST_F(SlowClients, IdleConnectionsHoldNoWorker) {
  server::ServerOptions o;
  o.http_threads = 16;
  o.max_body_bytes = 256 * 1024;
  restart(o);
  // 40 heads with no body and 40 half heads: five times the workers.
  IdleClients no_body(port_, 40, "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n");
  IdleClients half_head(port_, 40, "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le");
  ASSERT_EQ(no_body.size() + half_head.size(), 80u);
  std::this_thread::sleep_for(200ms);
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    EXPECT_EQ(get("/health").status, 200);
    EXPECT_LT(seconds_since(start), 0.5) << "/health waited behind idle connections";
  }
  auto r = post("/api/generate", R"({"model":"scripted","prompt":"x","stream":false,"options":{"num_predict":2}})");
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(SlowClients, HeadDeadlineAndBodyRate) {
  server::ServerOptions o;
  o.max_body_bytes = 256 * 1024;
  o.head_timeout_ms = 400;
  o.body_grace_ms = 300;
  o.body_min_bytes_per_second = 2000;
  restart(o);
  // Half a head, then silence: 408 after the head deadline.
  auto r = raw_exchange(port_, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", 3000ms);
  EXPECT_EQ(r.first_status(), 408) << r.bytes;
  EXPECT_TRUE(r.closed);
  EXPECT_GT(r.seconds, 0.35);
  EXPECT_LT(r.seconds, 1.5);
  EXPECT_TRUE(api::Json::parse(r.first_body(), nullptr, false).is_object()) << r.bytes;

  // A body trickling at 100 bytes/s: cut off once the grace is over (408, closed).
  const int fd = connect_loopback(port_);
  ASSERT_GE(fd, 0);
  const std::string head = "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  const auto start = Clock::now();
  std::string got;
  bool closed = false;
  while (!closed && seconds_since(start) < 5) {
    ::send(fd, "xxxxxxxxxx", 10, MSG_NOSIGNAL);
    got += read_until_close(fd, 100ms, &closed);
  }
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_NE(got.find("HTTP/1.1 408"), std::string::npos) << got;
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_TRUE(backend_->records().empty());

  // A body at a good rate after a pause within the grace is served.
  const std::string body = R"({"model":"scripted","prompt":"x","stream":false,"options":{"num_predict":2}})";
  const int fd2 = connect_loopback(port_);
  ASSERT_GE(fd2, 0);
  const std::string head2 = "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n";
  ::send(fd2, head2.data(), head2.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(200ms);
  ::send(fd2, body.data(), body.size(), MSG_NOSIGNAL);
  got = read_until_close(fd2, 3000ms, &closed);
  ::close(fd2);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
}

TEST_F(SlowClients, ConnectionCapsAnswer503) {
  server::ServerOptions o;
  o.max_body_bytes = 256 * 1024;
  o.max_connections_per_client = 4;
  restart(o);
  {
    IdleClients idle(port_, 4, "");
    ASSERT_EQ(idle.size(), 4u);
    std::this_thread::sleep_for(100ms);
    auto r = raw_exchange(port_, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 2000ms);
    EXPECT_EQ(r.first_status(), 503) << r.bytes;
    EXPECT_TRUE(r.closed);
    EXPECT_LT(r.seconds, 1.0);
    EXPECT_NE(r.bytes.find("Retry-After: 1"), std::string::npos) << r.bytes;
    EXPECT_TRUE(api::Json::parse(r.first_body(), nullptr, false)["error"]["message"].is_string()) << r.bytes;
  }
  // The places come back once those clients close.
  int status = 0;
  for (int i = 0; i < 40 && status != 200; ++i) {
    std::this_thread::sleep_for(50ms);
    status = raw_exchange(port_, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 1000ms).first_status();
  }
  EXPECT_EQ(status, 200);

  o.max_connections_per_client = 100;
  o.max_connections = 3;
  restart(o);
  IdleClients idle(port_, 3, "");
  std::this_thread::sleep_for(100ms);
  auto r = raw_exchange(port_, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 2000ms);
  EXPECT_EQ(r.first_status(), 503) << r.bytes;
}

TEST_F(SlowClients, OversizedBodyIsRefusedAtOnce) {
  for (const char* length : {"1000000000000", "262145"}) {
    const auto r = raw_exchange(port_, std::string("POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ") +
                                           length + "\r\n\r\n{",
                                3000ms);
    EXPECT_EQ(r.first_status(), 413) << r.bytes;
    EXPECT_TRUE(r.closed);
    EXPECT_LT(r.seconds, 0.5) << length;
  }
  // Chunked: refused as soon as the chunk sizes pass the limit.
  auto r = raw_exchange(port_, "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n40001\r\n", 3000ms);
  EXPECT_EQ(r.first_status(), 413) << r.bytes;
  EXPECT_LT(r.seconds, 0.5);
}

TEST_F(SlowClients, ExpectContinueAndChunkedBodies) {
  const std::string body = R"({"model":"scripted","prompt":"x","stream":false,"options":{"num_predict":2}})";
  // Expect: 100-continue gets its interim answer before the body is sent.
  const int fd = connect_loopback(port_);
  ASSERT_GE(fd, 0);
  const std::string head = "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nConnection: close\r\n"
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  bool closed = false;
  std::string got = read_until_close(fd, 500ms, &closed);
  EXPECT_EQ(got, "HTTP/1.1 100 Continue\r\n\r\n");
  ::send(fd, body.data(), body.size(), MSG_NOSIGNAL);
  got = read_until_close(fd, 3000ms, &closed);
  ::close(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_EQ(got.find("100 Continue"), std::string::npos) << "a second interim answer";

  // A chunked body in three chunks with an extension and a trailer.
  const std::string chunked = "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "5;ext=1\r\n" + body.substr(0, 5) + "\r\n" +
                              "a\r\n" + body.substr(5, 10) + "\r\n" +
                              [&] { char s[16]; std::snprintf(s, sizeof(s), "%zx", body.size() - 15); return std::string(s); }() +
                              "\r\n" + body.substr(15) + "\r\n0\r\nX-Trailer: 1\r\n\r\n";
  auto r = raw_exchange(port_, chunked + "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 3000ms);
  EXPECT_EQ(r.first_status(), 200) << r.bytes;
  EXPECT_EQ(r.responses(), 2) << r.bytes;
  EXPECT_EQ(backend_->records().size(), 2u);
  // Malformed chunk framing: 400 and closed.
  r = raw_exchange(port_, "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n");
  EXPECT_EQ(r.first_status(), 400) << r.bytes;
  EXPECT_TRUE(r.closed);
}

}  // namespace
}  // namespace hearth::test
