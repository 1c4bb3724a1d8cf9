// Frames and small payloads of the router <-> runner wire (see runner_wire.h).
#include "protocol/runner_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

namespace hearth::protocol {
namespace {

using Json = nlohmann::json;

constexpr size_t kHeaderBytes = 4 + 1 + 8 + 4;

bool known_type(uint8_t t) { return (t >= 1 && t <= 6) || (t >= 64 && t <= 68); }

Status write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorKind::kIo, std::string("runner channel: ") + std::strerror(errno));
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return ok_status();
}

// False at end of file or on an error.
bool read_all(int fd, char* data, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, data, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

template <typename T>
void put_le(char* at, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) at[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}
template <typename T>
T get_le(const char* at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(at[i])) << (8 * i);
  return static_cast<T>(v);
}

// A JSON object from untrusted bytes, or kCorrupt naming `what`.
Result<Json> parse_object(std::string_view bytes, const char* what) {
  Json j = Json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(ErrorKind::kCorrupt, std::string("runner wire: bad ") + what);
  return j;
}

template <typename T>
T field(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->get<std::string>() : fallback;
  } else if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->get<bool>() : fallback;
  } else {
    return it->is_number() ? it->get<T>() : fallback;
  }
}

constexpr RunnerState::Phase kPhases[] = {RunnerState::Phase::kLoading, RunnerState::Phase::kReady, RunnerState::Phase::kFailed,
                                          RunnerState::Phase::kStopping};

Json histogram_json(const LatencyHistogram& h) {
  return Json{{"bounds", h.bounds}, {"counts", h.counts}, {"sum", h.sum}, {"count", h.count}};
}

LatencyHistogram histogram_from(const Json& j) {
  LatencyHistogram h;
  if (!j.is_object()) return h;
  if (auto b = j.find("bounds"); b != j.end() && b->is_array()) {
    for (const auto& v : *b) h.bounds.push_back(v.is_number() ? v.get<double>() : 0.0);
  }
  if (auto c = j.find("counts"); c != j.end() && c->is_array()) {
    for (const auto& v : *c) h.counts.push_back(v.is_number_unsigned() ? v.get<uint64_t>() : 0);
  }
  if (h.counts.size() != h.bounds.size() + 1) h.counts.assign(h.bounds.size() + 1, 0);
  h.sum = field(j, "sum", 0.0);
  h.count = field<uint64_t>(j, "count", 0);
  return h;
}

}  // namespace

RunnerChannel::~RunnerChannel() {
  if (fd_ >= 0) ::close(fd_);
}

Status RunnerChannel::send(const RunnerFrame& frame) {
  if (frame.payload.size() > kRunnerFrameMaxBytes) {
    return make_error(ErrorKind::kOutOfRange, "runner channel: message of " + std::to_string(frame.payload.size()) + " bytes is too large");
  }
  char header[kHeaderBytes];
  put_le<uint32_t>(header, static_cast<uint32_t>(frame.payload.size()));
  header[4] = static_cast<char>(frame.type);
  put_le<uint64_t>(header + 5, frame.id);
  put_le<uint32_t>(header + 13, frame.index);
  std::lock_guard lock(send_mu_);
  HEARTH_TRY(write_all(fd_, header, sizeof header));
  return write_all(fd_, frame.payload.data(), frame.payload.size());
}

Result<RunnerFrame> RunnerChannel::receive() {
  char header[kHeaderBytes];
  if (!read_all(fd_, header, sizeof header)) return make_error(ErrorKind::kIo, "runner channel closed");
  const auto size = get_le<uint32_t>(header);
  const auto type = static_cast<uint8_t>(header[4]);
  if (size > kRunnerFrameMaxBytes) return make_error(ErrorKind::kCorrupt, "runner channel: frame of " + std::to_string(size) + " bytes");
  if (!known_type(type)) return make_error(ErrorKind::kCorrupt, "runner channel: unknown message type " + std::to_string(type));
  RunnerFrame f;
  f.type = static_cast<RunnerMessage>(type);
  f.id = get_le<uint64_t>(header + 5);
  f.index = get_le<uint32_t>(header + 13);
  f.payload.resize(size);
  if (!read_all(fd_, f.payload.data(), size)) return make_error(ErrorKind::kIo, "runner channel closed mid-frame");
  return f;
}

