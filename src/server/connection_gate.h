// Where a connection waits for its next request, off the worker threads. cpp-httplib 0.11 gives
// each connection a worker thread from accept to close, so 80 clients that send half a head (or
// a head and no body) hold 80 workers and /health times out. Here one thread polls every
// waiting connection, receives bytes as they come, checks the head once (request_head.h), and
// hands a connection to a worker only when a whole request (head and body) is buffered; after
// the response the connection comes back here. Deadlines: a connection that sends nothing for
// the idle timeout is closed; a head must be complete within the head timeout of its first byte
// (408); a body must keep up a minimum rate after a grace period (408); a head or body over its
// limit is answered at once (431, 413). Every refusal is answered and the connection closed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/connection_stream.h"
#include "server/request_head.h"

namespace hearth::server {

struct GateLimits {
  std::chrono::milliseconds idle_timeout{5000};   // no byte of a next request: close, no answer
  std::chrono::milliseconds head_timeout{10000};  // from a head's first byte to its end; else 408
  std::chrono::milliseconds body_grace{10000};    // a body may stall this long at its start ...
  uint64_t body_min_bytes_per_second = 4096;      // ... and must then average this rate; else 408
  uint64_t max_body_bytes = 32u << 20;            // larger bodies get 413
  // POSTs to paths under upload_prefix (blob uploads) may send up to upload_max_bytes; their body
  // is not buffered here but read by the route from the connection, which closes afterwards.
  std::string upload_prefix;
  uint64_t upload_max_bytes = 0;
};

// A client connection between requests (in the gate) or during one (on a worker). Closing the
// socket and releasing its place in the connection caps happen when the last owner drops it.
class Connection {
 public:
  Connection(int fd, std::string client_ip, int read_timeout_ms, int write_timeout_ms, std::function<void()> on_close);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  ConnectionStream stream;
  const std::string client_ip;
  size_t requests_left = 1000;  // keep-alive requests still allowed

  // The request the gate handed over: its checked head, its length in the buffer (head and body
  // as received, after the gate's edits), whether its body is one cpp-httplib will not read (a
  // body on a GET), and whether the client already closed its sending side.
  RequestHead head;
  uint64_t request_bytes = 0;
  bool body_left_unread = false;
  bool body_streamed = false;  // an upload: handed over after its head, its body read by the route
  bool peer_closed = false;
  bool tls_ready = false;  // the TLS handshake is done (TLS connections only)

 private:
  friend class ConnectionGate;
  struct Progress {
    std::chrono::steady_clock::time_point waiting_since;
    std::optional<std::chrono::steady_clock::time_point> first_byte;
    bool head_checked = false;
    size_t head_size = 0;
    std::chrono::steady_clock::time_point body_since;
    std::optional<ChunkedBodyScanner> chunks;
    bool wants_continue = false;
    bool continue_sent = false;
  };
  Progress progress_;
  int fd_;
  std::function<void()> on_close_;
};

class ConnectionGate {
 public:
  // A connection now holds a whole request: serve it (on a worker).
  using Dispatch = std::function<void(std::shared_ptr<Connection>)>;
  // Answers a refused request (`head.status`, `head.message`); the gate closes the connection.
  using Refuse = std::function<void(Connection&, const RequestHead&)>;

  ConnectionGate(GateLimits limits, Dispatch dispatch, Refuse refuse);
  ~ConnectionGate();

  void start();
  // Closes every waiting connection; connections added later are closed at once.
  void stop();
  // The connection waits here for its next request (which may already be buffered).
  void add(std::shared_ptr<Connection> connection);

 private:
  enum class Verdict { kWait, kReady, kClose, kRefuse };
  void run();
  Verdict examine(Connection& c, bool got_data, std::chrono::steady_clock::time_point now);
  size_t receive_limit(const Connection& c) const;

  const GateLimits limits_;
  Dispatch dispatch_;
  Refuse refuse_;
  int wake_fd_ = -1;
  std::thread thread_;
  std::mutex mu_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<Connection>> incoming_;  // under mu_
};

}  // namespace hearth::server
