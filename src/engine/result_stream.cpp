// ResultStream: the per-request event channel between the engine thread and one consumer.
#include <algorithm>

#include "engine/serving_engine.h"

namespace hearth::engine {
namespace {
bool is_final(EngineEvent::Kind k) { return k != EngineEvent::Kind::kText; }
}  // namespace

bool ResultStream::next(EngineEvent& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (final_taken_) return false;
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  out = std::move(events_.front());
  events_.pop_front();
  if (is_final(out.kind)) final_taken_ = true;
  return true;
}

bool ResultStream::finished() const {
  std::lock_guard lock(mu_);
  return final_taken_;
}

std::optional<Error> ResultStream::rejection() const {
  std::lock_guard lock(mu_);
  if (!refused_ || final_taken_ || events_.empty()) return std::nullopt;
  return events_.front().error;
}

void ResultStream::refuse(Error error) {
  EngineEvent ev;
  ev.kind = EngineEvent::Kind::kError;
  ev.error = std::move(error);
  {
    std::lock_guard lock(mu_);
    if (final_pushed_) return;
    refused_ = true;
  }
  push(std::move(ev));
}

void ResultStream::push(EngineEvent event) {
  {
    std::lock_guard lock(mu_);
    if (final_pushed_) return;  // nothing follows the final event
    if (is_final(event.kind)) final_pushed_ = true;
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

}  // namespace hearth::engine
