// The serving process's side of the cross-process KV budget: it registers a segment in the
// budget directory, publishes its KV usage there cheaply (update() is a few atomic stores),
// beats a heartbeat from a background thread, and on each beat works out the limit it must
// apply (its own requested limit, lowered to its fair share of the machine-wide limit). When
// that limit changes, its KvBudgetClient hears of it. The engine glue connects the client to
// the KV pool: a limit below what the process holds means stop admitting, evict cached
// blocks, and wait for running sequences to finish — never kill one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kv/kv_budget_segment.h"
#include "util/result.h"

namespace hearth::kv {

// What the engine glue implements.
class KvBudgetClient {
 public:
  virtual ~KvBudgetClient() = default;
  // The limit this process must now keep its KV memory under (kNoBudgetLimit: none). Called on
  // the heartbeat thread, once when a limit first applies and then on every change; it should
  // hand the number on (e.g. to the pool's set_limit) and return.
  virtual void on_limit_changed(uint64_t limit_bytes) = 0;
};

// What the KV pool holds now, for owners that publish by sampling rather than by update().
struct KvBudgetUsage {
  uint64_t committed_bytes = 0;
  uint64_t used_bytes = 0;
};

struct KvBudgetOptions {
  std::string directory;            // empty: budget_directory_path()
  std::string label;                // shown by `hearth kv ls`; cut to 64 bytes
  uint64_t reserved_bytes = 0;      // the most KV memory this process could commit
  std::chrono::milliseconds heartbeat_period{1000};
  KvBudgetClient* client = nullptr; // may be null (publish only)
};

class KvBudgetRegistration {
 public:
  // Registers this process: removes segments of dead processes, then creates its own
  // segment atomically (a reader never sees half of it) and computes the first limit. Does
  // not start the heartbeat thread (start_heartbeat()).
  static Result<std::unique_ptr<KvBudgetRegistration>> create(const KvBudgetOptions& options);
  // Stops the heartbeat and removes the segment.
  ~KvBudgetRegistration();
  KvBudgetRegistration(const KvBudgetRegistration&) = delete;
  KvBudgetRegistration& operator=(const KvBudgetRegistration&) = delete;

  // Publishes the KV pool's committed and used bytes; cheap enough for every engine step.
  void update(uint64_t committed_bytes, uint64_t used_bytes);
  void set_reserved(uint64_t reserved_bytes);
  // Sampled at every heartbeat and published as by update(): for a pool that only exposes
  // counters. Called on the heartbeat thread; must be quick and thread-safe.
  void set_usage_source(std::function<KvBudgetUsage()> source);
  // Marks the end of loading (state "serving" or "over-limit" from then on).
  void mark_ready();
  // The limit in force now (kNoBudgetLimit: none).
  uint64_t limit() const;
  bool over_limit() const;

  // One heartbeat: stamps the time, re-reads the requested and machine-wide limits, applies
  // a changed limit and tells the client. The heartbeat thread calls it every period; tests
  // call it directly.
  void heartbeat();
  void start_heartbeat();
  void stop_heartbeat();

  const std::string& segment_path() const { return path_; }

 private:
  KvBudgetRegistration() = default;
  BudgetState state_locked() const;
  void publish_locked();

  KvBudgetOptions options_;
  std::string directory_;
  std::string path_;
  int64_t pid_ = 0;
  uint64_t start_ticks_ = 0;
  BudgetSegmentLayout* segment_ = nullptr;

  mutable std::mutex mu_;  // serialises segment writes (engine thread vs heartbeat thread)
  uint64_t reserved_ = 0, committed_ = 0, used_ = 0;
  uint64_t limit_ = kNoBudgetLimit;
  uint64_t reported_limit_ = kNoBudgetLimit;
  bool ready_ = false;
  std::function<KvBudgetUsage()> usage_source_;
  bool warned_machine_limit_ = false;

  std::mutex beat_mu_;  // guards the thread's stop flag
  std::condition_variable beat_cv_;
  bool stopping_ = false;
  std::thread beat_thread_;
};

}  // namespace hearth::kv
