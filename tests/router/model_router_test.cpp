// The model scheduler with fake runners and a fake clock: load on first use, one load shared by
// concurrent requests, keep_alive expiry (0, a duration, forever), the loaded-model cap with
// least-recently-used eviction of idle models only, memory fit (shrink idle KV first, then
// evict; a model too large alone is an error with both numbers), the waiting-request bound,
// load failures, and a dead runner replaced by the next request.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "router/model_router.h"

namespace hearth::router {
namespace {

class FakeRunner final : public ModelRunner {
 public:
  explicit FakeRunner(uint64_t memory) : memory_(memory) {}
  std::shared_ptr<protocol::InferenceBackend> backend() override { return nullptr; }
  int32_t in_flight() const override { return in_flight_.load(); }
  bool alive() const override { return alive_.load() && !stopped_.load(); }
  uint64_t memory_bytes() const override { return memory_.load(); }
  uint64_t kv_committed_bytes() const override { return kv_.load(); }
  void shrink_kv() override {
    shrinks_++;
    memory_ -= kv_.exchange(0);
  }
  void stop() override { stopped_ = true; }

  std::atomic<int32_t> in_flight_{0};
  std::atomic<bool> alive_{true};
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> memory_;
  std::atomic<uint64_t> kv_{0};
  std::atomic<int> shrinks_{0};
};

constexpr uint64_t kMiB = 1 << 20;

struct Harness {
  RouterClock::time_point now = RouterClock::time_point() + std::chrono::hours(1);
  std::map<std::string, std::shared_ptr<FakeRunner>> started;  // latest per key
  std::atomic<int> loads{0};
  std::function<Result<std::shared_ptr<ModelRunner>>(const ModelLoadSpec&)> on_load;
  std::function<void(const LoadProgress&)> on_progress;  // runs inside the load
  std::mutex mu;

