// The wire between the router (`hearth serve` without -m) and a runner process (`hearth
// runner`): length-prefixed frames over a Unix-domain socket, each carrying one message type, a
// request id, a stream index and a payload (the codec's JSON for requests and events, small
// JSON objects for the rest). Both sides read untrusted bytes: a bad frame is an error value.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/backend.h"
#include "util/result.h"

namespace hearth::protocol {

enum class RunnerMessage : uint8_t {
  // router -> runner
  kSubmitCompletion = 1,  // id: request; payload: encode(CompletionRequest)
  kSubmitEmbedding = 2,   // id: request; payload: encode(EmbeddingRequest)
  kCancel = 3,            // id: request; index: stream
  kCall = 4,              // id: call; payload: {"op": ..., args}
  kSetKvLimit = 5,        // payload: {"bytes": N} (0: no limit), or {"shrink": true}: give cached KV back now
  kStop = 6,              // finish: end running requests with an error, then exit
  // runner -> router
  kState = 64,            // payload: encode_runner_state
  kModelInfo = 65,        // payload: encode(ModelInfo); sent once, before "ready"
  kSubmitted = 66,        // id: request; payload: {"streams": n, "prompts": [...]} or an error event
  kEvent = 67,            // id: request; index: stream; payload: encode(Event)
  kReply = 68,            // id: call; payload: {"result": ...} or {"error": {...}}
};

struct RunnerFrame {
  RunnerMessage type = RunnerMessage::kState;
  uint64_t id = 0;
  uint32_t index = 0;
  std::string payload;
};

// Frames larger than this are refused by both sides (a prompt of megabytes fits easily).
constexpr size_t kRunnerFrameMaxBytes = 256u << 20;

// One end of the socket. send() is thread-safe; receive() has one reader.
class RunnerChannel {
 public:
  explicit RunnerChannel(int fd) : fd_(fd) {}
  ~RunnerChannel();
  RunnerChannel(const RunnerChannel&) = delete;
  RunnerChannel& operator=(const RunnerChannel&) = delete;

  // Errors: kIo when the peer is gone.
  Status send(const RunnerFrame& frame);
  // Blocks for the next frame. Errors: kIo at end of file (the peer exited), kCorrupt for a
  // frame that is too large or of an unknown type.
  Result<RunnerFrame> receive();
  // Wakes a blocked receive() (it then fails) without closing the descriptor.
  void shut_down();
  int fd() const { return fd_; }

 private:
  int fd_;
  std::mutex send_mu_;
};

// What a runner reports about itself, at each change and every second.
struct RunnerState {
  enum class Phase { kLoading, kReady, kFailed, kStopping };
  Phase phase = Phase::kLoading;
  double progress = 0.0;          // loading: 0..1
  uint64_t resident_bytes = 0;    // the process's RSS
  uint64_t weights_bytes = 0;     // the model file
  uint64_t kv_committed_bytes = 0;
  uint64_t kv_limit_bytes = 0;
  int32_t busy_slots = 0;
  int32_t waiting = 0;
  Error error;                    // kFailed: why
};
const char* runner_phase_name(RunnerState::Phase phase);
std::string encode_runner_state(const RunnerState& s);
Result<RunnerState> decode_runner_state(std::string_view bytes);

// kSubmitted's payload.
// A prepared prompt as it crosses to the router: counts, ids, text and how to split the output
// (tool calls, reasoning), which the server's parser needs.
nlohmann::json prompt_info_to_json(const PromptInfo& p);
PromptInfo prompt_info_from_json(const nlohmann::json& v);
std::string encode_submitted(size_t n_streams, const std::vector<PromptInfo>& prompts);
Result<std::pair<size_t, std::vector<PromptInfo>>> decode_submitted(std::string_view bytes);

// Status snapshots for /metrics and /slots (kCall ops "metrics" and "slots").
nlohmann::json metrics_to_json(const EngineMetrics& m);
EngineMetrics metrics_from_json(const nlohmann::json& j);
nlohmann::json slots_to_json(const std::vector<SlotInfo>& slots);
std::vector<SlotInfo> slots_from_json(const nlohmann::json& j);
nlohmann::json error_to_json(const Error& e);
Error error_from_json(const nlohmann::json& j);

}  // namespace hearth::protocol
