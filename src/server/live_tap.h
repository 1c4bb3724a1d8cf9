// The bytes of a resumable response for the connection that started it. The replay buffer
// (replay_buffer.h) is bounded and drops its oldest bytes when a response outgrows it; the live
// connection must still get every byte and the final event, so the producer hands each chunk
// to this tap as well, and the live connection reads only from here. The tap holds just the
// bytes the live reader has not taken yet (bounded by the reader keeping up, at worst the
// response); once the reader leaves it is detached and further bytes are dropped, so a
// stream that runs on without its client costs only its replay buffer.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>

namespace hearth::server {

class LiveTap {
 public:
  // Queues bytes for the reader (dropped once detached).
  void append(std::string_view bytes);
  // No more bytes will come.
  void close();
  // The reader left: drop what is queued and everything that follows.
  void detach();

  enum class ReadStatus {
    kData,     // `out` got every queued byte
    kTimeout,  // nothing new within the wait
    kEnd,      // closed and nothing left
  };
  // Moves every queued byte to the end of `out`, waiting up to `wait` for some to arrive.
  ReadStatus read(std::string& out, std::chrono::milliseconds wait);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool closed_ = false;
  bool detached_ = false;
};

}  // namespace hearth::server
