// Admission, gate and workers around cpp-httplib (see http_listener.h).
#include "server/http_listener.h"

#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace hearth::server {
namespace {

// A request at least this long (head and body) frees its buffers and trims the heap afterwards.
constexpr uint64_t kLargeRequestBytes = 1u << 20;

int to_ms(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

const char* status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// The answer to a request refused before cpp-httplib saw it, with Connection: close.
std::string rejection_bytes(const HttpListener::HeadRejector& rejector, const RequestHead& head) {
  httplib::Response res;
  res.status = head.status;
  if (rejector) rejector(head, res);
  std::string type = res.get_header_value("Content-Type");
  if (type.empty()) type = "text/plain";
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + status_text(res.status) + "\r\n";
  out += "Content-Type: " + type + "\r\nContent-Length: " + std::to_string(res.body.size()) + "\r\n";
  if (res.status == 503) out += "Retry-After: 1\r\n";
  out += "Connection: close\r\n\r\n";
  out += res.body;
  return out;
}

thread_local ConnectionStream* t_current_stream = nullptr;
thread_local bool t_close_after_response = false;

}  // namespace

bool current_client_connected() { return t_current_stream == nullptr || t_current_stream->peer_connected(); }

void close_connection_after_response() { t_close_after_response = true; }

HttpListener::HttpListener() {
  // cpp-httplib's own pool only runs process_and_close_socket, which returns at once.
  new_task_queue = [] { return new httplib::ThreadPool(2); };
}

HttpListener::~HttpListener() { stop_connections(); }

void HttpListener::start_connections() {
  // cpp-httplib listens with a backlog of 5: a burst of connections beyond it waits for SYN
  // retransmits (1 s, 3 s, ...). Listening again on the bound socket only raises the backlog.
  if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, SOMAXCONN);
  // Without an upload path the gate's body limit is the server's (set_payload_max_length);
  // with one, set_body_limits() set both.
  if (limits_.gate.upload_prefix.empty()) limits_.gate.max_body_bytes = payload_max_length_;
  limits_.gate.idle_timeout = std::chrono::seconds(keep_alive_timeout_sec_);
  workers_ = std::make_unique<httplib::ThreadPool>(static_cast<size_t>(std::max(1, limits_.worker_threads)));
  gate_ = std::make_unique<ConnectionGate>(
      limits_.gate,
      [this](std::shared_ptr<Connection> c) { workers_->enqueue([this, c = std::move(c)]() mutable { serve(std::move(c)); }); },
      [this](Connection& c, const RequestHead& head) { refuse(c, head); });
  gate_->start();
}

void HttpListener::stop_connections() {
  if (gate_) gate_->stop();
  if (workers_) workers_->shutdown();
  workers_.reset();
  gate_.reset();
}

void HttpListener::refuse(Connection& c, const RequestHead& head) {
  c.stream.send_now(rejection_bytes(head_rejector_, head));
}

bool HttpListener::process_and_close_socket(socket_t sock) {
  int one = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::string ip;
  int port = 0;
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0) socket_address_text(addr, ip, port);

  bool admitted = false;
  std::string why;
  {
    std::lock_guard lock(counts_mu_);
    size_t& mine = open_by_client_[ip];
    if (open_connections_ >= limits_.max_connections) {
      why = "the server has " + std::to_string(open_connections_) + " connections open, its limit; retry shortly";
    } else if (mine >= limits_.max_per_client) {
      why = "this client has " + std::to_string(mine) + " connections open, the limit per client; close some or retry shortly";
    } else {
      ++open_connections_;
      ++mine;
      admitted = true;
    }
    if (mine == 0) open_by_client_.erase(ip);
  }
  auto release = [this, ip] {
    std::lock_guard lock(counts_mu_);
    --open_connections_;
    auto it = open_by_client_.find(ip);
    if (it != open_by_client_.end() && --it->second == 0) open_by_client_.erase(it);
  };
  auto c = std::make_shared<Connection>(sock, ip, to_ms(read_timeout_sec_, read_timeout_usec_),
                                        to_ms(write_timeout_sec_, write_timeout_usec_),
                                        admitted ? std::function<void()>(release) : std::function<void()>());
  c->requests_left = keep_alive_max_count_;
  if (!admitted) {
    RequestHead head;
    head.status = 503;
    head.message = why;
    if (!tls_) refuse(*c, head);
    return true;
  }
  if (tls_) {
    SSL* ssl = tls_->new_session();
    if (ssl == nullptr) return true;
    c->stream.use_tls(ssl);
  }
  if (gate_ && svr_sock_ != INVALID_SOCKET) gate_->add(std::move(c));
  return true;
}

void HttpListener::serve(std::shared_ptr<Connection> c) {
  const uint64_t start = c->stream.consumed();
  const bool last = c->requests_left <= 1 || c->peer_closed || c->body_left_unread || c->body_streamed ||
                    svr_sock_ == INVALID_SOCKET;
  bool connection_closed = false;
  t_current_stream = &c->stream;
  t_close_after_response = false;
  const bool ok = process_request(c->stream, last, connection_closed, nullptr);
  t_current_stream = nullptr;
  // A body that was not read (a rejection before the route, a body sent with a GET) must never
  // be taken for the next request.
  const bool keep = ok && !last && !connection_closed && !t_close_after_response &&
                    c->stream.consumed() >= start + c->request_bytes && svr_sock_ != INVALID_SOCKET;
  const uint64_t request_bytes = c->request_bytes;
  c->stream.release_read_bytes();
  if (keep) {
    --c->requests_left;
    gate_->add(std::move(c));
  } else {
    c.reset();
  }
  // The request's body and its copies are freed by now; give their pages back.
  if (request_bytes >= kLargeRequestBytes) ::malloc_trim(0);
}

}  // namespace hearth::server
