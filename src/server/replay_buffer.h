// The bytes of one resumable response, kept so a client that lost its connection can fetch
// them again from any offset and then follow the rest live. Bounded: it keeps the newest
// `capacity` bytes (a ring), so a very long stream drops its oldest bytes, and a reader asking
// for dropped bytes is told so instead of getting a stream with a hole. Offsets are absolute
// (byte N of the whole response). Thread-safe: one writer, any number of readers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace hearth::server {

class ReplayBuffer {
 public:
  explicit ReplayBuffer(size_t capacity);

  // Adds bytes at the end, dropping the oldest beyond capacity, and wakes readers.
  void append(std::string_view bytes);
  // No more bytes will come; readers that reach the end get kEnd.
  void close();

  enum class ReadStatus {
    kData,     // `out` got bytes starting at `from`
    kTimeout,  // nothing new within the wait
    kEnd,      // `from` is the end and the buffer is closed
    kGone,     // bytes at `from` were dropped (older than the newest `capacity`)
  };
  // Appends to `out` up to max_bytes starting at absolute offset `from`, waiting up to `wait`
  // for bytes to arrive when `from` is the current end. `from` beyond the end is clamped to it.
  ReadStatus read(uint64_t from, std::string& out, std::chrono::milliseconds wait, size_t max_bytes = 1 << 16) const;

  uint64_t start_offset() const;  // oldest byte still held
  uint64_t end_offset() const;    // bytes written so far
  bool closed() const;
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  std::unique_ptr<char[]> ring_;  // allocated on first append; untouched pages cost nothing
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  uint64_t start_ = 0;
  uint64_t end_ = 0;
  bool closed_ = false;
};

}  // namespace hearth::server
