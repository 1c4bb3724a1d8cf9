// The live connection's own copy of a resumable response (see live_tap.h).
#include "server/live_tap.h"

namespace hearth::server {

void LiveTap::append(std::string_view bytes) {
  if (bytes.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (detached_ || closed_) return;
    pending_.append(bytes);
  }
  cv_.notify_all();
}

void LiveTap::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

void LiveTap::detach() {
  std::lock_guard lock(mu_);
  detached_ = true;
  std::string().swap(pending_);
}

LiveTap::ReadStatus LiveTap::read(std::string& out, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, wait, [this] { return !pending_.empty() || closed_; });
  if (!pending_.empty()) {
    out.append(pending_);
    pending_.clear();
    return ReadStatus::kData;
  }
  return closed_ ? ReadStatus::kEnd : ReadStatus::kTimeout;
}

}  // namespace hearth::server
