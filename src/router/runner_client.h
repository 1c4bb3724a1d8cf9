// The router's side of one runner process: a protocol::InferenceBackend whose requests go over
// the runner's socket and whose events come back from it, plus the ModelRunner face the
// scheduler uses (memory, busy streams, shrink, stop). If the process dies, every request in
// flight on it ends with a kInternal error event naming how it ended; nothing else is touched.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "protocol/backend.h"
#include "protocol/runner_wire.h"
#include "router/model_runner.h"
#include "router/runner_process.h"

namespace hearth::router {

struct RunnerLaunch {
  std::vector<std::string> argv;                       // `hearth runner ...`, argv[0] the executable
  std::string model_name;                              // for messages
  std::chrono::milliseconds load_timeout{std::chrono::minutes(5)};  // a load that takes longer is killed
  std::chrono::milliseconds stop_grace{std::chrono::seconds(5)};    // kStop, then SIGKILL after this
  std::chrono::milliseconds call_timeout{std::chrono::seconds(60)}; // a submit or call unanswered this long fails
  // Called (on the reader thread) with each loading progress the runner reports, 0..1.
  std::function<void(double fraction)> on_progress;
};

class RunnerStream;

class RunnerClient final : public protocol::InferenceBackend,
                           public ModelRunner,
                           public std::enable_shared_from_this<RunnerClient> {
 public:
  // Starts the process and waits until it is ready. Errors: the runner's own load error (as it
  // reported it), a process that exits or stalls while loading (kUnavailable, with its exit).
  static Result<std::shared_ptr<RunnerClient>> start(const RunnerLaunch& launch);
  ~RunnerClient() override;

  // InferenceBackend
  const protocol::ModelInfo& model_info() const override { return info_; }
  Result<protocol::CompletionSubmission> submit(const protocol::CompletionRequest& request) override;
  Result<protocol::EmbeddingSubmission> submit(const protocol::EmbeddingRequest& request) override;
  Result<protocol::PromptInfo> render_prompt(const protocol::PromptSource& source) const override;
  Result<std::vector<protocol::TokenPiece>> tokenize(const std::string& text, bool add_special, bool parse_special,
                                                     bool with_pieces) const override;
  Result<std::string> detokenize(const std::vector<int32_t>& ids) const override;
  Result<std::string> apply_template(const nlohmann::ordered_json& chat) const override;
  protocol::EngineMetrics metrics() const override;
  std::vector<protocol::SlotInfo> slots() const override;
  void shut_down() override { stop(); }

  // ModelRunner
  std::shared_ptr<protocol::InferenceBackend> backend() override { return shared_from_this(); }
  int32_t in_flight() const override { return in_flight_.load(); }
  bool alive() const override;
  uint64_t memory_bytes() const override;
  uint64_t kv_committed_bytes() const override;
  void shrink_kv() override;
  void stop() override;

  pid_t pid() const { return process_->pid(); }
  protocol::RunnerState state() const;
  // Sends a cancel for one stream (RunnerStream::cancel).
  void cancel_stream(uint64_t id, uint32_t index);

 private:
  explicit RunnerClient(RunnerLaunch launch, std::unique_ptr<RunnerProcess> process);
  void read_loop();
  void fail_everything(const Error& e);
  Error died_error() const;
  // Sends a request frame and waits for its kSubmitted; the streams are made by the reader.
  Result<std::pair<std::vector<std::shared_ptr<protocol::EventStream>>, std::vector<protocol::PromptInfo>>> submit_frame(
      protocol::RunnerMessage type, std::string payload);
  Result<nlohmann::json> call(nlohmann::json op) const;

  struct Pending {
    bool done = false;
    protocol::RunnerFrame reply;
    Error error;
    bool failed = false;
    std::vector<std::shared_ptr<protocol::EventStream>> streams;
  };

  RunnerLaunch launch_;
  std::unique_ptr<RunnerProcess> process_;
  protocol::ModelInfo info_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  protocol::RunnerState state_;
  bool have_info_ = false;
  bool dead_ = false;      // the channel closed (the process exited or was killed)
  bool stopping_ = false;  // stop() was called
  std::string exit_;       // how the process ended
  mutable uint64_t next_id_ = 1;
  mutable std::map<uint64_t, std::shared_ptr<Pending>> pending_;
  std::map<std::pair<uint64_t, uint32_t>, std::shared_ptr<RunnerStream>> streams_;
  std::atomic<int32_t> in_flight_{0};
  std::thread reader_;
  std::thread watchdog_;
};

}  // namespace hearth::router
