// A TCP peer on a free loopback port that answers every connection in one broken way: an HTTP
// 500, bytes that are not HTTP, or silence. Not a fake of any protocol, just the failures a
// client must survive with a clear, bounded error. Counts connections so a test can check
// retries (or that no request was sent at all).
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace hearth::test {

enum class BrokenPeerMode {
  kStatus500,  // reads the request, answers "HTTP/1.1 500", closes
  kGarbage,    // reads the request, answers bytes that are no HTTP response, closes
  kSilent,     // accepts and never answers (a hanging server)
};

class BrokenHttpPeer {
 public:
  explicit BrokenHttpPeer(BrokenPeerMode mode);
  ~BrokenHttpPeer();
  BrokenHttpPeer(const BrokenHttpPeer&) = delete;
  BrokenHttpPeer& operator=(const BrokenHttpPeer&) = delete;

  int port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  void serve();
  BrokenPeerMode mode_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::vector<int> silent_fds_;  // kept open until the peer goes
  std::thread thread_;
};

}  // namespace hearth::test
