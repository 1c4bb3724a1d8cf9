// The cross-process KV budget with real processes (forked children playing serving
// processes): one registers and publishes, another reads; SIGKILL leaves a dead entry that gc
// removes; limit changes reach the owner's callback within its heartbeat period; several
// processes starting at once all register and share the machine-wide limit fairly.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "kv/budget_test_support.h"
#include "kv/kv_budget_directory.h"
#include "kv/kv_budget_owner.h"

namespace hearth::kv {
namespace {

using test::ChildProcess;
using test::child_receive;
using test::child_report;
using test::TempBudgetDir;

constexpr auto kPeriod = std::chrono::milliseconds(50);
constexpr uint64_t kMiB = 1ull << 20;

// Reports every limit it is given to the test.
class PipeClient : public KvBudgetClient {
 public:
  explicit PipeClient(int reports) : reports_(reports) {}
  void on_limit_changed(uint64_t limit_bytes) override { child_report(reports_, limit_bytes); }

 private:
  int reports_;
};

// A serving process: registers, reports 1 when ready, then applies each command as
// committed bytes (used = half) until the pipe closes.
ChildProcess serving_child(const std::string& dir, const std::string& label, uint64_t reserved) {
  return ChildProcess([dir, label, reserved](int commands, int reports) {
    PipeClient client(reports);
    KvBudgetOptions opt;
    opt.directory = dir;
    opt.label = label;
    opt.reserved_bytes = reserved;
    opt.heartbeat_period = kPeriod;
    opt.client = &client;
    auto reg = KvBudgetRegistration::create(opt);
    if (!reg.ok()) return 3;
    (*reg)->mark_ready();
    (*reg)->start_heartbeat();
    child_report(reports, 1);
    while (auto committed = child_receive(commands)) (*reg)->update(*committed, *committed / 2);
    return 0;
  });
}

std::optional<BudgetEntry> entry_of(const std::string& dir, pid_t pid) {
  for (auto& e : list_budget_entries(dir)) {
    if (e.pid == pid) return e;
  }
  return std::nullopt;
}

TEST(KvBudgetProcess, CommittedBytesAddUpLiveEntriesLeavingOutTheSkippedOnes) {
  // Two serving processes: a router sums what both committed, or only the one that is not its
  // own runner (here told apart by pid, as the router tells them apart by parent pid).
  TempBudgetDir tmp;
  ChildProcess a = serving_child(tmp.path(), "a", 512 * kMiB);
  ChildProcess b = serving_child(tmp.path(), "b", 512 * kMiB);
  ASSERT_EQ(a.receive(5000), 1u);
  ASSERT_EQ(b.receive(5000), 1u);
  a.send(64 * kMiB);
  b.send(16 * kMiB);
  uint64_t both = 0;
  for (int i = 0; i < 400 && both != 80 * kMiB; ++i) {
    both = budget_committed_bytes(list_budget_entries(tmp.path()));
    if (both != 80 * kMiB) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(both, 80 * kMiB);
  const pid_t a_pid = a.pid();
  EXPECT_EQ(budget_committed_bytes(list_budget_entries(tmp.path()), [a_pid](int64_t pid) { return pid == a_pid; }), 16 * kMiB);
  EXPECT_EQ(process_parent_pid(a.pid()), static_cast<int64_t>(::getpid()));
  // A dead owner's committed bytes no longer count.
  ::kill(b.pid(), SIGKILL);
  uint64_t after = both;
  for (int i = 0; i < 400 && after != 64 * kMiB; ++i) {
    after = budget_committed_bytes(list_budget_entries(tmp.path()));
    if (after != 64 * kMiB) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(after, 64 * kMiB);
}

TEST(KvBudgetProcess, ReaderSeesWhatTheOwnerPublishes) {
  TempBudgetDir tmp;
  ChildProcess child = serving_child(tmp.path(), "llama-1b", 512 * kMiB);
  ASSERT_EQ(child.receive(5000), 1u);
  child.send(64 * kMiB);
  // The update is visible as soon as it is written: poll briefly.
  std::optional<BudgetEntry> e;
  for (int i = 0; i < 200; ++i) {
    e = entry_of(tmp.path(), child.pid());
    if (e && e->snapshot && e->snapshot->committed_bytes == 64 * kMiB) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(e && e->snapshot) << (e ? e->problem : "no entry");
  EXPECT_TRUE(e->owner_alive);
  EXPECT_EQ(e->snapshot->label, "llama-1b");
  EXPECT_EQ(e->snapshot->reserved_bytes, 512 * kMiB);
  EXPECT_EQ(e->snapshot->committed_bytes, 64 * kMiB);
  EXPECT_EQ(e->snapshot->used_bytes, 32 * kMiB);
  EXPECT_EQ(e->state_name(), "serving");
  EXPECT_LT(e->heartbeat_age_s, 2.0);
  // An orderly exit takes the segment with it.
  child.close_commands();
  EXPECT_EQ(child.reap(), 0);
  EXPECT_FALSE(entry_of(tmp.path(), child.pid()).has_value());
}

TEST(KvBudgetProcess, KilledOwnerIsDeadAndCollected) {
  TempBudgetDir tmp;
  ChildProcess child = serving_child(tmp.path(), "victim", 256 * kMiB);
  ASSERT_EQ(child.receive(5000), 1u);
  ASSERT_TRUE(write_machine_limit(tmp.path(), 100 * kMiB).ok());
  EXPECT_EQ(child.kill_and_reap(), 128 + SIGKILL);
  auto e = entry_of(tmp.path(), child.pid());
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->owner_alive);
  EXPECT_EQ(e->state_name(), "dead");
  // A dead owner holds no share: a newcomer gets the whole machine-wide limit even before gc.
  const auto ticks = process_start_ticks(::getpid()).value_or(0);
  BudgetEntry self;
  self.owner_alive = true;
  self.snapshot = BudgetSnapshot{};
  self.snapshot->pid = ::getpid();
  self.snapshot->start_ticks = ticks;
  self.snapshot->reserved_bytes = 1ull << 30;
  auto entries = list_budget_entries(tmp.path());
  entries.push_back(self);
  EXPECT_EQ(effective_budget_limit(::getpid(), ticks, entries, 100 * kMiB), 100 * kMiB);
  const auto removed = collect_budget_garbage(tmp.path());
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].pid, child.pid());
  EXPECT_TRUE(list_budget_entries(tmp.path()).empty());
}

TEST(KvBudgetProcess, LimitChangesReachTheOwnerLive) {
  TempBudgetDir tmp;
  ChildProcess child = serving_child(tmp.path(), "live", 1024 * kMiB);
  ASSERT_EQ(child.receive(5000), 1u);
  child.send(300 * kMiB);
  auto e = entry_of(tmp.path(), child.pid());
  ASSERT_TRUE(e && e->snapshot);

  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(write_requested_limit(*e, 200 * kMiB).ok());
  EXPECT_EQ(child.receive(1000), 200 * kMiB);
  const auto latency = std::chrono::steady_clock::now() - t0;
  EXPECT_LE(latency, 3 * kPeriod + std::chrono::milliseconds(450));  // slack for a loaded CI machine
  std::printf("limit reached the owner after %.1f ms (heartbeat period %lld ms)\n",
              std::chrono::duration<double, std::milli>(latency).count(), static_cast<long long>(kPeriod.count()));
  // Below what it holds: published as over the limit (it stops growing; nothing is killed).
  for (int i = 0; i < 100 && entry_of(tmp.path(), child.pid())->state_name() != "over-limit"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  e = entry_of(tmp.path(), child.pid());
  EXPECT_EQ(e->state_name(), "over-limit");
  EXPECT_EQ(e->snapshot->limit_bytes, 200 * kMiB);

  // The machine-wide limit, lower still, applies on top; removing both lifts the limit.
  ASSERT_TRUE(write_machine_limit(tmp.path(), 100 * kMiB).ok());
  EXPECT_EQ(child.receive(1000), 100 * kMiB);
  ASSERT_TRUE(write_requested_limit(*e, kNoBudgetLimit).ok());
  ASSERT_TRUE(write_machine_limit(tmp.path(), kNoBudgetLimit).ok());
  EXPECT_EQ(child.receive(1000), kNoBudgetLimit);
  EXPECT_EQ(entry_of(tmp.path(), child.pid())->state_name(), "serving");
}

TEST(KvBudgetProcess, RacingStartsAllRegisterAndShareFairly) {
  TempBudgetDir tmp;  // not created yet: every child races to create it
  constexpr int kChildren = 8;
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int i = 0; i < kChildren; ++i) {
    const uint64_t reserved = (i == 0 ? 64 : 1024) * kMiB;
    children.push_back(std::make_unique<ChildProcess>([dir = tmp.path(), i, reserved](int commands, int reports) {
      if (!child_receive(commands)) return 2;  // all start together on the test's word
      PipeClient client(reports);
      KvBudgetOptions opt;
      opt.directory = dir;
      opt.label = "racer-" + std::to_string(i);
      opt.reserved_bytes = reserved;
      opt.heartbeat_period = kPeriod;
      opt.client = &client;
      auto reg = KvBudgetRegistration::create(opt);
      if (!reg.ok()) return 3;
      if (!write_machine_limit(dir, 1024 * kMiB).ok()) return 4;
      (*reg)->mark_ready();
      (*reg)->start_heartbeat();
      while (child_receive(commands)) {
      }
      return 0;
    }));
  }
  for (auto& c : children) c->send(1);
  // Each child's last reported limit settles at its fair share: 64 MiB for the small one,
  // (1024 - 64) / 7 for each of the others (the split's remainder bytes go to some of them).
  const uint64_t big_share = (1024 - 64) * kMiB / 7;
  for (int i = 0; i < kChildren; ++i) {
    const auto settled = [&](std::optional<uint64_t> v) {
      return v && (i == 0 ? *v == 64 * kMiB : *v >= big_share && *v <= big_share + 1);
    };
    std::optional<uint64_t> last;
    for (auto v = children[i]->receive(3000); v; v = children[i]->receive(settled(last) ? 300 : 3000)) last = v;
    EXPECT_TRUE(settled(last)) << "child " << i << " settled at " << last.value_or(0);
  }
  const auto entries = list_budget_entries(tmp.path());
  ASSERT_EQ(entries.size(), static_cast<size_t>(kChildren));
  uint64_t total = 0;
  for (const auto& e : entries) {
    ASSERT_TRUE(e.snapshot) << e.problem;
    total += e.snapshot->limit_bytes;
  }
  EXPECT_LE(total, 1024 * kMiB);
  EXPECT_EQ(*read_machine_limit(tmp.path()), 1024 * kMiB);
  for (auto& c : children) {
    c->close_commands();
    EXPECT_EQ(c->reap(), 0);
  }
  EXPECT_TRUE(list_budget_entries(tmp.path()).empty());
}

}  // namespace
}  // namespace hearth::kv
