// The model scheduler of router mode (see model_router.h).
#include "router/model_router.h"

#include <algorithm>

#include "util/byte_size.h"
#include "util/log.h"

namespace hearth::router {

struct ModelRouter::Entry {
  ModelLoadSpec spec;
  std::shared_ptr<ModelRunner> runner;
  bool loading = true;
  double progress = 0.0;
  bool failed = false;
  Error error;
  int32_t leases = 0;
  int64_t keep_alive_ms = 0;
  bool unload_when_idle = false;                   // keep_alive 0: unload as soon as it is idle
  std::optional<RouterClock::time_point> idle_since;
  RouterClock::time_point last_used{};
};

namespace {

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; }

}  // namespace

ModelRouter::ModelRouter(RouterOptions options, RunnerStarter starter) : options_(std::move(options)), starter_(std::move(starter)) {}

ModelRouter::~ModelRouter() { stop_all(); }

void ModelRouter::changed_locked() {
  ++version_;
  change_cv_.notify_all();
}

bool ModelRouter::busy(const Entry& e) const { return e.loading || e.leases > 0 || (e.runner && e.runner->in_flight() > 0); }

uint64_t ModelRouter::used_memory_locked() const {
  uint64_t used = 0;
  for (const auto& [key, e] : entries_) {
    const uint64_t m = e->runner ? e->runner->memory_bytes() : 0;
    used += std::max(m, e->spec.need_bytes);
  }
  return used;
}

Result<bool> ModelRouter::make_room_locked(const ModelLoadSpec& spec, std::vector<std::shared_ptr<ModelRunner>>& to_stop) {
  const uint64_t limit = options_.memory_limit;
  const std::optional<uint64_t> avail = options_.available_memory ? options_.available_memory() : std::nullopt;
  if (limit > 0 && spec.need_bytes > limit) {
    return make_error(ErrorKind::kOutOfRange, "model '" + spec.name + "' needs " + mib(spec.need_bytes) + " but the memory limit (HEARTH_MAX_MEMORY) is " +
                                                  mib(limit));
  }
  if (avail && spec.need_bytes > *avail + used_memory_locked()) {
    return make_error(ErrorKind::kOutOfRange, "model '" + spec.name + "' needs " + mib(spec.need_bytes) + " but only " +
                                                  mib(*avail + used_memory_locked()) + " would be available with no other model loaded");
  }
  // The machine-wide KV limit (kv/kv_budget_directory.h) is shared with other processes: what
  // they committed is not ours to free, so a model whose first KV cannot fit beside it fails.
  const std::optional<KvBudgetView> kvb = options_.kv_budget ? options_.kv_budget() : std::nullopt;
  const uint64_t kv_limit = kvb ? kvb->machine_limit : 0;
  const uint64_t kv_others = kvb ? kvb->committed_by_others : 0;
  if (kv_limit > 0 && kv_others + spec.kv_need_bytes > kv_limit) {
    return make_error(ErrorKind::kOutOfRange, "model '" + spec.name + "' needs " + mib(spec.kv_need_bytes) + " of KV memory but other processes hold " +
                                                  mib(kv_others) + " of the machine-wide KV limit of " + mib(kv_limit) + " (see `hearth kv`)");
  }
  uint64_t freed = 0;     // memory of runners shrunk or stopped here, not yet visible in `avail`
  uint64_t kv_freed = 0;  // of that, their committed KV
  bool shrunk = false;
  for (;;) {
    const uint64_t used = used_memory_locked();
    const uint64_t used_after = used > freed ? used - freed : 0;
    uint64_t kv_ours = 0;
    for (const auto& [key, e] : entries_) kv_ours += e->runner ? e->runner->kv_committed_bytes() : 0;
    kv_ours = kv_ours > kv_freed ? kv_ours - kv_freed : 0;
    const bool fits_limit = limit == 0 || used_after + spec.need_bytes <= limit;
    const bool fits_avail = !avail || spec.need_bytes <= *avail + freed;
    const bool fits_kv = kv_limit == 0 || kv_others + kv_ours + spec.kv_need_bytes <= kv_limit;
    const bool fits_count = options_.max_loaded <= 0 || static_cast<int32_t>(entries_.size()) < options_.max_loaded;
    if (fits_limit && fits_avail && fits_kv && fits_count) return true;
    if ((!fits_limit || !fits_avail || !fits_kv) && !shrunk) {
      // Idle runners give their cached KV back first: cheaper than unloading a model.
      shrunk = true;
      uint64_t reclaim = 0;
      for (auto& [key, e] : entries_) {
        if (busy(*e) || !e->runner) continue;
        const uint64_t kv = e->runner->kv_committed_bytes();
        if (kv == 0) continue;
        e->runner->shrink_kv();
        reclaim += kv;
      }
      if (reclaim > 0) {
        log_info("router: asked idle models to return their KV memory", {{"model", spec.name}, {"bytes", static_cast<long long>(reclaim)}});
        freed += reclaim;
        kv_freed += reclaim;
        continue;
      }
    }
    std::shared_ptr<Entry> victim;
    for (auto& [key, e] : entries_) {
      if (busy(*e)) continue;
      if (!victim || e->last_used < victim->last_used) victim = e;
    }
    if (!victim) return false;  // every loaded model is busy: wait for one to go idle
    log_info("router: unloading the least recently used idle model to make room",
             {{"model", victim->spec.name}, {"for", spec.name}, {"memory", mib(victim->runner ? victim->runner->memory_bytes() : 0)}});
    freed += victim->runner ? victim->runner->memory_bytes() : 0;
    kv_freed += victim->runner ? victim->runner->kv_committed_bytes() : 0;
    to_stop.push_back(victim->runner);
    entries_.erase(victim->spec.key);
    changed_locked();
  }
}

