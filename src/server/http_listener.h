// cpp-httplib's Server with our own per-connection loop. We replace its socket stream for
// three reasons: (1) writes use MSG_NOSIGNAL, so a client that vanished never raises SIGPIPE;
// (2) DataSink::is_writable() (the stream's is_writable) reports a peer that closed its socket,
// which cpp-httplib 0.11 does not notice until a write fails, so a streaming response can
// cancel its generation at once; (3) a handler that blocks (a non-streaming completion) can ask
// current_client_connected() and stop work for a client that left; (4) each request's head is
// read and checked once (request_head.h) before cpp-httplib parses it, with a deadline for the
// whole head: a head that is malformed or frames its body ambiguously is answered and the
// connection closed, so no byte that was not a request is ever served as one; (5) the
// connection is closed after any response that left its request's body unread (a rejection
// before the route, a body on a GET), instead of reading that body as the next request.
// Requests are still parsed, routed and answered by cpp-httplib itself.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "server/request_head.h"

namespace hearth::server {

class HttpListener : public httplib::Server {
 public:
  HttpListener() = default;

  // Fills `res` (status and body) for a head that check_request_head() refused; the listener
  // writes it with Connection: close and closes. Called on the connection's thread.
  using HeadRejector = std::function<void(const RequestHead& head, httplib::Response& res)>;
  void set_head_rejector(HeadRejector rejector) { head_rejector_ = std::move(rejector); }

  // Request bodies up to `max_bytes`, except POSTs to paths under `upload_prefix` (blob
  // uploads, read in pieces by their route), which may send up to `upload_max_bytes`.
  void set_body_limits(uint64_t max_bytes, std::string upload_prefix, uint64_t upload_max_bytes) {
    body_max_ = max_bytes;
    upload_prefix_ = std::move(upload_prefix);
    upload_max_ = upload_max_bytes;
    set_payload_max_length(static_cast<size_t>(std::max(max_bytes, upload_max_bytes)));
  }

 private:
  bool process_and_close_socket(socket_t sock) override;

  HeadRejector head_rejector_;
  uint64_t body_max_ = 0;
  std::string upload_prefix_;
  uint64_t upload_max_ = 0;
};

// Called while answering a request (a pre-routing handler, an error handler): the connection
// closes after this response. The handler should also set "Connection: close" on it.
void close_connection_after_response();

// True while the client whose request this thread is handling is still connected (true on a
// thread that is not handling a request).
bool current_client_connected();

}  // namespace hearth::server
