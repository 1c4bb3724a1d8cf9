// A real model load through a real `hearth runner`: the loading progress the runner reports
// reaches the router's callback in order, never goes back, has values between 0 and 1 while
// the weights are prepared, and ends at 1 before the runner is ready. The runner is stopped
// and leaves no process behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "common/test_paths.h"
#include "router/runner_client.h"

namespace hearth::router {
namespace {

TEST(RunnerProgress, ARealLoadReportsMonotonicProgressEndingAtOne) {
  const std::string model = hearth::test::models_dir() + "/random/llama-Q4_0.gguf";
  if (!std::filesystem::exists(model)) {
    if (std::getenv("CI") != nullptr) FAIL() << "missing test model " << model;
    GTEST_SKIP() << "missing test model " << model;
  }
  std::mutex mu;
  std::vector<double> seen;
  RunnerLaunch launch;
  launch.argv = {HEARTH_EXE, "runner", "--runner-fd", "3", "--parent-pid", std::to_string(::getpid()), "-m", model,
                 "--threads", "1", "--parallel", "1", "--request-ctx", "256"};
  launch.model_name = "llama-Q4_0";
  launch.load_timeout = std::chrono::seconds(60);
  launch.on_progress = [&](double p) {
    std::lock_guard lock(mu);
    seen.push_back(p);
  };
  auto client = RunnerClient::start(launch);
  ASSERT_TRUE(client.ok()) << client.error().to_string();
  EXPECT_EQ((*client)->state().phase, protocol::RunnerState::Phase::kReady);
  std::lock_guard lock(mu);
  ASSERT_GE(seen.size(), 3u) << "a start, some progress and the end";
  EXPECT_EQ(seen.front(), 0.0);
  EXPECT_EQ(seen.back(), 1.0);
  bool between = false;
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_GE(seen[i], 0.0);
    EXPECT_LE(seen[i], 1.0);
    if (i > 0) EXPECT_GE(seen[i], seen[i - 1]) << "progress went back at report " << i;
    between = between || (seen[i] > 0.0 && seen[i] < 1.0);
  }
  EXPECT_TRUE(between) << "no report while the weights were being prepared";
  const pid_t pid = (*client)->pid();
  (*client)->stop();
  client->reset();
  EXPECT_NE(::kill(pid, 0), 0) << "the runner process is gone after stop";
}

}  // namespace
}  // namespace hearth::router