Result<std::shared_ptr<ModelLease>> ModelRouter::acquire(const ModelLoadSpec& spec, std::optional<int64_t> keep_alive_ms) {
  std::vector<std::shared_ptr<ModelRunner>> to_stop;
  auto stop_evicted = [&] {
    for (auto& r : to_stop) {
      if (r) r->stop();
    }
    to_stop.clear();
  };
  std::unique_lock lock(mu_);
  const auto give_up_at = RouterClock::now() + options_.wait_for_room;
  bool waiting = false;
  auto wait_once = [&]() -> Status {
    if (!waiting) {
      if (waiting_ >= options_.max_waiting) {
        return make_error(ErrorKind::kUnavailable, "server busy: " + std::to_string(waiting_) + " requests are waiting for models (HEARTH_MAX_QUEUE)");
      }
      waiting = true;
      ++waiting_;
    }
    lock.unlock();
    stop_evicted();
    lock.lock();
    if (cv_.wait_until(lock, give_up_at) == std::cv_status::timeout) {
      return make_error(ErrorKind::kUnavailable, "no room to load model '" + spec.name + "': every loaded model stayed busy");
    }
    return ok_status();
  };
  struct WaitCount {
    ModelRouter& r;
    bool& waiting;
    ~WaitCount() {
      if (waiting) --r.waiting_;
    }
  } wait_count{*this, waiting};
  auto make_lease = [&](const std::shared_ptr<Entry>& e) {
    e->leases++;
    e->keep_alive_ms = keep_alive_ms.value_or(options_.default_keep_alive_ms);
    e->unload_when_idle = e->keep_alive_ms == 0;
    e->last_used = options_.now();
    e->idle_since.reset();
    return std::make_shared<ModelLease>(e->runner, [this, e] { release(e); });
  };
  for (;;) {
    if (stopped_) return make_error(ErrorKind::kUnavailable, "the server is shutting down");
    auto it = entries_.find(spec.key);
    if (it != entries_.end()) {
      auto e = it->second;
      if (e->loading) {
        while (e->loading && !stopped_) HEARTH_TRY(wait_once());
        if (e->failed) return e->error;
        continue;
      }
      if (e->runner && e->runner->alive()) {
        auto lease = make_lease(e);
        lock.unlock();
        stop_evicted();
        return lease;
      }
      to_stop.push_back(e->runner);  // died: reaped here, a fresh runner is started below
      entries_.erase(it);
      changed_locked();
      continue;
    }
    auto room = make_room_locked(spec, to_stop);
    if (!room.ok()) return room.error();
    if (!*room) {
      HEARTH_TRY(wait_once());
      continue;
    }
    auto e = std::make_shared<Entry>();
    e->spec = spec;
    entries_[spec.key] = e;
    changed_locked();
    lock.unlock();
    stop_evicted();
    // Progress arrives on the runner's reader thread while the starter waits; it only grows.
    // (A weak reference: the runner keeps this callback, and the entry keeps the runner.)
    auto progress = [this, weak = std::weak_ptr<Entry>(e)](double fraction) {
      auto e = weak.lock();
      if (!e) return;
      std::lock_guard plock(mu_);
      if (!e->loading || fraction <= e->progress) return;
      e->progress = std::min(fraction, 1.0);
      changed_locked();
    };
    auto runner = starter_(spec, progress);
    lock.lock();
    e->loading = false;
    if (!runner.ok()) {
      e->failed = true;
      e->error = runner.error();
      failed_[spec.name] = runner.error();
      auto cur = entries_.find(spec.key);
      if (cur != entries_.end() && cur->second == e) entries_.erase(cur);
      changed_locked();
      cv_.notify_all();
      return runner.error();
    }
    e->runner = std::move(runner).value();
    e->progress = 1.0;
    failed_.erase(spec.name);
    changed_locked();
    cv_.notify_all();
    if (stopped_) {
      e->runner->stop();
      return make_error(ErrorKind::kUnavailable, "the server is shutting down");
    }
    return make_lease(e);
  }
}

