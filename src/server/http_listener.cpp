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
#include <vector>

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
      : fd_(fd), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms), buf_(16 * 1024) {}

  bool is_readable() const override { return wait_readable(read_timeout_ms_); }

  // Buffered bytes, or the socket has something (data, or end of file) within the timeout.
  bool wait_readable(int timeout_ms) const {
    if (pos_ < len_) return true;
    short rev = 0;
    return poll_one(fd_, POLLIN, timeout_ms, &rev) > 0;
  }

  bool is_writable() const override {
    if (!peer_connected()) return false;
    short rev = 0;
    return poll_one(fd_, POLLOUT, write_timeout_ms_, &rev) > 0 && (rev & POLLOUT);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == len_) {
      if (!is_readable()) return -1;
      ssize_t n;
      do {
        n = ::recv(fd_, buf_.data(), buf_.size(), 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, len_ - pos_);
    std::copy(buf_.data() + pos_, buf_.data() + pos_ + n, ptr);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

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
  int fd_;
  int read_timeout_ms_;
  int write_timeout_ms_;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t len_ = 0;
};

thread_local ConnectionStream* t_current_stream = nullptr;

}  // namespace

bool current_client_connected() { return t_current_stream == nullptr || t_current_stream->peer_connected(); }

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
    bool connection_closed = false;
    t_current_stream = &stream;
    ok = process_request(stream, remaining == 1, connection_closed, nullptr);
    t_current_stream = nullptr;
    if (!ok || connection_closed) break;
    --remaining;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace hearth::server
