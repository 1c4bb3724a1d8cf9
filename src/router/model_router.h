// The model-level scheduler of router mode: which models are loaded (one ModelRunner each),
// loading on first use, keep_alive expiry, the loaded-model cap, memory fit (shrink idle
// runners' KV first, then evict idle models least recently used; never a busy one), and the
// bound on requests waiting for a model. Pure logic over injected seams (a runner starter, a
// clock, the available memory), so it is tested with fakes and no process.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "router/model_runner.h"
#include "util/result.h"

namespace hearth::router {

using RouterClock = std::chrono::steady_clock;

// What to load: a key naming the exact model (stored name + manifest digest), the name shown,
// and the memory it needs before it has served anything (weights + buffers + a little KV).
struct ModelLoadSpec {
  std::string key;
  std::string name;
  uint64_t need_bytes = 0;
};

using RunnerStarter = std::function<Result<std::shared_ptr<ModelRunner>>(const ModelLoadSpec& spec)>;

struct RouterOptions {
  int32_t max_loaded = 3;                  // HEARTH_MAX_LOADED_MODELS (0: no cap)
  int64_t default_keep_alive_ms = 5 * 60 * 1000;  // HEARTH_KEEP_ALIVE (<0: forever)
  int32_t max_waiting = 512;               // HEARTH_MAX_QUEUE: requests waiting for a model to load
  uint64_t memory_limit = 0;               // HEARTH_MAX_MEMORY: all runners together (0: none)
  std::function<std::optional<uint64_t>()> available_memory;  // MemAvailable (nullopt: unknown)
  std::function<RouterClock::time_point()> now = [] { return RouterClock::now(); };
  std::chrono::milliseconds wait_for_room{std::chrono::minutes(5)};  // a request waits this long for a busy model to go idle
};

// A loaded model held for one request: while any lease is held the model counts as busy, and
// its keep_alive runs from the moment it is idle again.
class ModelLease {
 public:
  ModelLease(std::shared_ptr<ModelRunner> runner, std::function<void()> release)
      : runner_(std::move(runner)), release_(std::move(release)) {}
  ~ModelLease() {
    if (release_) release_();
  }
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;
  std::shared_ptr<protocol::InferenceBackend> backend() const { return runner_->backend(); }
  ModelRunner& runner() const { return *runner_; }

 private:
  std::shared_ptr<ModelRunner> runner_;
  std::function<void()> release_;
};

// One loaded (or loading) model, for /api/ps and the router endpoints.
struct LoadedModelStatus {
  std::string key, name;
  bool loading = false;
  uint64_t memory_bytes = 0;
  int32_t in_flight = 0;
  std::optional<RouterClock::time_point> expires;  // nullopt: never (or busy)
  std::shared_ptr<ModelRunner> runner;             // null while loading
};

class ModelRouter {
 public:
  ModelRouter(RouterOptions options, RunnerStarter starter);
  ~ModelRouter();  // stops every runner

  // The model loaded (loading it first, maybe evicting idle ones), held by the lease.
  // `keep_alive_ms`: this request's keep_alive (nullopt: the default). Errors: kUnavailable when
  // too many requests wait (503), kOutOfRange when the model cannot fit even alone (needed vs
  // available), or the runner's load error.
  Result<std::shared_ptr<ModelLease>> acquire(const ModelLoadSpec& spec, std::optional<int64_t> keep_alive_ms);
  // Unloads the model now if idle, else once its requests finish. False when it is not loaded.
  bool unload(const std::string& key);
  // Unloads expired idle models and forgets dead runners. Called every 100 ms by the router's
  // own thread when `start_timer()` ran, or by tests with a fake clock.
  void tick();
  void start_timer();
  std::vector<LoadedModelStatus> loaded() const;
  void stop_all();

 private:
  struct Entry;
  bool busy(const Entry& e) const;
  uint64_t used_memory_locked() const;
  // Makes room for `spec` (shrinks and evicts idle runners); false when it has to wait.
  Result<bool> make_room_locked(const ModelLoadSpec& spec, std::vector<std::shared_ptr<ModelRunner>>& to_stop);
  void release(const std::shared_ptr<Entry>& e);

  RouterOptions options_;
  RunnerStarter starter_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  int32_t waiting_ = 0;
  bool stopped_ = false;
  std::thread timer_;
  std::condition_variable timer_cv_;
};

}  // namespace hearth::router
