// Stop reason names and the latency histogram (see events.h, engine_status.h).
#include "protocol/events.h"

#include <algorithm>

#include "protocol/engine_status.h"

namespace hearth::protocol {
namespace {
constexpr StopReason kStopReasons[] = {StopReason::kNone,       StopReason::kLength,  StopReason::kEog,
                                       StopReason::kStopString, StopReason::kContext, StopReason::kCancelled};
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

bool stop_reason_from_name(const std::string& name, StopReason& out) {
  for (StopReason r : kStopReasons) {
    if (name == stop_reason_name(r)) {
      out = r;
      return true;
    }
  }
  return false;
}

void LatencyHistogram::observe(double seconds) {
  if (counts.size() != bounds.size() + 1) counts.assign(bounds.size() + 1, 0);
  const size_t i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
  ++counts[i];
  sum += seconds;
  ++count;
}

}  // namespace hearth::protocol
