// The broken peer's accept loop (see broken_http_peer.h).
#include "common/broken_http_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <utility>

namespace hearth::test {
namespace {

// Reads until the end of the request headers (or 2 s), ignoring any body.
void read_request_head(int fd) {
  std::string seen;
  char buf[4096];
  while (seen.find("\r\n\r\n") == std::string::npos && seen.size() < (1 << 20)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) return;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    seen.append(buf, static_cast<size_t>(n));
  }
}

void send_all(int fd, const std::string& bytes) { (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL); }

}  // namespace

BrokenHttpPeer::BrokenHttpPeer(BrokenPeerMode mode, std::string body) : mode_(mode), body_(std::move(body)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && ::listen(listen_fd_, 16) == 0 &&
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port_ = ntohs(addr.sin_port);
  }
  thread_ = std::thread([this] { serve(); });
}

BrokenHttpPeer::~BrokenHttpPeer() {
  stop_ = true;
  thread_.join();
  for (int fd : silent_fds_) ::close(fd);
  ::close(listen_fd_);
}

void BrokenHttpPeer::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    ++connections_;
    switch (mode_) {
      case BrokenPeerMode::kStatus500:
        read_request_head(fd);
        send_all(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                     "Connection: close\r\n\r\n{}");
        ::close(fd);
        break;
      case BrokenPeerMode::kGarbage:
        read_request_head(fd);
        send_all(fd, "\x01\x02 this is not an HTTP response \xff\xfe\r\n\r\n");
        ::close(fd);
        break;
      case BrokenPeerMode::kIgnoresRange:
        read_request_head(fd);
        send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                         std::to_string(body_.size()) + "\r\nConnection: close\r\n\r\n" + body_);
        ::close(fd);
        break;
      case BrokenPeerMode::kSilent:
        silent_fds_.push_back(fd);
        break;
    }
  }
}

}  // namespace hearth::test
