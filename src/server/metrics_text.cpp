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

}  // namespace

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

namespace {

struct EngineSeries {
  const char* name;
  const char* type;
  const char* help;
  double (*value)(const protocol::EngineMetrics& m);
};

double prefix_hit_ratio(const protocol::EngineMetrics& m) {
  const double seen = static_cast<double>(m.prompt_tokens_total + m.cached_tokens_total);
  return seen > 0 ? static_cast<double>(m.cached_tokens_total) / seen : 0.0;
}

// Every engine scalar, one row each (the same rows for one model or, labelled, for many).
const EngineSeries kEngineSeries[] = {
    {"hearth_prompt_tokens_total", "counter", "Prompt tokens evaluated.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.prompt_tokens_total); }},
    {"hearth_prompt_tokens_cached_total", "counter", "Prompt tokens reused from the prefix cache.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.cached_tokens_total); }},
    {"hearth_generated_tokens_total", "counter", "Tokens generated.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.generated_tokens_total); }},
    {"hearth_requests_total", "counter", "Engine requests finished (completions and embeddings).", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.requests_total); }},
    {"hearth_requests_cancelled_total", "counter", "Engine requests cancelled.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.requests_cancelled_total); }},
    {"hearth_engine_steps_total", "counter", "Batches decoded by the engine.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.steps_total); }},
    {"hearth_requests_processing", "gauge", "Requests holding a slot.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.requests_processing); }},
    {"hearth_requests_waiting", "gauge", "Requests queued for a slot.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.requests_waiting); }},
    {"hearth_kv_blocks_used", "gauge", "KV cache blocks in use.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_blocks_used); }},
    {"hearth_kv_blocks_total", "gauge", "KV cache blocks in all.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_blocks_total); }},
    {"hearth_kv_blocks_cached", "gauge", "KV cache blocks named by the prefix cache.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_blocks_cached); }},
    {"hearth_kv_blocks_free", "gauge", "KV cache blocks free.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_blocks_total - m.kv_blocks_used); }},
    {"hearth_kv_reserved_bytes", "gauge", "Address space reserved for the KV cache.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_bytes_reserved); }},
    {"hearth_kv_committed_bytes", "gauge", "KV cache memory resident (committed chunks).", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_bytes_committed); }},
    {"hearth_kv_device_reserved_bytes", "gauge", "GPU memory the KV of offloaded layers takes with every block in use.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_device_bytes_reserved); }},
    {"hearth_kv_device_committed_bytes", "gauge", "GPU memory allocated now for the KV of offloaded layers (chunks).", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_device_bytes_committed); }},
    {"hearth_kv_sliding_blocks_used", "gauge", "Sliding-window layers' KV blocks in use (0 without such layers).", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_sliding_blocks_used); }},
    {"hearth_kv_sliding_blocks_total", "gauge", "Sliding-window layers' KV blocks in all.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_sliding_blocks_total); }},
    {"hearth_kv_sliding_reserved_bytes", "gauge", "Address space reserved for the sliding-window layers' KV.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_sliding_bytes_reserved); }},
    {"hearth_kv_sliding_committed_bytes", "gauge", "Sliding-window layers' KV memory resident (committed chunks).", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_sliding_bytes_committed); }},
    {"hearth_kv_used_bytes", "gauge", "KV cache memory in blocks held by sequences or the prefix cache.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_bytes_used); }},
    {"hearth_kv_limit_bytes", "gauge", "KV cache byte limit for admitting requests.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_bytes_limit); }},
    {"hearth_kv_prefix_hit_ratio", "gauge", "Prompt tokens reused from the prefix cache over all prompt tokens.", prefix_hit_ratio},
    {"hearth_kv_evictions_total", "counter", "Cached prefix blocks evicted.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_evictions_total); }},
    {"hearth_kv_shrink_events_total", "counter", "Idle trims and limit changes that returned KV memory.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_shrink_events_total); }},
    {"hearth_kv_chunks_released_total", "counter", "KV memory chunks returned to the OS.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_chunks_released_total); }},
    {"hearth_kv_preemptions_total", "counter", "Requests paused because the shared KV pool ran short (--kv-unified); they resume by recomputing.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_preemptions_total); }},
    {"hearth_kv_commits_on_demand_total", "counter", "KV memory chunks the engine committed itself because none was prefaulted ahead.", [](const protocol::EngineMetrics& m) { return static_cast<double>(m.kv_commits_on_demand_total); }},
};

// `{model="NAME"}` (with `extra` label text after it), or `{extra}`, or "".
std::string labels(const std::string& model, const std::string& extra) {
  std::string l;
  if (!model.empty()) {
    l = "model=\"";
    for (char c : model) {
      if (c == '\\' || c == '"') l += '\\';
      if (c == '\n') {
        l += "\\n";
        continue;
      }
      l += c;
    }
    l += '"';
  }
  if (!extra.empty()) l += (l.empty() ? "" : ",") + extra;
  return l.empty() ? "" : "{" + l + "}";
}

void labelled_histogram(std::string& out, const char* name, const char* help, const std::vector<ModelMetrics>& models,
                        const protocol::LatencyHistogram protocol::EngineMetrics::*field) {
  header(out, name, "histogram", help);
  for (const auto& mm : models) {
    const protocol::LatencyHistogram& h = mm.metrics.*field;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += i < h.counts.size() ? h.counts[i] : 0;
      sample(out, std::string(name) + "_bucket" + labels(mm.model, "le=\"" + prometheus_number(h.bounds[i]) + "\""),
             static_cast<double>(cumulative));
    }
    sample(out, std::string(name) + "_bucket" + labels(mm.model, "le=\"+Inf\""), static_cast<double>(h.count));
    sample(out, std::string(name) + "_sum" + labels(mm.model, ""), h.sum);
    sample(out, std::string(name) + "_count" + labels(mm.model, ""), static_cast<double>(h.count));
  }
}

}  // namespace

std::string metrics_text(const protocol::EngineMetrics& m, const ServerCounters& s) { return metrics_text({ModelMetrics{"", m}}, s); }

std::string metrics_text(const std::vector<ModelMetrics>& models, const ServerCounters& s) {
  std::string out;
  for (const EngineSeries& row : kEngineSeries) {
    header(out, row.name, row.type, row.help);
    for (const auto& mm : models) sample(out, row.name + labels(mm.model, ""), row.value(mm.metrics));
  }
  labelled_histogram(out, "hearth_time_to_first_token_seconds", "Time from submission to the first generated token.", models,
                     &protocol::EngineMetrics::ttft);
  labelled_histogram(out, "hearth_inter_token_latency_seconds", "Time between consecutive tokens of one stream.", models,
                     &protocol::EngineMetrics::inter_token);

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
