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
  uint64_t kv_need_bytes = 0;  // of need_bytes, the KV it commits first (for the cross-process KV budget)
};

// A load reports its progress (0..1) through this while the starter runs.
using LoadProgress = std::function<void(double fraction)>;
using RunnerStarter = std::function<Result<std::shared_ptr<ModelRunner>>(const ModelLoadSpec& spec, const LoadProgress& progress)>;

// The machine-wide KV budget as the router sees it (kv/kv_budget_directory.h, read by the app):
// the limit on all serving processes' KV together, and what processes other than this router's
// runners have committed of it.
struct KvBudgetView {
  uint64_t machine_limit = 0;        // 0: none set
  uint64_t committed_by_others = 0;  // live processes that are not this router's runners
};

struct RouterOptions {
  int32_t max_loaded = 3;                  // HEARTH_MAX_LOADED_MODELS (0: no cap)
  int64_t default_keep_alive_ms = 5 * 60 * 1000;  // HEARTH_KEEP_ALIVE (<0: forever)
  int32_t max_waiting = 512;               // HEARTH_MAX_QUEUE: requests waiting for a model to load
  uint64_t memory_limit = 0;               // HEARTH_MAX_MEMORY: all runners together (0: none)
  std::function<std::optional<uint64_t>()> available_memory;  // MemAvailable (nullopt: unknown)
  std::function<RouterClock::time_point()> now = [] { return RouterClock::now(); };
  std::chrono::milliseconds wait_for_room{std::chrono::minutes(5)};  // a request waits this long for a busy model to go idle
  // The cross-process KV budget (nullopt or unset: none). With a machine-wide limit, a model
  // loads only when its first KV fits beside what others and the loaded runners committed.
  std::function<std::optional<KvBudgetView>()> kv_budget;
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
  double progress = 0.0;  // loading: 0..1 as the runner reports it; 1 once loaded
  uint64_t memory_bytes = 0;
  int32_t in_flight = 0;
  std::optional<RouterClock::time_point> expires;  // nullopt: never (or busy)
  RouterClock::time_point last_used{};             // the last request that took it (its load is one)
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
  // The last load of each model that failed and has not loaded since (name -> error), for
  // llama-server's `"failed": true` status.
  std::map<std::string, Error> failed_loads() const;
  // A counter that grows at every change of what loaded() or failed_loads() return (a model
  // starts loading, makes progress, is ready, fails, is unloaded). Blocks until it differs from
  // `seen` or `timeout` passes (or the router stops); returns its value then.
  uint64_t wait_for_change(uint64_t seen, std::chrono::milliseconds timeout) const;
  void stop_all();

 private:
  struct Entry;
  bool busy(const Entry& e) const;
  uint64_t used_memory_locked() const;
  // Makes room for `spec` (shrinks and evicts idle runners); false when it has to wait.
  Result<bool> make_room_locked(const ModelLoadSpec& spec, std::vector<std::shared_ptr<ModelRunner>>& to_stop);
  void release(const std::shared_ptr<Entry>& e);
  void changed_locked();

  RouterOptions options_;
  RunnerStarter starter_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  std::map<std::string, Error> failed_;  // by name
  uint64_t version_ = 0;
  mutable std::condition_variable change_cv_;
  int32_t waiting_ = 0;
  bool stopped_ = false;
  std::thread timer_;
  std::condition_variable timer_cv_;
};

}  // namespace hearth::router
