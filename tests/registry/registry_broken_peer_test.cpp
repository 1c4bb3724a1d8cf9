// A registry that answers 500, answers garbage, hangs, or is not there: each ends the pull with
// an error that says what happened, in bounded time, after a bounded number of retries.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/broken_http_peer.h"
#include "common/docker_registry.h"
#include "common/test_paths.h"
#include "registry/registry_client.h"
#include "util/sha256.h"

namespace hearth::registry {
namespace {

using Clock = std::chrono::steady_clock;

struct Attempt {
  Result<PullResult> result = make_error(ErrorKind::kInternal, "not run");
  double seconds = 0;
};

Attempt pull_from_port(int port, RegistryLimits limits) {
  RegistryClientOptions o;
  o.endpoint = *parse_registry_endpoint("127.0.0.1:" + std::to_string(port), true);
  o.limits = limits;
  RegistryClient client(o);
  PullRequest pull;
  pull.repository = "library/tiny";
  pull.reference = "latest";
  pull.has_blob = [](const std::string&) { return false; };
  pull.blob_path = [](const std::string& d) { return "/nonexistent/" + d; };
  auto start = Clock::now();
  Attempt a{client.pull(pull), 0};
  a.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return a;
}

RegistryLimits quick_limits() {
  RegistryLimits l;
  l.connect_timeout = std::chrono::seconds(2);
  l.stall_timeout = std::chrono::seconds(1);
  l.max_attempts = 3;
  l.retry_budget = std::chrono::seconds(3);
  l.first_backoff = std::chrono::milliseconds(50);
  return l;
}

TEST(RegistryBrokenPeer, Status500IsRetriedThenReported) {
  test::BrokenHttpPeer peer(test::BrokenPeerMode::kStatus500);
  Attempt a = pull_from_port(peer.port(), quick_limits());
  ASSERT_FALSE(a.result.ok());
  EXPECT_EQ(a.result.error().kind, ErrorKind::kUnavailable);
  const std::string& m = a.result.error().message;
  EXPECT_NE(m.find("HTTP 500"), std::string::npos) << m;
  EXPECT_NE(m.find("after 3 attempts"), std::string::npos) << m;
  EXPECT_NE(m.find("manifest library/tiny:latest"), std::string::npos) << m;
  EXPECT_EQ(peer.connections(), 3);
  EXPECT_LT(a.seconds, 5.0);
}

TEST(RegistryBrokenPeer, GarbageIsAClearError) {
  test::BrokenHttpPeer peer(test::BrokenPeerMode::kGarbage);
  Attempt a = pull_from_port(peer.port(), quick_limits());
  ASSERT_FALSE(a.result.ok());
  EXPECT_NE(a.result.error().message.find("registry 127.0.0.1:" + std::to_string(peer.port())), std::string::npos)
      << a.result.error().message;
  EXPECT_GE(peer.connections(), 1);
  EXPECT_LE(peer.connections(), 3);
  EXPECT_LT(a.seconds, 5.0);
}

TEST(RegistryBrokenPeer, HangingRegistryTimesOut) {
  test::BrokenHttpPeer peer(test::BrokenPeerMode::kSilent);
  RegistryLimits l = quick_limits();
  l.max_attempts = 2;
  Attempt a = pull_from_port(peer.port(), l);
  ASSERT_FALSE(a.result.ok());
  EXPECT_EQ(a.result.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(a.result.error().message.find("timed out"), std::string::npos) << a.result.error().message;
  // Two attempts of about one second each, plus a short backoff.
  EXPECT_GE(a.seconds, 1.5);
  EXPECT_LT(a.seconds, 6.0);
}

TEST(RegistryBrokenPeer, NothingListeningIsAClearError) {
  int port = test::pick_free_loopback_port();
  Attempt a = pull_from_port(port, quick_limits());
  ASSERT_FALSE(a.result.ok());
  EXPECT_EQ(a.result.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(a.result.error().message.find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << a.result.error().message;
  EXPECT_LT(a.seconds, 5.0);
}

TEST(RegistryBrokenPeer, ServerThatIgnoresRangeStillGivesTheRightBlob) {
  // Every ranged part gets the whole blob with 200; each part keeps only its own bytes.
  std::string body(1u << 20, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 2654435761u) >> 13);
  test::BrokenHttpPeer peer(test::BrokenPeerMode::kIgnoresRange, body);
  HttpClient http("127.0.0.1:" + std::to_string(peer.port()), quick_limits(), {});
  BlobDescriptor blob{"sha256:" + sha256_hex(body), body.size(), "application/vnd.ollama.image.model"};
  BlobDownloadOptions options;
  options.parallel_threshold = 256u << 10;
  options.part_bytes = 128u << 10;  // 8 parts
  std::string dir = test::make_temp_dir();
  std::string dest = dir + "/blob";
  auto stats = download_blob(http, "http://127.0.0.1:" + std::to_string(peer.port()) + "/v2/x/blobs/" + blob.digest,
                             blob, dest, options, nullptr);
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  EXPECT_EQ(peer.connections(), 8);
  std::ifstream in(dest, std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, body);
  EXPECT_FALSE(std::filesystem::exists(partial_path(dest)));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hearth::registry
