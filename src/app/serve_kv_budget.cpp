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

// The budget's limit in the engine's terms: the pool reads 0 as "no limit", while a budget
// limit of 0 holds every new request back, so it becomes one byte (less than any block).
static size_t engine_kv_limit(uint64_t budget_limit) {
  if (budget_limit == kv::kNoBudgetLimit) return 0;
  return static_cast<size_t>(std::max<uint64_t>(budget_limit, 1));
}

void ServeKvBudget::attach(std::shared_ptr<engine::LocalBackend> backend) {
  uint64_t limit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    backend_ = std::move(backend);
    limit = limit_;
  }
  if (limit != kv::kNoBudgetLimit) backend_->set_kv_limit(engine_kv_limit(limit));
  registration_->set_reserved(backend_->kv_pool_stats().reserved_bytes);
  registration_->set_usage_source([this] { return sample(); });
  registration_->mark_ready();
}

kv::KvBudgetUsage ServeKvBudget::sample() {
  std::lock_guard<std::mutex> lock(mu_);
  kv::KvBudgetUsage usage;
  if (!backend_) return usage;
  const kv::KvPoolStats stats = backend_->kv_pool_stats();
  usage.used_bytes = stats.used_bytes;
  usage.committed_bytes = stats.committed_bytes;
  return usage;
}

void ServeKvBudget::on_limit_changed(uint64_t limit_bytes) {
  std::shared_ptr<engine::LocalBackend> backend;
  {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = limit_bytes;
    backend = backend_;
  }
  if (backend) backend->set_kv_limit(engine_kv_limit(limit_bytes));
}

}  // namespace hearth::app
