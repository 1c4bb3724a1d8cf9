// cpp-httplib's Server with our own per-connection loop. We replace its socket stream for
// three reasons: (1) writes use MSG_NOSIGNAL, so a client that vanished never raises SIGPIPE;
// (2) DataSink::is_writable() (the stream's is_writable) reports a peer that closed its socket,
// which cpp-httplib 0.11 does not notice until a write fails, so a streaming response can
// cancel its generation at once; (3) a handler that blocks (a non-streaming completion) can ask
// current_client_connected() and stop work for a client that left. Requests are still parsed,
// routed and answered by cpp-httplib itself.
#pragma once

#include <httplib.h>

namespace hearth::server {

class HttpListener : public httplib::Server {
 public:
  HttpListener() = default;

 private:
  bool process_and_close_socket(socket_t sock) override;
};

// True while the client whose request this thread is handling is still connected (true on a
// thread that is not handling a request).
bool current_client_connected();

}  // namespace hearth::server
