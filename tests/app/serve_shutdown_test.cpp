// `hearth serve` stopping under load: SIGTERM while a streaming generation runs ends that stream
// with a final error event in its API's shape and exits within 2 s. Raw sockets, so the test
// sees the exact bytes the client got before the connection closed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "app/server_process.h"
#include "common/loopback_socket.h"
#include "common/test_paths.h"

namespace hearth::test {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Reads what arrives within `ms`; false at end of stream (or an error).
bool read_some(int fd, std::string& out, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return true;
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n <= 0) return false;
  out.append(buf, static_cast<size_t>(n));
  return true;
}

// Starts a long streaming completion in `path`'s dialect and returns the socket once its first
// tokens arrived (-1 on failure); `got` holds the bytes so far.
int start_stream(int port, const std::string& path, const Json& body, std::string& got) {
  int fd = connect_loopback(port);
  if (fd < 0) return -1;
  const std::string text = body.dump();
  const std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(text.size()) + "\r\n\r\n" + text;
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) return -1;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (got.find("\r\n\r\n") == std::string::npos || got.size() < got.find("\r\n\r\n") + 200) {
    if (Clock::now() > deadline || !read_some(fd, got, 100)) return -1;
  }
  return fd;
}

TEST(ServeShutdown, SigtermDuringStreamsEndsThemWithAnErrorEventAndExitsFast) {
  const std::string model = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(model);
  ServerProcess server;
  // A context far beyond what the test waits for, so the generations are still running.
  ASSERT_TRUE(server.start({"-m", model, "--parallel", "2", "-c", "131072"})) << server.error();
  std::string sse, ndjson;
  const Json openai = {{"prompt", "Once upon a time"}, {"max_tokens", 60000}, {"ignore_eos", true}, {"stream", true}};
  const Json ollama = {{"model", "stories260K-llama-f32"}, {"prompt", "Once"}, {"stream", true},
                       {"options", {{"num_predict", 60000}, {"ignore_eos", true}}}};
  int a = start_stream(server.port(), "/v1/completions", openai, sse);
  int b = start_stream(server.port(), "/api/generate", ollama, ndjson);
  ASSERT_GE(a, 0) << sse;
  ASSERT_GE(b, 0) << ndjson;

  const auto t0 = Clock::now();
  EXPECT_EQ(server.stop(), 0);
  const double exit_s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(exit_s, 2.0);
  std::printf("exit after SIGTERM: %.3f s\n", exit_s);

  // The server is gone; what it wrote last is still in the sockets.
  while (read_some(a, sse, 1000)) {
  }
  while (read_some(b, ndjson, 1000)) {
  }
  ::close(a);
  ::close(b);
  // OpenAI: an error event, then the chunked body's terminator (no [DONE] after an error).
  EXPECT_NE(sse.find("data: {\"error\""), std::string::npos) << sse.substr(sse.size() > 400 ? sse.size() - 400 : 0);
  EXPECT_NE(sse.find("the server is shutting down"), std::string::npos);
  EXPECT_EQ(sse.substr(sse.size() - 5), "0\r\n\r\n");
  // ollama: a final {"error": ...} line.
  EXPECT_NE(ndjson.find("{\"error\":\"the server is shutting down\"}"), std::string::npos)
      << ndjson.substr(ndjson.size() > 400 ? ndjson.size() - 400 : 0);
  EXPECT_EQ(ndjson.substr(ndjson.size() - 5), "0\r\n\r\n");
}

TEST(ServeShutdown, IdleKeepAliveConnectionsDoNotDelayExit) {
  const std::string model = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(model);
  ServerProcess server;
  ASSERT_TRUE(server.start({"-m", model})) << server.error();
  int fd = connect_loopback(server.port());
  ASSERT_GE(fd, 0);
  const std::string req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string got;
  while (got.find("\r\n\r\n") == std::string::npos && read_some(fd, got, 1000)) {
  }
  const auto t0 = Clock::now();
  EXPECT_EQ(server.stop(), 0);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 2.0);
  ::close(fd);
}

}  // namespace
}  // namespace hearth::test
