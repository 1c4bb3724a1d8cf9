// Bounded replay ring for resumable streams (see replay_buffer.h).
#include "server/replay_buffer.h"

#include <algorithm>
#include <cstring>

namespace hearth::server {

ReplayBuffer::ReplayBuffer(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

void ReplayBuffer::append(std::string_view bytes) {
  if (bytes.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    if (!ring_) ring_.reset(new char[capacity_]);
    // Only the last `capacity_` bytes of this append can survive.
    if (bytes.size() > capacity_) {
      end_ += bytes.size() - capacity_;
      bytes.remove_prefix(bytes.size() - capacity_);
    }
    size_t pos = static_cast<size_t>(end_ % capacity_);
    size_t first = std::min(bytes.size(), capacity_ - pos);
    std::memcpy(ring_.get() + pos, bytes.data(), first);
    std::memcpy(ring_.get(), bytes.data() + first, bytes.size() - first);
    end_ += bytes.size();
    if (end_ - start_ > capacity_) start_ = end_ - capacity_;
  }
  cv_.notify_all();
}

void ReplayBuffer::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

ReplayBuffer::ReadStatus ReplayBuffer::read(uint64_t from, std::string& out, std::chrono::milliseconds wait,
                                            size_t max_bytes) const {
  std::unique_lock lock(mu_);
  if (from < start_) return ReadStatus::kGone;
  from = std::min(from, end_);
  if (from == end_) {
    if (closed_) return ReadStatus::kEnd;
    cv_.wait_for(lock, wait, [&] { return end_ > from || closed_; });
    if (from < start_) return ReadStatus::kGone;
    if (from == end_) return closed_ ? ReadStatus::kEnd : ReadStatus::kTimeout;
  }
  size_t n = static_cast<size_t>(std::min<uint64_t>(end_ - from, max_bytes));
  size_t pos = static_cast<size_t>(from % capacity_);
  size_t first = std::min(n, capacity_ - pos);
  out.append(ring_.get() + pos, first);
  out.append(ring_.get(), n - first);
  return ReadStatus::kData;
}

uint64_t ReplayBuffer::start_offset() const {
  std::lock_guard lock(mu_);
  return start_;
}

uint64_t ReplayBuffer::end_offset() const {
  std::lock_guard lock(mu_);
  return end_;
}

bool ReplayBuffer::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

}  // namespace hearth::server