void ModelRouter::release(const std::shared_ptr<Entry>& e) {
  {
    std::lock_guard lock(mu_);
    e->leases--;
  }
  cv_.notify_all();
}

bool ModelRouter::unload(const std::string& key) {
  std::shared_ptr<ModelRunner> stop;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return false;
    auto& e = *it->second;
    e.keep_alive_ms = 0;
    e.unload_when_idle = true;
    if (!busy(e)) {
      stop = e.runner;
      entries_.erase(it);
      changed_locked();
    }
  }
  if (stop) stop->stop();
  cv_.notify_all();
  return true;
}

void ModelRouter::tick() {
  std::vector<std::shared_ptr<ModelRunner>> to_stop;
  {
    std::lock_guard lock(mu_);
    const auto now = options_.now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto& e = *it->second;
      if (e.loading) {
        ++it;
        continue;
      }
      if (!e.runner || !e.runner->alive()) {
        if (e.leases == 0) {
          to_stop.push_back(e.runner);
          it = entries_.erase(it);
          changed_locked();
          continue;
        }
        ++it;
        continue;
      }
      if (busy(e)) {
        e.idle_since.reset();
        ++it;
        continue;
      }
      if (!e.idle_since) e.idle_since = now;
      const bool expired = e.unload_when_idle || (e.keep_alive_ms >= 0 && now >= *e.idle_since + std::chrono::milliseconds(e.keep_alive_ms));
      if (expired) {
        log_info("router: unloading model (keep_alive expired)", {{"model", e.spec.name}});
        to_stop.push_back(e.runner);
        it = entries_.erase(it);
        changed_locked();
        continue;
      }
      ++it;
    }
  }
  for (auto& r : to_stop) {
    if (r) r->stop();
  }
  if (!to_stop.empty()) cv_.notify_all();
}

void ModelRouter::start_timer() {
  timer_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopped_) {
      timer_cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (stopped_) break;
      lock.unlock();
      tick();
      lock.lock();
    }
  });
}

std::vector<LoadedModelStatus> ModelRouter::loaded() const {
  std::lock_guard lock(mu_);
  std::vector<LoadedModelStatus> out;
  const auto now = options_.now();
  for (const auto& [key, e] : entries_) {
    LoadedModelStatus s;
    s.key = key;
    s.name = e->spec.name;
    s.loading = e->loading;
    s.progress = e->progress;
    s.runner = e->runner;
    s.memory_bytes = e->runner ? std::max(e->runner->memory_bytes(), e->spec.need_bytes) : e->spec.need_bytes;
    s.in_flight = e->runner ? e->runner->in_flight() : 0;
    s.last_used = e->last_used;
    if (e->keep_alive_ms >= 0) s.expires = e->idle_since.value_or(now) + std::chrono::milliseconds(e->keep_alive_ms);
    out.push_back(std::move(s));
  }
  return out;
}

std::map<std::string, Error> ModelRouter::failed_loads() const {
  std::lock_guard lock(mu_);
  return failed_;
}

uint64_t ModelRouter::wait_for_change(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  change_cv_.wait_for(lock, timeout, [&] { return version_ != seen || stopped_; });
  return version_;
}

void ModelRouter::stop_all() {
  std::map<std::string, std::shared_ptr<Entry>> all;
  {
    std::lock_guard lock(mu_);
    if (stopped_ && entries_.empty() && !timer_.joinable()) return;
    stopped_ = true;
    all.swap(entries_);
    changed_locked();
  }
  timer_cv_.notify_all();
  cv_.notify_all();
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) timer_.join();
  for (auto& [key, e] : all) {
    if (e->runner) e->runner->stop();
  }
}

}  // namespace hearth::router
