// A running HttpServer on a free loopback port over the ScriptedBackend, plus small HTTP
// client helpers, shared by the route, error and stream tests.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "api/json_fields.h"
#include "common/test_paths.h"
#include "scripted_backend.h"
#include "server/http_server.h"

namespace hearth::test {

struct HttpReply {
  bool sent = false;  // a response arrived (false: connection failed or was cancelled)
  int status = 0;
  std::string body;
  httplib::Headers headers;
  api::Json json() const;  // the body parsed (null when it is not JSON)
  std::string header(const std::string& name) const;
};

// What a raw socket got back: every byte until the server closed the connection or the wait
// ran out. For hostile bytes that a client library would refuse to send or would hide.
struct RawReply {
  std::string bytes;
  bool closed = false;   // the server closed the connection (false: still open at the deadline)
  double seconds = 0;    // until the close (or the deadline)
  int responses() const;     // status lines ("HTTP/1.x NNN") received
  int first_status() const;  // 0 when nothing came
  std::string first_body() const;  // the first response's body (Content-Length framed)
};

// Sends `bytes` exactly as given on a fresh connection to 127.0.0.1:port, then reads until the
// server closes or `wait` passes.
RawReply raw_exchange(int port, const std::string& bytes, std::chrono::milliseconds wait = std::chrono::milliseconds(3000));

// A complete request with a Content-Length body, for building hostile byte strings.
std::string raw_request(const std::string& method, const std::string& path, const std::string& body,
                        const std::string& extra_headers = "");

// The reply text every scripted completion generates.
inline const char* const kScriptedReply = " Once upon a time there was a little girl. She liked to play outside.";

std::string scripted_model_path();

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Restarts the server with these options (port and backend are filled in).
  void restart(server::ServerOptions options, bool with_backend = true);

  HttpReply get(const std::string& path, const httplib::Headers& headers = {});
  HttpReply post(const std::string& path, const std::string& body, const httplib::Headers& headers = {});
  HttpReply del(const std::string& path, const httplib::Headers& headers = {});
  HttpReply request(const std::string& method, const std::string& path, const std::string& body,
                    const httplib::Headers& headers = {});
  // POST whose response is read chunk by chunk; `on_chunk` returning false closes the connection.
  HttpReply post_stream(const std::string& path, const std::string& body, const httplib::Headers& headers,
                        const std::function<bool(const std::string&)>& on_chunk);

  // The text of the first n tokens of the scripted reply (all of them for n < 0).
  std::string scripted_text(int n = -1) const;

  std::shared_ptr<ScriptedBackend> backend_;
  std::unique_ptr<server::HttpServer> server_;
  int port_ = 0;
};

}  // namespace hearth::test
