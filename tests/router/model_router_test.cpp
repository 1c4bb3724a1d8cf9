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
  std::mutex mu;

  RouterOptions options() {
    RouterOptions o;
    o.now = [this] { return now; };
    o.wait_for_room = std::chrono::milliseconds(300);
    return o;
  }
  RunnerStarter starter() {
    return [this](const ModelLoadSpec& spec) -> Result<std::shared_ptr<ModelRunner>> {
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
