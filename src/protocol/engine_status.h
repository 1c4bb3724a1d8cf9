// What an engine reports about itself for /metrics and /slots: counters, latency histograms
// and a snapshot of each slot. Plain data, filled on the engine side.
#pragma once

#include <cstdint>
#include <vector>

namespace hearth::protocol {

// A histogram with fixed upper bounds (seconds), Prometheus-style cumulative buckets.
struct LatencyHistogram {
  std::vector<double> bounds;     // ascending upper bounds, +Inf implied
  std::vector<uint64_t> counts;   // per bound (not cumulative), bounds.size() + 1 entries
  double sum = 0.0;
  uint64_t count = 0;
  void observe(double seconds);
};

struct EngineMetrics {
  uint64_t prompt_tokens_total = 0;     // prompt tokens evaluated
  uint64_t cached_tokens_total = 0;     // prompt tokens reused from the prefix cache
  uint64_t generated_tokens_total = 0;
  uint64_t requests_total = 0;          // completions + embeddings finished
  uint64_t requests_cancelled_total = 0;
  uint64_t steps_total = 0;             // batches decoded
  int32_t requests_processing = 0;      // in a slot now
  int32_t requests_waiting = 0;         // queued, no slot yet
  int32_t kv_blocks_used = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_cached = 0;          // named by the prefix cache (some also in use)
  uint64_t kv_bytes_reserved = 0;        // address space for the whole pool
  uint64_t kv_bytes_committed = 0;       // resident chunks
  uint64_t kv_bytes_used = 0;            // blocks held by sequences or the prefix cache
  uint64_t kv_bytes_limit = 0;           // admission limit (the reservation when none is set)
  uint64_t kv_evictions_total = 0;       // cached prefix blocks evicted
  uint64_t kv_shrink_events_total = 0;   // idle trims and limit changes that returned memory
  uint64_t kv_chunks_released_total = 0; // chunks given back to the OS
  uint64_t kv_preemptions_total = 0;     // unified KV: requests paused (and later recomputed) for memory
  uint64_t kv_commits_on_demand_total = 0;  // chunks the engine thread committed itself
  // KV of layers offloaded to a GPU (0 on the CPU): device memory for every block, and the
  // device chunks allocated now (they come and go with the pool's chunks).
  uint64_t kv_device_bytes_reserved = 0;
  uint64_t kv_device_bytes_committed = 0;
  // The sliding-window layers' pool (gemma2/3, gpt-oss; 0 without one): its blocks hold those
  // layers' rows and are released as they fall out of the window, so they stay few.
  int32_t kv_sliding_blocks_used = 0;
  int32_t kv_sliding_blocks_total = 0;
  uint64_t kv_sliding_bytes_reserved = 0;
  uint64_t kv_sliding_bytes_committed = 0;
  LatencyHistogram ttft;                // seconds, submit -> first token
  LatencyHistogram inter_token;         // seconds between tokens of one stream
};

struct SlotInfo {
  int32_t id = 0;
  bool busy = false;
  int64_t request_id = -1;
  int32_t n_ctx = 0;
  int32_t cached_tokens = 0;   // tokens held in the slot's KV
  int32_t prompt_pending = 0;  // prompt tokens still to prefill
  int32_t generated = 0;
  int32_t kv_blocks = 0;         // KV blocks the slot's sequence holds
  int32_t kv_blocks_shared = 0;  // ... of them shared (prefix cache or other slots)
  uint64_t kv_device_bytes = 0;  // device memory of those blocks' offloaded layers (0 on the CPU)
  int32_t kv_sliding_blocks = 0;  // sliding-window pool blocks the sequence holds (its window)
};

}  // namespace hearth::protocol
