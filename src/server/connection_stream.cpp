// Socket stream with a receive buffer (see connection_stream.h).
#include "server/connection_stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace hearth::server {
namespace {

constexpr size_t kReadChunk = 16 * 1024;
// A buffer that grew beyond this (a large body) is given back after its request.
constexpr size_t kKeptBufferBytes = 64 * 1024;

int poll_one(int fd, short events, int timeout_ms, short* revents) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (revents) *revents = p.revents;
  return r;
}

}  // namespace

void socket_address_text(const sockaddr_storage& addr, std::string& ip, int& port) {
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

bool ConnectionStream::is_readable() const {
  if (pos_ < buf_.size()) return true;
  short rev = 0;
  return poll_one(fd_, POLLIN, read_timeout_ms_, &rev) > 0;
}

bool ConnectionStream::is_writable() const {
  if (!peer_connected()) return false;
  short rev = 0;
  return poll_one(fd_, POLLOUT, write_timeout_ms_, &rev) > 0 && (rev & POLLOUT);
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (pos_ == buf_.size()) {
    if (!is_readable()) return -1;
    buf_.clear();
    pos_ = 0;
    buf_.resize(kReadChunk);
    const ssize_t n = recv_some(buf_.data(), buf_.size(), true);
    buf_.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (n <= 0) return n;
  }
  const size_t n = std::min(size, buf_.size() - pos_);
  std::copy(buf_.data() + pos_, buf_.data() + pos_ + n, ptr);
  pos_ += n;
  consumed_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  short rev = 0;
  if (poll_one(fd_, POLLOUT, write_timeout_ms_, &rev) <= 0 || !(rev & POLLOUT)) return -1;
  return send_some(ptr, size, true);
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) socket_address_text(addr, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) socket_address_text(addr, ip, port);
}

bool ConnectionStream::peer_connected() const {
  short rev = 0;
  const int r = poll_one(fd_, POLLIN | POLLRDHUP, 0, &rev);
  if (r <= 0) return r == 0;
  if (rev & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) return false;
  if (rev & POLLIN) {
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
  }
  return true;
}

ConnectionStream::Receive ConnectionStream::receive_available(size_t limit) {
  bool got = false;
  while (buf_.size() - pos_ < limit) {
    const size_t old = buf_.size();
    const size_t want = std::min(kReadChunk, limit - (old - pos_));
    buf_.resize(old + want);
    const ssize_t n = recv_some(buf_.data() + old, want, false);
    buf_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n == 0) return Receive::kClosed;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return Receive::kClosed;
    }
    got = true;
  }
  return got ? Receive::kData : Receive::kNothing;
}

void ConnectionStream::replace_unread(size_t offset, size_t count, std::string_view bytes) {
  buf_.replace(pos_ + offset, count, bytes);
}

bool ConnectionStream::send_now(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send_some(bytes.data(), bytes.size(), false);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

size_t ConnectionStream::release_read_bytes() {
  buf_.erase(0, pos_);
  pos_ = 0;
  const size_t capacity = buf_.capacity();
  if (capacity <= kKeptBufferBytes) return 0;
  std::string(buf_).swap(buf_);
  return capacity - buf_.capacity();
}

ConnectionStream::~ConnectionStream() {
  if (ssl_ == nullptr) return;
  SSL_shutdown(ssl_);  // one close_notify, not waiting for the peer's
  SSL_free(ssl_);
}

void ConnectionStream::use_tls(SSL* ssl) {
  ssl_ = ssl;
  SSL_set_fd(ssl_, fd_);
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

ConnectionStream::Handshake ConnectionStream::handshake() {
  ERR_clear_error();
  const int r = SSL_accept(ssl_);
  if (r == 1) return Handshake::kDone;
  const int e = SSL_get_error(ssl_, r);
  return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? Handshake::kWaiting : Handshake::kFailed;
}

bool ConnectionStream::has_pending() const { return ssl_ != nullptr && SSL_pending(ssl_) > 0; }

ssize_t ConnectionStream::recv_some(char* to, size_t size, bool wait) {
  if (ssl_ == nullptr) {
    ssize_t n;
    do {
      n = ::recv(fd_, to, size, wait ? 0 : MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  for (;;) {
    ERR_clear_error();
    const int n = SSL_read(ssl_, to, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) return n;
    const int e = SSL_get_error(ssl_, n);
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      errno = ECONNRESET;
      return -1;
    }
    short rev = 0;
    if (!wait || poll_one(fd_, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, read_timeout_ms_, &rev) <= 0) {
      errno = EAGAIN;
      return -1;
    }
  }
}

ssize_t ConnectionStream::send_some(const char* from, size_t size, bool wait) {
  if (ssl_ == nullptr) {
    ssize_t n;
    do {
      n = ::send(fd_, from, size, MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT));
    } while (n < 0 && errno == EINTR);
    return n;
  }
  // OpenSSL writes one record at a time; a retry after WANT_WRITE repeats the same arguments.
  for (;;) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, from, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) return n;
    const int e = SSL_get_error(ssl_, n);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      errno = EPIPE;
      return -1;
    }
    short rev = 0;
    if (!wait || poll_one(fd_, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, write_timeout_ms_, &rev) <= 0) {
      errno = EAGAIN;
      return -1;
    }
  }
}

}  // namespace hearth::server
