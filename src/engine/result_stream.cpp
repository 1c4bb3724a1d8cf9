// ResultStream (the per-request event channel between the engine thread and one consumer),
// the latency histogram behind /metrics, and stop-reason names.
#include <algorithm>

#include "engine/serving_engine.h"

namespace hearth::engine {
namespace {
bool is_final(EngineEvent::Kind k) { return k != EngineEvent::Kind::kText; }
}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kNone: return "none";
    case StopReason::kLength: return "length";
    case StopReason::kEog: return "eog";
    case StopReason::kStopString: return "stop";
    case StopReason::kContext: return "context";
    case StopReason::kCancelled: return "cancelled";
  }
  return "none";
}

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

void ResultStream::push(EngineEvent event) {
  {
    std::lock_guard lock(mu_);
    if (final_pushed_) return;  // nothing follows the final event
    if (is_final(event.kind)) final_pushed_ = true;
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void LatencyHistogram::observe(double seconds) {
  if (counts.size() != bounds.size() + 1) counts.assign(bounds.size() + 1, 0);
  const size_t i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
  ++counts[i];
  sum += seconds;
  ++count;
}

}  // namespace hearth::engine
