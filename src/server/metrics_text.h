// GET /metrics: the engine's counters and histograms, plus the server's own, in the Prometheus
// text exposition format (version 0.0.4): # HELP / # TYPE lines, counters ending in _total,
// histograms as cumulative _bucket{le=...} series with _sum and _count.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/engine_status.h"

namespace hearth::server {

struct ServerCounters {
  std::map<int, uint64_t> responses_by_status;  // HTTP status → responses sent
  uint64_t streams_resumable = 0;               // resumable streams held (running or finished)
  uint64_t streams_running = 0;
  uint64_t stream_disconnects = 0;              // plain streams cancelled because the client left
};

std::string metrics_text(const protocol::EngineMetrics& engine, const ServerCounters& server);

// Router mode: each loaded model's engine series labelled model="NAME" (empty: no label).
struct ModelMetrics {
  std::string model;
  protocol::EngineMetrics metrics;
};
std::string metrics_text(const std::vector<ModelMetrics>& models, const ServerCounters& server);

// Prometheus number text: shortest round-trip form, "+Inf"/"-Inf"/"NaN" for the specials.
std::string prometheus_number(double v);

}  // namespace hearth::server
