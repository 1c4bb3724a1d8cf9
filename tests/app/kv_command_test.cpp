// `hearth kv ls|top|limit|gc` run as a user would, against a forked child that registers as a
// serving process in a private budget directory (HEARTH_KV_DIR): the table and JSON show it,
// a limit reaches it, bad targets and sizes are clear errors, and after SIGKILL the entry is
// reported dead and gc removes it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/hearth_process.h"
#include "kv/budget_test_support.h"
#include "kv/kv_budget_owner.h"

namespace {

using hearth::test::run_hearth;
using nlohmann::json;

constexpr uint64_t kMiB = 1ull << 20;

class KvCommand : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("HEARTH_KV_DIR", dir_.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("HEARTH_KV_DIR"); }

  // A serving process publishing 96 MiB committed of 1 GiB reserved under `label`.
  std::unique_ptr<hearth::kv::test::ChildProcess> start_server(const std::string& label) {
    const std::string dir = dir_.path();
    auto child = std::make_unique<hearth::kv::test::ChildProcess>([dir, label](int commands, int reports) {
      hearth::kv::KvBudgetOptions opt;
      opt.directory = dir;
      opt.label = label;
      opt.reserved_bytes = 1024 * kMiB;
      opt.heartbeat_period = std::chrono::milliseconds(50);
      auto reg = hearth::kv::KvBudgetRegistration::create(opt);
      if (!reg.ok()) return 3;
      (*reg)->mark_ready();
      (*reg)->update(96 * kMiB, 64 * kMiB);
      (*reg)->start_heartbeat();
      hearth::kv::test::child_report(reports, 1);
      while (hearth::kv::test::child_receive(commands)) {
      }
      return 0;
    });
    EXPECT_EQ(child->receive(5000), 1u);
    return child;
  }

  json ls_json() {
    auto r = run_hearth("kv ls --json");
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out);
  }

  hearth::kv::test::TempBudgetDir dir_;
};

TEST_F(KvCommand, ListsAServingProcess) {
  auto server = start_server("stories-260k");
  auto r = run_hearth("kv ls");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("PID"), std::string::npos);
  EXPECT_NE(r.out.find("HEARTBEAT"), std::string::npos);
  const std::string pid = std::to_string(server->pid());
  const size_t row = r.out.find("\n" + pid + " ");
  ASSERT_NE(row, std::string::npos) << r.out;
  const std::string line = r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find("stories-260k"), std::string::npos) << line;
  EXPECT_NE(line.find("serving"), std::string::npos) << line;
  EXPECT_NE(line.find("1.0 GiB"), std::string::npos) << line;
  EXPECT_NE(line.find("96.0 MiB"), std::string::npos) << line;
  EXPECT_NE(line.find("64.0 MiB"), std::string::npos) << line;
  EXPECT_NE(line.find("none"), std::string::npos) << line;
  EXPECT_NE(r.out.find("1 live process: committed 96.0 MiB"), std::string::npos) << r.out;

  const json j = ls_json();
  ASSERT_EQ(j["processes"].size(), 1u);
  const json& p = j["processes"][0];
  EXPECT_EQ(p["pid"], server->pid());
  EXPECT_EQ(p["label"], "stories-260k");
  EXPECT_EQ(p["committed_bytes"], 96 * kMiB);
  EXPECT_TRUE(p["limit_bytes"].is_null());
  EXPECT_TRUE(j["machine_limit_bytes"].is_null());

  auto top = run_hearth("kv top --once");
  EXPECT_EQ(top.status, 0);
  EXPECT_NE(top.out.find("stories-260k"), std::string::npos);
  EXPECT_EQ(top.out.find("\x1b["), std::string::npos);  // no screen control in --once
  // Live, it refreshes until `q` (here from a pipe rather than a terminal).
  const std::string quit = "q";
  top = run_hearth("kv top", &quit);
  EXPECT_EQ(top.status, 0);
  EXPECT_NE(top.out.find("stories-260k"), std::string::npos);
  EXPECT_NE(top.out.find("(q or Ctrl-C quits)"), std::string::npos);
}

TEST_F(KvCommand, LimitReachesTheProcess) {
  auto server = start_server("llama");
  const std::string pid = std::to_string(server->pid());
  auto r = run_hearth("kv limit " + pid + " 64MiB");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("pid " + pid + " (llama): KV limit 64.0 MiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stops admitting new requests"), std::string::npos) << r.out;  // it holds 96 MiB
  json p;
  for (int i = 0; i < 100; ++i) {
    p = ls_json()["processes"][0];
    if (p["limit_bytes"] == 64 * kMiB) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(p["requested_limit_bytes"], 64 * kMiB);
  EXPECT_EQ(p["limit_bytes"], 64 * kMiB);
  EXPECT_EQ(p["state"], "over-limit");

  r = run_hearth("kv limit llama none");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(ls_json()["processes"][0]["requested_limit_bytes"].is_null());

  r = run_hearth("kv limit all 2G");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("machine-wide KV limit: 2.0 GiB, shared fairly by 1 live process"), std::string::npos) << r.out;
  EXPECT_EQ(ls_json()["machine_limit_bytes"], 2ull << 30);
  EXPECT_EQ(run_hearth("kv limit all none").status, 0);
  EXPECT_TRUE(ls_json()["machine_limit_bytes"].is_null());
}

TEST_F(KvCommand, BadTargetsAndSizesAreClearErrors) {
  auto server = start_server("llama");
  auto r = run_hearth("kv limit nobody 1G");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no live Hearth serving process labelled nobody"), std::string::npos) << r.err;
  r = run_hearth("kv limit 1 1G");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("with pid 1"), std::string::npos) << r.err;
  r = run_hearth("kv limit llama lots");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("'lots' is not a size"), std::string::npos) << r.err;
  r = run_hearth("kv limit llama");
  EXPECT_EQ(r.status, 2);
  r = run_hearth("kv frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown kv command 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_EQ(run_hearth("kv").status, 2);
  EXPECT_EQ(run_hearth("kv --help").status, 0);
}

TEST_F(KvCommand, KilledProcessIsDeadUntilGc) {
  auto server = start_server("doomed");
  const std::string pid = std::to_string(server->pid());
  server->kill_and_reap();
  auto r = run_hearth("kv ls");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("dead"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("`hearth kv gc` removes them"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 live processes"), std::string::npos) << r.out;
  r = run_hearth("kv gc");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("removed pid " + pid + " (doomed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 stale entry removed"), std::string::npos) << r.out;
  EXPECT_TRUE(ls_json()["processes"].empty());
  r = run_hearth("kv gc");
  EXPECT_NE(r.out.find("0 stale entries removed"), std::string::npos) << r.out;
}

}  // namespace
