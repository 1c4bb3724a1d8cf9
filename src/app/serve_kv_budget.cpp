// Wires `hearth serve` to the cross-process KV budget; see serve_kv_budget.h.
#include "app/serve_kv_budget.h"

#include <algorithm>

#include "util/log.h"

namespace hearth::app {

std::unique_ptr<ServeKvBudget> ServeKvBudget::start(const std::string& label) {
  std::unique_ptr<ServeKvBudget> budget(new ServeKvBudget());
  kv::KvBudgetOptions options;
  options.label = label;
  options.client = budget.get();
  auto registration = kv::KvBudgetRegistration::create(options);
  if (!registration.ok()) {
    log_warn("kv budget unavailable; serving without a shared KV limit", {{"error", registration.error().message}});
    return nullptr;
  }
  budget->registration_ = std::move(registration).value();
  budget->registration_->start_heartbeat();
  return budget;
}

ServeKvBudget::~ServeKvBudget() { registration_.reset(); }

void ServeKvBudget::attach(std::shared_ptr<engine::LocalBackend> backend, uint64_t reserved_bytes, uint64_t block_bytes) {
  uint64_t limit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    backend_ = std::move(backend);
    block_bytes_ = block_bytes;
    limit = limit_;
  }
  if (limit != kv::kNoBudgetLimit) backend_->set_kv_limit(limit);
  registration_->set_reserved(reserved_bytes);
  registration_->set_usage_source([this] { return sample(); });
  registration_->mark_ready();
}

// The pool commits a block's pages when it is first written and keeps them, so what it has
// committed is the most it has ever used.
kv::KvBudgetUsage ServeKvBudget::sample() {
  std::lock_guard<std::mutex> lock(mu_);
  kv::KvBudgetUsage usage;
  if (!backend_) return usage;
  usage.used_bytes = static_cast<uint64_t>(std::max(backend_->metrics().kv_blocks_used, 0)) * block_bytes_;
  committed_high_water_ = std::max(committed_high_water_, usage.used_bytes);
  usage.committed_bytes = committed_high_water_;
  return usage;
}

void ServeKvBudget::on_limit_changed(uint64_t limit_bytes) {
  std::shared_ptr<engine::LocalBackend> backend;
  {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = limit_bytes;
    backend = backend_;
  }
  if (backend) backend->set_kv_limit(limit_bytes);
}

}  // namespace hearth::app
