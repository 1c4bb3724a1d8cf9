// `hearth serve` in the cross-process KV budget, end to end: the serving process appears in
// `hearth kv ls` with its model and reserved KV, `hearth kv limit LABEL 0` holds a new
// request back (it waits, nothing fails) until `hearth kv limit LABEL none`, and an orderly
// exit removes its entry. A private budget directory (HEARTH_KV_DIR) keeps tests apart.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/hearth_process.h"
#include "app/server_process.h"
#include "common/test_paths.h"
#include "kv/budget_test_support.h"

namespace hearth::test {
namespace {

using Json = nlohmann::json;

Json ls_json() {
  auto r = run_hearth("kv ls --json");
  EXPECT_EQ(r.status, 0) << r.err;
  return Json::parse(r.out, nullptr, false);
}

class ServeKvBudget : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("HEARTH_KV_DIR", dir_.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("HEARTH_KV_DIR"); }
  kv::test::TempBudgetDir dir_;
};

TEST_F(ServeKvBudget, ServeRegistersAndObeysALimit) {
  const std::string model = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(model);
  ServerProcess server;
  ASSERT_TRUE(server.start({"-m", model, "--parallel", "2", "-c", "512"})) << server.error();

  Json p;
  for (int i = 0; i < 100; ++i) {
    const Json j = ls_json();
    if (j.is_object() && j["processes"].size() == 1 && j["processes"][0]["state"] == "serving") {
      p = j["processes"][0];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(p.is_object()) << ls_json().dump();
  EXPECT_EQ(p["label"], "stories260K-llama-f32");
  EXPECT_GT(p["reserved_bytes"].get<uint64_t>(), 0u);
  EXPECT_TRUE(p["limit_bytes"].is_null());

  auto r = run_hearth("kv limit stories260K-llama-f32 0");
  ASSERT_EQ(r.status, 0) << r.err;
  // Applied at the next heartbeat (1 s): wait until the process reports it.
  for (int i = 0; i < 60 && !(ls_json()["processes"][0]["limit_bytes"] == 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(ls_json()["processes"][0]["limit_bytes"], 0);

  const int port = server.port();
  auto answer = std::async(std::launch::async, [port] {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(60, 0);
    auto res = cli.Post("/v1/completions", Json{{"prompt", "Once upon a time"}, {"max_tokens", 4}}.dump(), "application/json");
    return res ? res->status : -1;
  });
  EXPECT_EQ(answer.wait_for(std::chrono::milliseconds(700)), std::future_status::timeout);  // held back, not refused

  r = run_hearth("kv limit stories260K-llama-f32 none");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(answer.get(), 200);

  EXPECT_EQ(server.stop(), 0);
  EXPECT_TRUE(ls_json()["processes"].empty());
}

}  // namespace
}  // namespace hearth::test
