// RunnerClient against real child processes that misbehave the ways a runner can: one that
// never reports (stalls while loading: killed after the load timeout with a clear error), one
// that exits while loading, one killed by a signal, one that writes garbage. Each leaves no
// process behind. (The well-behaved runner is covered end to end by tests/e2e/router.test.mjs.)
#include <gtest/gtest.h>
#include <signal.h>

#include "router/runner_client.h"

namespace hearth::router {
namespace {

RunnerLaunch launch(std::vector<std::string> argv, int timeout_ms = 2000) {
  RunnerLaunch l;
  l.argv = std::move(argv);
  l.model_name = "test";
  l.load_timeout = std::chrono::milliseconds(timeout_ms);
  return l;
}

TEST(RunnerClient, ARunnerThatStallsWhileLoadingIsKilledAfterTheTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  auto c = RunnerClient::start(launch({"/bin/sleep", "30"}, 300));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(c.error().message.find("did not finish loading within"), std::string::npos) << c.error().message;
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(RunnerClient, ARunnerThatExitsWhileLoadingNamesItsExit) {
  auto c = RunnerClient::start(launch({"/bin/sh", "-c", "exit 3"}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("exited with status 3 while loading"), std::string::npos) << c.error().message;
}

TEST(RunnerClient, ARunnerKilledWhileLoadingNamesTheSignal) {
  auto c = RunnerClient::start(launch({"/bin/sh", "-c", "kill -9 $$"}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("killed by signal 9"), std::string::npos) << c.error().message;
}

TEST(RunnerClient, GarbageOnTheSocketEndsTheRunnerWithAnError) {
  // fd 3 is the socket: a frame header naming an unknown message type.
  auto c = RunnerClient::start(launch({"/bin/sh", "-c", "printf '\\000\\000\\000\\000\\143xxxxxxxxxxxx' >&3; sleep 30"}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("sent a malformed message"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("while loading"), std::string::npos) << c.error().message;
}

TEST(RunnerClient, AMissingExecutableIsAnError) {
  auto c = RunnerClient::start(launch({"/nonexistent/hearth", "runner"}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("exited with status 127"), std::string::npos) << c.error().message;
}

}  // namespace
}  // namespace hearth::router
