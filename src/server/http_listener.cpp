// Per-connection loop and socket stream for cpp-httplib (see http_listener.h).
#include "server/http_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>
#include <string_view>

namespace hearth::server {
namespace {

int poll_one(int fd, short events, int timeout_ms, short* revents) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (revents) *revents = p.revents;
  return r;
}

int to_ms(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

void address_of(const sockaddr_storage& addr, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    port = ntohs(a->sin6_port);
  }
  ip = buf;
}

class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

  bool is_readable() const override { return wait_readable(read_timeout_ms_); }

  // Buffered bytes, or the socket has something (data, or end of file) within the timeout.
  bool wait_readable(int timeout_ms) const {
    if (pos_ < buf_.size()) return true;
    short rev = 0;
    return poll_one(fd_, POLLIN, timeout_ms, &rev) > 0;
  }

  bool is_writable() const override {
    if (!peer_connected()) return false;
    short rev = 0;
    return poll_one(fd_, POLLOUT, write_timeout_ms_, &rev) > 0 && (rev & POLLOUT);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == buf_.size()) {
      if (!is_readable()) return -1;
      buf_.resize(kReadChunk);
      pos_ = 0;
      ssize_t n = recv_some(buf_.data(), buf_.size());
      buf_.resize(n > 0 ? static_cast<size_t>(n) : 0);
      if (n <= 0) return n;
    }
    size_t n = std::min(size, buf_.size() - pos_);
    std::copy(buf_.data() + pos_, buf_.data() + pos_ + n, ptr);
    pos_ += n;
    consumed_ += n;
    return static_cast<ssize_t>(n);
  }

  enum class HeadRead { kComplete, kClosed, kTimeout, kTooLarge };
  // Buffers bytes until they hold a whole request head (up to "\r\n\r\n"), by `deadline`.
  // kComplete sets `head` to it (valid until the next read or insert).
  HeadRead fill_head(size_t max_bytes, std::chrono::steady_clock::time_point deadline, std::string_view& head) {
    buf_.erase(0, pos_);
    pos_ = 0;
    size_t searched = 0;
    for (;;) {
      const size_t end = buf_.find("\r\n\r\n", searched);
      if (end != std::string::npos && end + 4 <= max_bytes) {
        head = std::string_view(buf_).substr(0, end + 4);
        return HeadRead::kComplete;
      }
      if (buf_.size() >= max_bytes) return HeadRead::kTooLarge;
      searched = buf_.size() >= 3 ? buf_.size() - 3 : 0;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return HeadRead::kTimeout;
      short rev = 0;
      if (poll_one(fd_, POLLIN, static_cast<int>(std::min<int64_t>(left.count(), 100)), &rev) <= 0) continue;
      const size_t old = buf_.size();
      buf_.resize(old + kReadChunk);
      ssize_t n = recv_some(buf_.data() + old, kReadChunk);
      buf_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
      if (n <= 0) return HeadRead::kClosed;
    }
  }

  // Inserts bytes at `offset` of the unread buffered bytes (a header the head check adds).
  void insert_unread(size_t offset, std::string_view bytes) { buf_.insert(pos_ + offset, bytes); }

  // Bytes handed to cpp-httplib so far.
  uint64_t consumed() const { return consumed_; }

  ssize_t write(const char* ptr, size_t size) override {
    short rev = 0;
    if (poll_one(fd_, POLLOUT, write_timeout_ms_, &rev) <= 0 || !(rev & POLLOUT)) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, ip, port);
  }

  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, ip, port);
  }

  socket_t socket() const override { return fd_; }

  // False once the peer closed or reset its side. Bytes waiting to be read (a pipelined
  // request) do not count as a close.
  bool peer_connected() const {
    short rev = 0;
    int r = poll_one(fd_, POLLIN | POLLRDHUP, 0, &rev);
    if (r <= 0) return r == 0;
    if (rev & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) return false;
    if (rev & POLLIN) {
      char c;
      ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0) return false;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    }
    return true;
  }

 private:
  static constexpr size_t kReadChunk = 16 * 1024;

  ssize_t recv_some(char* to, size_t size) {
    ssize_t n;
    do {
      n = ::recv(fd_, to, size, 0);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  int fd_;
  int read_timeout_ms_;
  int write_timeout_ms_;
  std::string buf_;  // bytes received; [pos_, size) not yet read
  size_t pos_ = 0;
  uint64_t consumed_ = 0;
};

const char* status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
  }
}

