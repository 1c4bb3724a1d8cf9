// `hearth serve`'s part in the cross-process KV budget: registers the process at start (state
// "starting" while the model loads), then publishes the serving engine's KV use at every
// heartbeat (the elastic pool's own committed and used bytes) and hands each limit change to
// the engine (ServingEngine::set_kv_limit: evict cached prefixes, release empty chunks, admit
// nothing new past the limit; running requests finish). The budget is advisory for this
// process: when the budget directory cannot be used, serving goes on without it (logged).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/local_backend.h"
#include "kv/kv_budget_owner.h"

namespace hearth::app {

class ServeKvBudget final : public kv::KvBudgetClient {
 public:
  // Registers under `label`; null (after a logged warning) when registration fails.
  static std::unique_ptr<ServeKvBudget> start(const std::string& label);
  // Stops the heartbeat and removes the segment before the backend goes away.
  ~ServeKvBudget() override;

  // After the model is loaded: from now on the backend's KV use is published and limits reach
  // it (one that arrived while loading too).
  void attach(std::shared_ptr<engine::LocalBackend> backend);

  void on_limit_changed(uint64_t limit_bytes) override;

 private:
  ServeKvBudget() = default;
  kv::KvBudgetUsage sample();

  std::unique_ptr<kv::KvBudgetRegistration> registration_;
  std::mutex mu_;
  std::shared_ptr<engine::LocalBackend> backend_;
  uint64_t limit_ = kv::kNoBudgetLimit;
};

}  // namespace hearth::app
