// cpp-httplib's Server with our own connection handling. cpp-httplib 0.11 has no hook into its
// accept loop and gives each connection a worker thread from accept to close, so slow clients
// hold every worker. We keep its accept loop and its request parsing and routing, and replace
// everything in between:
// - admission: connections beyond a total cap, or beyond a cap per client address, are answered
//   503 (JSON error body, Retry-After) and closed at once (over HTTPS: closed, since no TLS
//   session exists yet to answer in);
// - TLS: with a TlsContext each connection gets an OpenSSL session; the gate runs its handshake;
// - waiting: between requests a connection sits in the ConnectionGate (connection_gate.h), one
//   poll thread for all of them, with deadlines for the head and a minimum body rate; the head
//   is checked once (request_head.h) and a refused head answered and the connection closed, so
//   no byte that was not a request is ever served as one;
// - serving: a whole buffered request runs on a worker of our pool (process_request); the
//   connection closes after any response that left its request's body unread (a rejection
//   before the route, a body on a GET) instead of reading that body as the next request, and
//   otherwise goes back to the gate;
// - memory: after a large body its buffers are freed and the heap trimmed (malloc_trim), so a
//   few big requests do not keep the server's RSS high.
// The socket stream itself (connection_stream.h) notices a peer that left, for streaming
// responses and for current_client_connected().
#pragma once

#include <httplib.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "server/connection_gate.h"
#include "server/request_head.h"
#include "server/tls_context.h"

namespace hearth::server {

struct ConnectionLimits {
  int worker_threads = 32;           // requests served at once
  size_t max_connections = 512;      // open connections in all; beyond: 503
  size_t max_per_client = 128;       // open connections from one client address; beyond: 503
  GateLimits gate;
};

class HttpListener : public httplib::Server {
 public:
  HttpListener();
  ~HttpListener() override;

  void set_connection_limits(const ConnectionLimits& limits) { limits_ = limits; }
  // Serves HTTPS through this context (nullptr: plain HTTP).
  void set_tls(std::shared_ptr<const TlsContext> tls) { tls_ = std::move(tls); }

  // Fills `res` (status and body) for a request refused before cpp-httplib saw it (a refused
  // head, a deadline, a connection cap); the listener writes it with Connection: close and
  // closes. May run on the gate's thread: it must not block.
  using HeadRejector = std::function<void(const RequestHead& head, httplib::Response& res)>;
  void set_head_rejector(HeadRejector rejector) { head_rejector_ = std::move(rejector); }

  // Request bodies up to `max_bytes`, except POSTs to paths under `upload_prefix` (blob
  // uploads, read in pieces by their route straight from the connection, never buffered by the
  // gate; the connection closes after such a request), which may send up to `upload_max_bytes`.
  // Call after set_connection_limits().
  void set_body_limits(uint64_t max_bytes, std::string upload_prefix, uint64_t upload_max_bytes) {
    limits_.gate.max_body_bytes = max_bytes;
    limits_.gate.upload_prefix = std::move(upload_prefix);
    limits_.gate.upload_max_bytes = upload_max_bytes;
    set_payload_max_length(static_cast<size_t>(std::max(max_bytes, upload_max_bytes)));
  }

  // Starts the gate and the workers; call before listen_after_bind().
  void start_connections();
  // After stop(): closes waiting connections and joins the workers (running requests end first).
  void stop_connections();

 private:
  bool process_and_close_socket(socket_t sock) override;
  void serve(std::shared_ptr<Connection> connection);
  void refuse(Connection& connection, const RequestHead& head);

  ConnectionLimits limits_;
  HeadRejector head_rejector_;
  std::shared_ptr<const TlsContext> tls_;
  std::unique_ptr<ConnectionGate> gate_;
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::mutex counts_mu_;
  size_t open_connections_ = 0;
  std::map<std::string, size_t> open_by_client_;
};

// Called while answering a request (a pre-routing handler, an error handler): the connection
// closes after this response. The handler should also set "Connection: close" on it.
void close_connection_after_response();

// True while the client whose request this thread is handling is still connected (true on a
// thread that is not handling a request).
bool current_client_connected();

}  // namespace hearth::server