void RunnerChannel::shut_down() { ::shutdown(fd_, SHUT_RDWR); }

const char* runner_phase_name(RunnerState::Phase phase) {
  switch (phase) {
    case RunnerState::Phase::kLoading: return "loading";
    case RunnerState::Phase::kReady: return "ready";
    case RunnerState::Phase::kFailed: return "failed";
    case RunnerState::Phase::kStopping: return "stopping";
  }
  return "loading";
}

std::string encode_runner_state(const RunnerState& s) {
  Json j = {{"phase", runner_phase_name(s.phase)},       {"progress", s.progress},
            {"resident", s.resident_bytes},              {"weights", s.weights_bytes},
            {"kv_committed", s.kv_committed_bytes},      {"kv_limit", s.kv_limit_bytes},
            {"busy", s.busy_slots},                      {"waiting", s.waiting}};
  if (s.phase == RunnerState::Phase::kFailed) j["error"] = error_to_json(s.error);
  return j.dump();
}

Result<RunnerState> decode_runner_state(std::string_view bytes) {
  HEARTH_ASSIGN(const Json j, parse_object(bytes, "state"));
  RunnerState s;
  const std::string phase = field<std::string>(j, "phase", "");
  bool known = false;
  for (auto p : kPhases) {
    if (phase == runner_phase_name(p)) {
      s.phase = p;
      known = true;
    }
  }
  if (!known) return make_error(ErrorKind::kCorrupt, "runner wire: unknown phase '" + phase + "'");
  s.progress = field(j, "progress", 0.0);
  s.resident_bytes = field<uint64_t>(j, "resident", 0);
  s.weights_bytes = field<uint64_t>(j, "weights", 0);
  s.kv_committed_bytes = field<uint64_t>(j, "kv_committed", 0);
  s.kv_limit_bytes = field<uint64_t>(j, "kv_limit", 0);
  s.busy_slots = field<int32_t>(j, "busy", 0);
  s.waiting = field<int32_t>(j, "waiting", 0);
  if (auto e = j.find("error"); e != j.end()) s.error = error_from_json(*e);
  return s;
}

Json prompt_info_to_json(const PromptInfo& p) {
  return Json{{"n_tokens", p.n_tokens},
              {"ids", p.ids},
              {"text", p.text},
              {"output", {{"family", p.output.family},
                          {"tool_calls", p.output.tool_calls},
                          {"reasoning", p.output.reasoning},
                          {"reasoning_open", p.output.reasoning_open},
                          {"framed", p.output.framed},
                          {"prefilled", p.output.prefilled}}}};
}

PromptInfo prompt_info_from_json(const Json& v) {
  PromptInfo info;
  if (!v.is_object()) return info;
  info.n_tokens = field<int32_t>(v, "n_tokens", 0);
  info.text = field<std::string>(v, "text", "");
  if (auto ids = v.find("ids"); ids != v.end() && ids->is_array()) {
    for (const auto& id : *ids) info.ids.push_back(id.is_number_integer() ? id.get<int32_t>() : 0);
  }
  if (auto o = v.find("output"); o != v.end() && o->is_object()) {
    info.output.family = field<std::string>(*o, "family", "plain");
    info.output.tool_calls = field<bool>(*o, "tool_calls", false);
    info.output.reasoning = field<bool>(*o, "reasoning", false);
    info.output.reasoning_open = field<bool>(*o, "reasoning_open", false);
    info.output.framed = field<bool>(*o, "framed", false);
    info.output.prefilled = field<std::string>(*o, "prefilled", "");
  }
  return info;
}