// Answers a refused head and leaves the connection to be closed.
void write_rejection(ConnectionStream& stream, const HttpListener::HeadRejector& rejector, const RequestHead& head) {
  httplib::Response res;
  res.status = head.status;
  if (rejector) rejector(head, res);
  std::string type = res.get_header_value("Content-Type");
  if (type.empty()) type = "text/plain";
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + status_text(res.status) + "\r\n";
  out += "Content-Type: " + type + "\r\nContent-Length: " + std::to_string(res.body.size()) + "\r\nConnection: close\r\n\r\n";
  out += res.body;
  stream.write(out.data(), out.size());
}

thread_local ConnectionStream* t_current_stream = nullptr;
thread_local bool t_close_after_response = false;

}  // namespace

bool current_client_connected() { return t_current_stream == nullptr || t_current_stream->peer_connected(); }

void close_connection_after_response() { t_close_after_response = true; }

bool HttpListener::process_and_close_socket(socket_t sock) {
  int one = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ConnectionStream stream(sock, to_ms(read_timeout_sec_, read_timeout_usec_), to_ms(write_timeout_sec_, write_timeout_usec_));
  bool ok = false;
  size_t remaining = keep_alive_max_count_;
  const auto idle_limit = std::chrono::seconds(keep_alive_timeout_sec_);
  while (remaining > 0 && svr_sock_ != INVALID_SOCKET) {
    // Wait for the next request on this connection, noticing a server stop within 100 ms.
    const auto idle_start = std::chrono::steady_clock::now();
    bool readable = false;
    while (svr_sock_ != INVALID_SOCKET && std::chrono::steady_clock::now() - idle_start < idle_limit) {
      if (stream.wait_readable(100)) {
        readable = true;
        break;
      }
    }
    if (!readable) break;

    // The whole head must arrive within the read timeout (not per byte), and is checked once.
    std::string_view head_bytes;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(to_ms(read_timeout_sec_, read_timeout_usec_));
    const auto got = stream.fill_head(kRequestHeadMaxBytes, deadline, head_bytes);
    if (got == ConnectionStream::HeadRead::kClosed) break;
    RequestHead head;
    if (got == ConnectionStream::HeadRead::kTimeout) {
      head.status = 408;
      head.message = "the request head did not arrive in time";
    } else if (got == ConnectionStream::HeadRead::kTooLarge) {
      head.status = 431;
      head.message = "the request head is larger than " + std::to_string(kRequestHeadMaxBytes) + " bytes";
    } else {
      head = check_request_head(head_bytes, body_max_, upload_prefix_, upload_max_);
    }
    if (head.status != 0) {
      write_rejection(stream, head_rejector_, head);
      break;
    }
    size_t head_size = head_bytes.size();
    if (head.reads_body && !head.has_length && !head.chunked) {
      // No framing means no body (RFC 9112 6.3); cpp-httplib would read until the client closes.
      constexpr std::string_view kNoBody = "Content-Length: 0\r\n";
      stream.insert_unread(head_size - 2, kNoBody);
      head_size += kNoBody.size();
    }
    const uint64_t body_end = stream.consumed() + head_size + (head.has_length ? head.content_length : 0);

    bool connection_closed = false;
    t_current_stream = &stream;
    t_close_after_response = false;
    ok = process_request(stream, remaining == 1, connection_closed, nullptr);
    t_current_stream = nullptr;
    if (!ok || connection_closed || t_close_after_response) break;
    // A body that was not read (a rejection before the route, a body sent with a GET) must never
    // be taken for the next request.
    if (stream.consumed() < body_end) break;
    if (head.chunked && !head.reads_body) break;
    --remaining;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace hearth::server
