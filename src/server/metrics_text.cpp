// Prometheus text exposition of engine and server metrics (see metrics_text.h).
#include "server/metrics_text.h"

#include <charconv>
#include <cmath>

namespace hearth::server {
namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, const std::string& name, double value) {
  out += name;
  out += ' ';
  out += prometheus_number(value);
  out += '\n';
}

void scalar(std::string& out, const char* name, const char* type, const char* help, double value) {
  header(out, name, type, help);
  sample(out, name, value);
}

void histogram(std::string& out, const char* name, const char* help, const protocol::LatencyHistogram& h) {
  header(out, name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    sample(out, std::string(name) + "_bucket{le=\"" + prometheus_number(h.bounds[i]) + "\"}", static_cast<double>(cumulative));
  }
  sample(out, std::string(name) + "_bucket{le=\"+Inf\"}", static_cast<double>(h.count));
  sample(out, std::string(name) + "_sum", h.sum);
  sample(out, std::string(name) + "_count", static_cast<double>(h.count));
}

}  // namespace

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string metrics_text(const protocol::EngineMetrics& m, const ServerCounters& s) {
  std::string out;
  scalar(out, "hearth_prompt_tokens_total", "counter", "Prompt tokens evaluated.", static_cast<double>(m.prompt_tokens_total));
  scalar(out, "hearth_prompt_tokens_cached_total", "counter", "Prompt tokens reused from the prefix cache.",
         static_cast<double>(m.cached_tokens_total));
  scalar(out, "hearth_generated_tokens_total", "counter", "Tokens generated.", static_cast<double>(m.generated_tokens_total));
  scalar(out, "hearth_requests_total", "counter", "Engine requests finished (completions and embeddings).",
         static_cast<double>(m.requests_total));
  scalar(out, "hearth_requests_cancelled_total", "counter", "Engine requests cancelled.",
         static_cast<double>(m.requests_cancelled_total));
  scalar(out, "hearth_engine_steps_total", "counter", "Batches decoded by the engine.", static_cast<double>(m.steps_total));
  scalar(out, "hearth_requests_processing", "gauge", "Requests holding a slot.", m.requests_processing);
  scalar(out, "hearth_requests_waiting", "gauge", "Requests queued for a slot.", m.requests_waiting);
  scalar(out, "hearth_kv_blocks_used", "gauge", "KV cache blocks in use.", m.kv_blocks_used);
  scalar(out, "hearth_kv_blocks_total", "gauge", "KV cache blocks in all.", m.kv_blocks_total);
  scalar(out, "hearth_kv_blocks_cached", "gauge", "KV cache blocks named by the prefix cache.", m.kv_blocks_cached);
  scalar(out, "hearth_kv_blocks_free", "gauge", "KV cache blocks free.", m.kv_blocks_total - m.kv_blocks_used);
  scalar(out, "hearth_kv_reserved_bytes", "gauge", "Address space reserved for the KV cache.",
         static_cast<double>(m.kv_bytes_reserved));
  scalar(out, "hearth_kv_committed_bytes", "gauge", "KV cache memory resident (committed chunks).",
         static_cast<double>(m.kv_bytes_committed));
  scalar(out, "hearth_kv_used_bytes", "gauge", "KV cache memory in blocks held by sequences or the prefix cache.",
         static_cast<double>(m.kv_bytes_used));
  scalar(out, "hearth_kv_limit_bytes", "gauge", "KV cache byte limit for admitting requests.",
         static_cast<double>(m.kv_bytes_limit));
  const double prompt_seen = static_cast<double>(m.prompt_tokens_total + m.cached_tokens_total);
  scalar(out, "hearth_kv_prefix_hit_ratio", "gauge", "Prompt tokens reused from the prefix cache over all prompt tokens.",
         prompt_seen > 0 ? static_cast<double>(m.cached_tokens_total) / prompt_seen : 0.0);
  scalar(out, "hearth_kv_evictions_total", "counter", "Cached prefix blocks evicted.",
         static_cast<double>(m.kv_evictions_total));
  scalar(out, "hearth_kv_shrink_events_total", "counter", "Idle trims and limit changes that returned KV memory.",
         static_cast<double>(m.kv_shrink_events_total));
  scalar(out, "hearth_kv_chunks_released_total", "counter", "KV memory chunks returned to the OS.",
         static_cast<double>(m.kv_chunks_released_total));
  scalar(out, "hearth_kv_preemptions_total", "counter",
         "Requests paused because the shared KV pool ran short (--kv-unified); they resume by recomputing.",
         static_cast<double>(m.kv_preemptions_total));
  scalar(out, "hearth_kv_commits_on_demand_total", "counter",
         "KV memory chunks the engine committed itself because none was prefaulted ahead.",
         static_cast<double>(m.kv_commits_on_demand_total));
  histogram(out, "hearth_time_to_first_token_seconds", "Time from submission to the first generated token.", m.ttft);
  histogram(out, "hearth_inter_token_latency_seconds", "Time between consecutive tokens of one stream.", m.inter_token);

  header(out, "hearth_http_responses_total", "counter", "HTTP responses sent, by status code.");
  for (const auto& [status, n] : s.responses_by_status) {
    sample(out, "hearth_http_responses_total{code=\"" + std::to_string(status) + "\"}", static_cast<double>(n));
  }
  scalar(out, "hearth_streams_resumable", "gauge", "Resumable streams held (running or kept after finishing).",
         static_cast<double>(s.streams_resumable));
  scalar(out, "hearth_streams_resumable_running", "gauge", "Resumable streams still generating.",
         static_cast<double>(s.streams_running));
  scalar(out, "hearth_stream_disconnects_total", "counter", "Plain streams cancelled because the client went away.",
         static_cast<double>(s.stream_disconnects));
  return out;
}

}  // namespace hearth::server