std::string encode_submitted(size_t n_streams, const std::vector<PromptInfo>& prompts) {
  Json list = Json::array();
  for (const auto& p : prompts) list.push_back(prompt_info_to_json(p));
  return Json{{"streams", n_streams}, {"prompts", std::move(list)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<std::pair<size_t, std::vector<PromptInfo>>> decode_submitted(std::string_view bytes) {
  HEARTH_ASSIGN(const Json j, parse_object(bytes, "submission"));
  const auto n = field<uint64_t>(j, "streams", 0);
  if (n == 0 || n > 1u << 20) return make_error(ErrorKind::kCorrupt, "runner wire: bad stream count");
  std::vector<PromptInfo> prompts;
  if (auto p = j.find("prompts"); p != j.end() && p->is_array()) {
    for (const auto& v : *p) {
      if (!v.is_object()) continue;
      prompts.push_back(prompt_info_from_json(v));
    }
  }
  return std::make_pair(static_cast<size_t>(n), std::move(prompts));
}

Json metrics_to_json(const EngineMetrics& m) {
  return Json{{"prompt_tokens_total", m.prompt_tokens_total},
              {"cached_tokens_total", m.cached_tokens_total},
              {"generated_tokens_total", m.generated_tokens_total},
              {"requests_total", m.requests_total},
              {"requests_cancelled_total", m.requests_cancelled_total},
              {"steps_total", m.steps_total},
              {"requests_processing", m.requests_processing},
              {"requests_waiting", m.requests_waiting},
              {"kv_blocks_used", m.kv_blocks_used},
              {"kv_blocks_total", m.kv_blocks_total},
              {"kv_blocks_cached", m.kv_blocks_cached},
              {"kv_bytes_reserved", m.kv_bytes_reserved},
              {"kv_bytes_committed", m.kv_bytes_committed},
              {"kv_device_bytes_reserved", m.kv_device_bytes_reserved},
              {"kv_device_bytes_committed", m.kv_device_bytes_committed},
              {"kv_bytes_used", m.kv_bytes_used},
              {"kv_bytes_limit", m.kv_bytes_limit},
              {"kv_evictions_total", m.kv_evictions_total},
              {"kv_shrink_events_total", m.kv_shrink_events_total},
              {"kv_chunks_released_total", m.kv_chunks_released_total},
              {"kv_preemptions_total", m.kv_preemptions_total},
              {"kv_commits_on_demand_total", m.kv_commits_on_demand_total},
              {"kv_sliding_blocks_used", m.kv_sliding_blocks_used},
              {"kv_sliding_blocks_total", m.kv_sliding_blocks_total},
              {"kv_sliding_bytes_reserved", m.kv_sliding_bytes_reserved},
              {"kv_sliding_bytes_committed", m.kv_sliding_bytes_committed},
              {"ttft", histogram_json(m.ttft)},
              {"inter_token", histogram_json(m.inter_token)}};
}

EngineMetrics metrics_from_json(const Json& j) {
  EngineMetrics m;
  if (!j.is_object()) return m;
  m.prompt_tokens_total = field<uint64_t>(j, "prompt_tokens_total", 0);
  m.cached_tokens_total = field<uint64_t>(j, "cached_tokens_total", 0);
  m.generated_tokens_total = field<uint64_t>(j, "generated_tokens_total", 0);
  m.requests_total = field<uint64_t>(j, "requests_total", 0);
  m.requests_cancelled_total = field<uint64_t>(j, "requests_cancelled_total", 0);
  m.steps_total = field<uint64_t>(j, "steps_total", 0);
  m.requests_processing = field<int32_t>(j, "requests_processing", 0);
  m.requests_waiting = field<int32_t>(j, "requests_waiting", 0);
  m.kv_blocks_used = field<int32_t>(j, "kv_blocks_used", 0);
  m.kv_blocks_total = field<int32_t>(j, "kv_blocks_total", 0);
  m.kv_blocks_cached = field<int32_t>(j, "kv_blocks_cached", 0);
  m.kv_bytes_reserved = field<uint64_t>(j, "kv_bytes_reserved", 0);
  m.kv_bytes_committed = field<uint64_t>(j, "kv_bytes_committed", 0);
  m.kv_device_bytes_reserved = field<uint64_t>(j, "kv_device_bytes_reserved", 0);
  m.kv_device_bytes_committed = field<uint64_t>(j, "kv_device_bytes_committed", 0);
  m.kv_bytes_used = field<uint64_t>(j, "kv_bytes_used", 0);
  m.kv_bytes_limit = field<uint64_t>(j, "kv_bytes_limit", 0);
  m.kv_evictions_total = field<uint64_t>(j, "kv_evictions_total", 0);
  m.kv_shrink_events_total = field<uint64_t>(j, "kv_shrink_events_total", 0);
  m.kv_chunks_released_total = field<uint64_t>(j, "kv_chunks_released_total", 0);
  m.kv_preemptions_total = field<uint64_t>(j, "kv_preemptions_total", 0);
  m.kv_sliding_blocks_used = field<int32_t>(j, "kv_sliding_blocks_used", 0);
  m.kv_sliding_blocks_total = field<int32_t>(j, "kv_sliding_blocks_total", 0);
  m.kv_sliding_bytes_reserved = field<uint64_t>(j, "kv_sliding_bytes_reserved", 0);
  m.kv_sliding_bytes_committed = field<uint64_t>(j, "kv_sliding_bytes_committed", 0);
  m.kv_commits_on_demand_total = field<uint64_t>(j, "kv_commits_on_demand_total", 0);
  if (auto h = j.find("ttft"); h != j.end()) m.ttft = histogram_from(*h);
  if (auto h = j.find("inter_token"); h != j.end()) m.inter_token = histogram_from(*h);
  return m;
}

Json slots_to_json(const std::vector<SlotInfo>& slots) {
  Json list = Json::array();
  for (const auto& s : slots) {
    list.push_back(Json{{"id", s.id}, {"busy", s.busy}, {"request_id", s.request_id}, {"n_ctx", s.n_ctx},
                        {"cached_tokens", s.cached_tokens}, {"prompt_pending", s.prompt_pending}, {"generated", s.generated},
                        {"kv_blocks", s.kv_blocks}, {"kv_blocks_shared", s.kv_blocks_shared},
                        {"kv_device_bytes", s.kv_device_bytes}, {"kv_sliding_blocks", s.kv_sliding_blocks}});
  }
  return list;
}

std::vector<SlotInfo> slots_from_json(const Json& j) {
  std::vector<SlotInfo> out;
  if (!j.is_array()) return out;
  for (const auto& v : j) {
    if (!v.is_object()) continue;
    SlotInfo s;
    s.id = field<int32_t>(v, "id", 0);
    s.busy = field(v, "busy", false);
    s.request_id = field<int64_t>(v, "request_id", -1);
    s.n_ctx = field<int32_t>(v, "n_ctx", 0);
    s.cached_tokens = field<int32_t>(v, "cached_tokens", 0);
    s.prompt_pending = field<int32_t>(v, "prompt_pending", 0);
    s.generated = field<int32_t>(v, "generated", 0);
    s.kv_blocks = field<int32_t>(v, "kv_blocks", 0);
    s.kv_blocks_shared = field<int32_t>(v, "kv_blocks_shared", 0);
    s.kv_device_bytes = field<uint64_t>(v, "kv_device_bytes", 0);
    s.kv_sliding_blocks = field<int32_t>(v, "kv_sliding_blocks", 0);
    out.push_back(s);
  }
  return out;
}

Json error_to_json(const Error& e) { return Json{{"kind", error_kind_name(e.kind)}, {"message", e.message}}; }

Error error_from_json(const Json& j) {
  Error e{ErrorKind::kInternal, "runner: malformed error"};
  if (!j.is_object()) return e;
  const std::string kind = field<std::string>(j, "kind", "");
  for (int k = 0; k <= static_cast<int>(ErrorKind::kInternal); ++k) {
    if (kind == error_kind_name(static_cast<ErrorKind>(k))) e.kind = static_cast<ErrorKind>(k);
  }
  e.message = field<std::string>(j, "message", e.message);
  return e;
}

}  // namespace hearth::protocol
