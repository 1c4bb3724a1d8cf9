// A TCP peer on a free loopback port that answers every connection in one broken way: an HTTP
// 500, bytes that are not HTTP, silence, or a whole body where a range was asked. Not a fake
// of any protocol, just the failures a client must survive with a clear, bounded error (or,
// for the last, still succeed). Counts connections so a test can check
// retries (or that no request was sent at all).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hearth::test {

enum class BrokenPeerMode {
  kStatus500,  // reads the request, answers "HTTP/1.1 500", closes
  kGarbage,    // reads the request, answers bytes that are no HTTP response, closes
  kSilent,     // accepts and never answers (a hanging server)
  kIgnoresRange,  // answers every request with "200 OK" and the whole body, whatever Range asked
};

class BrokenHttpPeer {
 public:
  // `body`: what kIgnoresRange sends.
  explicit BrokenHttpPeer(BrokenPeerMode mode, std::string body = "");
  ~BrokenHttpPeer();
  BrokenHttpPeer(const BrokenHttpPeer&) = delete;
  BrokenHttpPeer& operator=(const BrokenHttpPeer&) = delete;

  int port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  void serve();
  BrokenPeerMode mode_;
  std::string body_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::vector<int> silent_fds_;  // kept open until the peer goes
  std::thread thread_;
};

}  // namespace hearth::test