  RouterOptions options() {
    RouterOptions o;
    o.now = [this] { return now; };
    o.wait_for_room = std::chrono::milliseconds(300);
    return o;
  }
  RunnerStarter starter() {
    return [this](const ModelLoadSpec& spec, const LoadProgress& progress) -> Result<std::shared_ptr<ModelRunner>> {
      if (on_progress) on_progress(progress);
      loads++;
      if (on_load) return on_load(spec);
      auto r = std::make_shared<FakeRunner>(spec.need_bytes);
      std::lock_guard lock(mu);
      started[spec.key] = r;
      return std::shared_ptr<ModelRunner>(r);
    };
  }
  std::shared_ptr<FakeRunner> runner(const std::string& key) {
    std::lock_guard lock(mu);
    return started[key];
  }
};

ModelLoadSpec spec(const std::string& key, uint64_t need = 100 * kMiB) { return ModelLoadSpec{key, key, need}; }

std::vector<std::string> loaded_keys(const ModelRouter& r) {
  std::vector<std::string> keys;
  for (const auto& m : r.loaded()) keys.push_back(m.key);
  return keys;
}

TEST(ModelRouter, LoadsOnFirstUseAndReusesTheRunner) {
  Harness h;
  ModelRouter r(h.options(), h.starter());
  { auto a = r.acquire(spec("a"), std::nullopt); ASSERT_TRUE(a.ok()); }
  { auto a = r.acquire(spec("a"), std::nullopt); ASSERT_TRUE(a.ok()); }
  EXPECT_EQ(h.loads.load(), 1);
  EXPECT_EQ(loaded_keys(r), std::vector<std::string>{"a"});
}

TEST(ModelRouter, ReportsWhenEachModelWasLastUsed) {
  Harness h;
  ModelRouter r(h.options(), h.starter());
  { ASSERT_TRUE(r.acquire(spec("b"), std::nullopt).ok()); }
  const auto b_loaded = h.now;
  h.now += std::chrono::seconds(1);
  { ASSERT_TRUE(r.acquire(spec("a"), std::nullopt).ok()); }
  h.now += std::chrono::seconds(1);
  { ASSERT_TRUE(r.acquire(spec("b"), std::nullopt).ok()); }  // b again, not loaded again
  std::map<std::string, RouterClock::time_point> used;
  for (const auto& m : r.loaded()) used[m.key] = m.last_used;
  EXPECT_EQ(used.at("a"), b_loaded + std::chrono::seconds(1));
  EXPECT_EQ(used.at("b"), b_loaded + std::chrono::seconds(2));
  EXPECT_EQ(h.loads.load(), 2);
}

TEST(ModelRouter, ConcurrentRequestsShareOneLoad) {
  Harness h;
  std::promise<void> release;
  auto gate = release.get_future().share();
  h.on_load = [&](const ModelLoadSpec& s) -> Result<std::shared_ptr<ModelRunner>> {
    gate.wait();
    return std::shared_ptr<ModelRunner>(std::make_shared<FakeRunner>(s.need_bytes));
  };
  ModelRouter r(h.options(), h.starter());
  auto first = std::async(std::launch::async, [&] { return r.acquire(spec("a"), std::nullopt).ok(); });
  auto second = std::async(std::launch::async, [&] { return r.acquire(spec("a"), std::nullopt).ok(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  release.set_value();
  EXPECT_TRUE(first.get());
  EXPECT_TRUE(second.get());
  EXPECT_EQ(h.loads.load(), 1);
}

TEST(ModelRouter, KeepAliveExpiresOnlyWhenIdle) {
  Harness h;
  ModelRouter r(h.options(), h.starter());
  { ASSERT_TRUE(r.acquire(spec("a"), 2000).ok()); }
  h.runner("a")->in_flight_ = 1;  // a stream still running
  h.now += std::chrono::seconds(10);
  r.tick();
  EXPECT_EQ(loaded_keys(r).size(), 1u) << "busy models never expire";
  h.runner("a")->in_flight_ = 0;
  r.tick();  // idle from now
  h.now += std::chrono::milliseconds(1999);
  r.tick();
  EXPECT_EQ(loaded_keys(r).size(), 1u);
  h.now += std::chrono::milliseconds(1);
  r.tick();
  EXPECT_TRUE(loaded_keys(r).empty());
  EXPECT_TRUE(h.runner("a")->stopped_.load());
}

TEST(ModelRouter, KeepAliveZeroUnloadsAtOnceAndNegativeNever) {
  Harness h;
  ModelRouter r(h.options(), h.starter());
  { ASSERT_TRUE(r.acquire(spec("zero"), 0).ok()); }
  { ASSERT_TRUE(r.acquire(spec("forever"), -1).ok()); }
  r.tick();
  EXPECT_EQ(loaded_keys(r), std::vector<std::string>{"forever"});
  h.now += std::chrono::hours(24 * 365);
  r.tick();
  EXPECT_EQ(loaded_keys(r), std::vector<std::string>{"forever"});
  EXPECT_TRUE(r.unload("forever"));
  EXPECT_TRUE(loaded_keys(r).empty());
  EXPECT_FALSE(r.unload("forever"));
}

TEST(ModelRouter, TheCapEvictsTheLeastRecentlyUsedIdleModelNeverABusyOne) {
  Harness h;
  auto o = h.options();
  o.max_loaded = 2;
  ModelRouter r(o, h.starter());
  { ASSERT_TRUE(r.acquire(spec("a"), std::nullopt).ok()); }
  h.now += std::chrono::seconds(1);
  { ASSERT_TRUE(r.acquire(spec("b"), std::nullopt).ok()); }
  h.now += std::chrono::seconds(1);
  h.runner("a")->in_flight_ = 1;  // a is older but busy
  { ASSERT_TRUE(r.acquire(spec("c"), std::nullopt).ok()); }
  auto keys = loaded_keys(r);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "c"}));
  EXPECT_TRUE(h.runner("b")->stopped_.load());
  EXPECT_FALSE(h.runner("a")->stopped_.load());
}

TEST(ModelRouter, WaitsForRoomWhenEveryModelIsBusyThenGivesUp) {
  Harness h;
  auto o = h.options();
  o.max_loaded = 1;
  ModelRouter r(o, h.starter());
  auto held = r.acquire(spec("a"), std::nullopt);
  ASSERT_TRUE(held.ok());
  auto refused = r.acquire(spec("b"), std::nullopt);  // "a" stays busy past wait_for_room
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kUnavailable);
  // Released while another waits: the waiter gets the room.
  auto waiter = std::async(std::launch::async, [&] { return r.acquire(spec("b"), std::nullopt).ok(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  held->reset();
  EXPECT_TRUE(waiter.get());
  EXPECT_TRUE(h.runner("a")->stopped_.load());
}

TEST(ModelRouter, TheWaitingBoundRefusesWith503) {
  Harness h;
  auto o = h.options();
  o.max_loaded = 1;
  o.max_waiting = 1;
  o.wait_for_room = std::chrono::seconds(2);
  ModelRouter r(o, h.starter());
  auto held = r.acquire(spec("a"), std::nullopt);
  ASSERT_TRUE(held.ok());
  auto waiter = std::async(std::launch::async, [&] { return r.acquire(spec("b"), std::nullopt).ok(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto refused = r.acquire(spec("c"), std::nullopt);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(refused.error().message.find("HEARTH_MAX_QUEUE"), std::string::npos);
  held->reset();
  EXPECT_TRUE(waiter.get()) << "an accepted waiter is never dropped";
}

TEST(ModelRouter, MemoryFitShrinksIdleKvBeforeEvicting) {
  Harness h;
  auto o = h.options();
  o.memory_limit = 300 * kMiB;
  ModelRouter r(o, h.starter());
  { ASSERT_TRUE(r.acquire(spec("a", 100 * kMiB), std::nullopt).ok()); }
  auto a = h.runner("a");
  a->memory_ = 180 * kMiB;  // 80 MiB of KV committed while serving
  a->kv_ = 80 * kMiB;
  { ASSERT_TRUE(r.acquire(spec("b", 150 * kMiB), std::nullopt).ok()); }
  EXPECT_EQ(a->shrinks_.load(), 1);
  EXPECT_FALSE(a->stopped_.load()) << "shrinking made room; nothing evicted";
  EXPECT_EQ(loaded_keys(r).size(), 2u);
  // Now nothing is left to shrink: loading c evicts the least recently used idle model.
  { ASSERT_TRUE(r.acquire(spec("c", 150 * kMiB), std::nullopt).ok()); }
  EXPECT_TRUE(a->stopped_.load());
  EXPECT_FALSE(h.runner("b")->stopped_.load());
}

TEST(ModelRouter, AModelTooLargeAloneIsAnErrorWithBothNumbers) {
  Harness h;
  auto o = h.options();
  o.memory_limit = 200 * kMiB;
  ModelRouter r(o, h.starter());
  auto big = r.acquire(spec("big", 300 * kMiB), std::nullopt);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().kind, ErrorKind::kOutOfRange);
  EXPECT_NE(big.error().message.find("300 MiB"), std::string::npos) << big.error().message;
  EXPECT_NE(big.error().message.find("200 MiB"), std::string::npos) << big.error().message;
  EXPECT_EQ(h.loads.load(), 0);

  auto o2 = h.options();
  o2.available_memory = [] { return std::optional<uint64_t>(50 * kMiB); };
  ModelRouter r2(o2, h.starter());
  auto big2 = r2.acquire(spec("big", 300 * kMiB), std::nullopt);
  ASSERT_FALSE(big2.ok());
  EXPECT_NE(big2.error().message.find("50 MiB"), std::string::npos) << big2.error().message;
}

TEST(ModelRouter, ALoadFailureReachesEveryWaiterAndLeavesNothingLoaded) {
  Harness h;
  h.on_load = [](const ModelLoadSpec&) -> Result<std::shared_ptr<ModelRunner>> {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return make_error(ErrorKind::kCorrupt, "not a model");
  };
  ModelRouter r(h.options(), h.starter());
  auto first = std::async(std::launch::async, [&] { return r.acquire(spec("bad"), std::nullopt); });
  auto second = std::async(std::launch::async, [&] { return r.acquire(spec("bad"), std::nullopt); });
  auto a = first.get();
  auto b = second.get();
  ASSERT_FALSE(a.ok());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(a.error().message, "not a model");
  EXPECT_EQ(b.error().message, "not a model");
  EXPECT_TRUE(loaded_keys(r).empty());
}

TEST(ModelRouter, LoadProgressIsVisibleWhileLoadingAndEveryChangeIsSignalled) {
  Harness h;
  std::promise<void> at_half, go_on;
  auto go_on_future = go_on.get_future().share();
  h.on_progress = [&](const LoadProgress& progress) {
    progress(0.25);
    progress(0.5);
    progress(0.4);  // a value that goes back is ignored
    at_half.set_value();
    go_on_future.wait();
  };
  ModelRouter r(h.options(), h.starter());
  const uint64_t v0 = r.wait_for_change(~uint64_t{0}, std::chrono::milliseconds(0));
  auto lease = std::async(std::launch::async, [&] { return r.acquire(spec("a"), std::nullopt); });
  at_half.get_future().wait();
  const uint64_t v1 = r.wait_for_change(v0, std::chrono::seconds(2));
  EXPECT_NE(v1, v0);
  auto during = r.loaded();
  ASSERT_EQ(during.size(), 1u);
  EXPECT_TRUE(during[0].loading);
  EXPECT_DOUBLE_EQ(during[0].progress, 0.5);
  // Nothing changes: the wait times out with the same value.
  EXPECT_EQ(r.wait_for_change(v1, std::chrono::milliseconds(30)), v1);
  go_on.set_value();
  ASSERT_TRUE(lease.get().ok());
  const uint64_t v2 = r.wait_for_change(v1, std::chrono::seconds(2));
  EXPECT_NE(v2, v1);
  auto after = r.loaded();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_FALSE(after[0].loading);
  EXPECT_DOUBLE_EQ(after[0].progress, 1.0);
  EXPECT_TRUE(r.unload("a"));
  EXPECT_NE(r.wait_for_change(v2, std::chrono::seconds(2)), v2);
  EXPECT_TRUE(r.loaded().empty());
}

TEST(ModelRouter, AFailedLoadIsRememberedUntilTheModelLoads) {
  Harness h;
  bool fail = true;
  h.on_load = [&](const ModelLoadSpec& s) -> Result<std::shared_ptr<ModelRunner>> {
    if (fail) return make_error(ErrorKind::kCorrupt, "not a model");
    return std::shared_ptr<ModelRunner>(std::make_shared<FakeRunner>(s.need_bytes));
  };
  ModelRouter r(h.options(), h.starter());
  EXPECT_FALSE(r.acquire(spec("m"), std::nullopt).ok());
  auto failed = r.failed_loads();
  ASSERT_EQ(failed.count("m"), 1u);
  EXPECT_EQ(failed["m"].message, "not a model");
  fail = false;
  EXPECT_TRUE(r.acquire(spec("m"), std::nullopt).ok());
  EXPECT_TRUE(r.failed_loads().empty());
}

TEST(ModelRouter, TheMachineWideKvLimitCountsOtherProcessesKv) {
  Harness h;
  auto o = h.options();
  // Two other processes hold 300 + 200 MiB of a 1 GiB machine-wide KV limit.
  uint64_t others = 500 * kMiB;
  o.kv_budget = [&others] { return std::optional<KvBudgetView>(KvBudgetView{1024 * kMiB, others}); };
  ModelRouter r(o, h.starter());
  auto with_kv = [](const std::string& key, uint64_t kv) {
    ModelLoadSpec s = spec(key);
    s.kv_need_bytes = kv;
    return s;
  };
  // 600 MiB of KV cannot fit beside the others' 500: refused with the numbers, nothing started.
  auto big = r.acquire(with_kv("big", 600 * kMiB), std::nullopt);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().kind, ErrorKind::kOutOfRange);
  EXPECT_NE(big.error().message.find("600 MiB"), std::string::npos) << big.error().message;
  EXPECT_NE(big.error().message.find("500 MiB"), std::string::npos) << big.error().message;
  EXPECT_NE(big.error().message.find("1024 MiB"), std::string::npos) << big.error().message;
  EXPECT_EQ(h.loads.load(), 0);
  // a fits (500 + 300 <= 1024) and then commits 400 MiB of KV while serving.
  { ASSERT_TRUE(r.acquire(with_kv("a", 300 * kMiB), std::nullopt).ok()); }
  auto a = h.runner("a");
  a->kv_ = 400 * kMiB;
  a->memory_ += 400 * kMiB;
  // b needs 200: 500 + 400 + 200 > 1024, so the idle a gives its KV back first (not evicted).
  { ASSERT_TRUE(r.acquire(with_kv("b", 200 * kMiB), std::nullopt).ok()); }
  EXPECT_EQ(a->shrinks_.load(), 1);
  EXPECT_FALSE(a->stopped_.load());
  // The others grow to 800 and a is busy: c (200) fits once the idle b gives its KV back.
  others = 800 * kMiB;
  h.runner("b")->kv_ = 100 * kMiB;
  a->in_flight_ = 1;
  a->kv_ = 20 * kMiB;
  { ASSERT_TRUE(r.acquire(with_kv("c", 200 * kMiB), std::nullopt).ok()); }
  EXPECT_FALSE(a->stopped_.load()) << "a busy model is never evicted";
  EXPECT_FALSE(h.runner("b")->stopped_.load()) << "shrinking b's KV made room";
  EXPECT_EQ(h.runner("b")->shrinks_.load(), 1);
}

TEST(ModelRouter, ADeadRunnerIsReapedAndTheNextRequestStartsAFreshOne) {
  Harness h;
  ModelRouter r(h.options(), h.starter());
  { ASSERT_TRUE(r.acquire(spec("a"), -1).ok()); }
  auto first = h.runner("a");
  first->alive_ = false;  // crashed
  { ASSERT_TRUE(r.acquire(spec("a"), -1).ok()); }
  EXPECT_EQ(h.loads.load(), 2);
  EXPECT_NE(h.runner("a"), first);
  h.runner("a")->alive_ = false;
  r.tick();
  EXPECT_TRUE(loaded_keys(r).empty()) << "tick forgets dead runners";
}

}  // namespace
}  // namespace hearth::router
