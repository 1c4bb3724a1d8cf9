// HTTPS (--ssl-cert-file / --ssl-key-file): a self-signed certificate made with the openssl CLI
// at test time; requests through cpp-httplib's SSLClient are answered, streams included; plain
// HTTP bytes sent to the HTTPS port are never answered as a request; connections that never
// finish (or never start) their handshake hold no worker; unusable files are a clear error.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>

#include "common/loopback_socket.h"
#include "server_fixture.h"

namespace hearth::test {
namespace {

using Clock = std::chrono::steady_clock;

class Tls : public ServerTest {
 protected:
  void SetUp() override {
    std::signal(SIGPIPE, SIG_IGN);  // as `hearth serve` does: OpenSSL writes with write(2)
    dir_ = ::testing::TempDir() + "/hearth-tls-" + std::to_string(::getpid());
    cert_ = dir_ + "/cert.pem";
    key_ = dir_ + "/key.pem";
    const std::string cmd = "mkdir -p '" + dir_ + "' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
                            "-subj /CN=localhost -keyout '" + key_ + "' -out '" + cert_ + "' >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl CLI failed: " << cmd;
    ServerTest::SetUp();
    server::ServerOptions o;
    o.max_body_bytes = 256 * 1024;
    o.http_threads = 4;
    o.tls_cert_file = cert_;
    o.tls_key_file = key_;
    restart(o);
  }
  void TearDown() override {
    ServerTest::TearDown();
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::unique_ptr<httplib::SSLClient> client() {
    auto cli = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
    cli->enable_server_certificate_verification(false);
    cli->set_read_timeout(10, 0);
    return cli;
  }
  std::string dir_, cert_, key_;
};

TEST_F(Tls, RequestsAndStreamsOverHttps) {
  auto cli_owner = client();
  auto& cli = *cli_owner;
  auto health = cli.Get("/health");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  auto gen = cli.Post("/api/generate", R"({"model":"scripted","prompt":"x","stream":false,"options":{"num_predict":3}})",
                      "application/json");
  ASSERT_TRUE(gen);
  EXPECT_EQ(gen->status, 200) << gen->body;
  EXPECT_NE(gen->body.find("\"done\":true"), std::string::npos) << gen->body;
  // Several requests on one kept-alive TLS connection, one of them streamed.
  auto stream = cli.Post("/v1/chat/completions", R"({"stream":true,"max_tokens":8,"messages":[{"role":"user","content":"go"}]})",
                         "application/json");
  ASSERT_TRUE(stream);
  EXPECT_EQ(stream->status, 200);
  EXPECT_NE(stream->body.find("data: [DONE]"), std::string::npos) << stream->body;
  EXPECT_EQ(backend_->records().size(), 2u);
}

TEST_F(Tls, PlainHttpToTheHttpsPortIsNeverServed) {
  auto r = raw_exchange(port_, raw_request("POST", "/api/generate", R"({"model":"scripted","prompt":"x","stream":false})"), std::chrono::milliseconds(1500));
  EXPECT_EQ(r.responses(), 0) << r.bytes;
  EXPECT_TRUE(r.closed);
  EXPECT_TRUE(backend_->records().empty());
}

TEST_F(Tls, StalledHandshakesHoldNoWorker) {
  // 4 workers; 20 connections that never start a handshake and 20 that send half a ClientHello.
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) {
    const int fd = connect_loopback(port_);
    ASSERT_GE(fd, 0);
    if (i % 2 == 1) ::send(fd, "\x16\x03\x01\x02\x00\x01", 6, MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  auto cli_owner = client();
  auto& cli = *cli_owner;
  const auto start = Clock::now();
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.0);
  for (int fd : fds) ::close(fd);
}

TEST_F(Tls, UnusableFilesAreAClearError) {
  server::ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.tls_cert_file = dir_ + "/missing.pem";
  o.tls_key_file = key_;
  auto st = server::HttpServer(o).bind();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("--ssl-cert-file " + o.tls_cert_file), std::string::npos) << st.error().message;
  // A key that is not the certificate's.
  const std::string other = dir_ + "/other.pem";
  ASSERT_EQ(std::system(("openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:prime256v1 -out '" + other + "' 2>/dev/null").c_str()), 0);
  o.tls_cert_file = cert_;
  o.tls_key_file = other;
  st = server::HttpServer(o).bind();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message.rfind("--ssl-key-file " + other + ": ", 0), 0u) << st.error().message;
}

}  // namespace
}  // namespace hearth::test
