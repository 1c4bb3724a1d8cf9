// Push and pull against a real docker-registry on loopback: the bytes and digests that come
// back are the ones that went up, a cancelled or killed pull resumes without fetching again
// what it had, and a blob corrupted in the registry's storage is refused with nothing written.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/require_docker_registry.h"
#include "common/test_paths.h"
#include "registry/registry_client.h"
#include "registry/registry_test_model.h"
#include "util/sha256.h"

namespace hearth::registry {
namespace {

using test::DockerRegistry;

constexpr uint64_t kModelBytes = 3u << 20;  // 3 MiB: twelve ranged parts with the options below

RegistryClientOptions client_options(const DockerRegistry& reg) {
  RegistryClientOptions o;
  o.endpoint = *parse_registry_endpoint(reg.address(), /*insecure=*/true);
  o.download.parallel_threshold = 1u << 20;  // small thresholds so a 3 MiB blob comes in 12 parts
  o.download.part_bytes = 256u << 10;
  o.download.checkpoint_interval = std::chrono::milliseconds(50);
  o.upload_chunk_bytes = 1u << 20;  // several PATCH chunks
  o.limits.retry_budget = std::chrono::seconds(5);
  return o;
}

PullRequest pull_into(const std::string& dir, const std::string& repo, const std::string& ref) {
  PullRequest p;
  p.repository = repo;
  p.reference = ref;
  p.has_blob = [dir](const std::string& d) { return std::filesystem::exists(test::blob_file(dir, d)); };
  p.blob_path = [dir](const std::string& d) { return test::blob_file(dir, d); };
  return p;
}

PushRequest push_from(const test::TestModel& m, const std::string& repo, const std::string& tag) {
  PushRequest p;
  p.repository = repo;
  p.reference = tag;
  p.manifest_bytes = m.manifest;
  p.blob_path = [&m](const std::string& d) { return m.blob_path(d); };
  return p;
}

// The sizes of the blobs a pull fetched (rather than found present).
uint64_t fetched_size(const test::TestModel& m, const PullResult& pulled) {
  uint64_t sum = 0;
  for (const auto& b : m.blobs) {
    if (std::find(pulled.fetched.begin(), pulled.fetched.end(), b.digest) != pulled.fetched.end()) sum += b.size;
  }
  return sum;
}

class RegistryRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_START_DOCKER_REGISTRY(registry_);
    source_ = test::make_test_model(test::make_temp_dir(), kModelBytes, 7);
    target_dir_ = test::make_temp_dir();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(source_.dir, ec);
    std::filesystem::remove_all(target_dir_, ec);
  }
  void push_source(const std::string& repo = "library/tiny", const std::string& tag = "latest") {
    RegistryClient client(client_options(*registry_));
    auto pushed = client.push(push_from(source_, repo, tag));
    ASSERT_TRUE(pushed.ok()) << pushed.error().to_string();
  }

  std::unique_ptr<DockerRegistry> registry_;
  test::TestModel source_;
  std::string target_dir_;
};

TEST_F(RegistryRoundTrip, PushThenPullGivesIdenticalBytesAndDigests) {
  RegistryClient client(client_options(*registry_));
  std::vector<ProgressEvent> push_events;
  PushRequest push = push_from(source_, "library/tiny", "latest");
  push.progress = [&](const ProgressEvent& e) { push_events.push_back(e); return true; };
  auto pushed = client.push(push);
  ASSERT_TRUE(pushed.ok()) << pushed.error().to_string();
  EXPECT_EQ(pushed->blobs_uploaded, 3);
  EXPECT_EQ(pushed->manifest_digest, "sha256:" + sha256_hex(source_.manifest));
  ASSERT_FALSE(push_events.empty());
  EXPECT_EQ(push_events.back().status, "pushing manifest");

  std::vector<ProgressEvent> events;
  PullRequest pull = pull_into(target_dir_, "library/tiny", "latest");
  pull.progress = [&](const ProgressEvent& e) { events.push_back(e); return true; };
  auto pulled = client.pull(pull);
  ASSERT_TRUE(pulled.ok()) << pulled.error().to_string();
  EXPECT_EQ(pulled->manifest_bytes, source_.manifest);
  EXPECT_EQ(pulled->manifest_digest, pushed->manifest_digest);
  EXPECT_EQ(pulled->fetched.size(), 3u);
  for (const auto& blob : source_.blobs) {
    std::string got = test::read_whole_file(test::blob_file(target_dir_, blob.digest));
    EXPECT_EQ(got.size(), blob.size);
    EXPECT_EQ("sha256:" + sha256_hex(got), blob.digest);
    EXPECT_EQ(got, test::read_whole_file(source_.blob_path(blob.digest)));
  }
  // Only the blobs are left: no partial files or progress records.
  EXPECT_EQ(test::list_dir(target_dir_), test::list_dir(source_.dir));

  // ollama's progress sequence: manifest, per-blob "pulling <12 hex>" ending complete, verify.
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events.front().status, "pulling manifest");
  EXPECT_EQ(events.back().status, "verifying sha256 digest");
  const auto& model = source_.model_layer();
  uint64_t last_completed = 0;
  bool saw_model = false;
  for (const auto& e : events) {
    if (e.digest != model.digest) continue;
    saw_model = true;
    EXPECT_EQ(e.status, "pulling " + model.digest.substr(7, 12));
    EXPECT_EQ(e.total, model.size);
    EXPECT_GE(e.completed, last_completed);
    last_completed = e.completed;
  }
  EXPECT_TRUE(saw_model);
  EXPECT_EQ(last_completed, model.size);

  // Pulling again fetches nothing; pulling by the manifest's digest gives the same manifest.
  auto again = client.pull(pull_into(target_dir_, "library/tiny", pulled->manifest_digest));
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_TRUE(again->fetched.empty());
  EXPECT_EQ(again->bytes_received, 0u);
  EXPECT_EQ(again->manifest_bytes, source_.manifest);
}

TEST_F(RegistryRoundTrip, PushSkipsPresentBlobsAndMountsFromAnotherRepository) {
  push_source();
  RegistryClient client(client_options(*registry_));
  auto same = client.push(push_from(source_, "library/tiny", "v2"));
  ASSERT_TRUE(same.ok()) << same.error().to_string();
  EXPECT_EQ(same->blobs_present, 3);
  EXPECT_EQ(same->blobs_uploaded, 0);

  PushRequest mount = push_from(source_, "someone/tiny", "latest");
  mount.mount_from = "library/tiny";
  auto mounted = client.push(mount);
  ASSERT_TRUE(mounted.ok()) << mounted.error().to_string();
  EXPECT_EQ(mounted->blobs_mounted, 3);
  EXPECT_EQ(mounted->blobs_uploaded, 0);
  auto pulled = client.pull(pull_into(target_dir_, "someone/tiny", "latest"));
  ASSERT_TRUE(pulled.ok()) << pulled.error().to_string();
  EXPECT_EQ(pulled->manifest_bytes, source_.manifest);
}

TEST_F(RegistryRoundTrip, CancelledPullResumesWithoutFetchingWhatItHad) {
  push_source();
  RegistryClientOptions slow = client_options(*registry_);
  // 4 connections at 1 MiB/s: ~0.75 s for the blob, time enough for a busy machine to cancel midway.
  slow.limits.max_receive_bytes_per_second = 1u << 20;
  RegistryClient slow_client(slow);
  PullRequest first = pull_into(target_dir_, "library/tiny", "latest");
  const auto& model = source_.model_layer();
  first.progress = [&](const ProgressEvent& e) { return !(e.digest == model.digest && e.completed >= (1u << 20)); };
  auto cancelled = slow_client.pull(first);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_NE(cancelled.error().message.find("cancelled"), std::string::npos) << cancelled.error().message;
  const std::string dest = test::blob_file(target_dir_, model.digest);
  EXPECT_FALSE(std::filesystem::exists(dest));
  EXPECT_TRUE(std::filesystem::exists(partial_path(dest)));

  RegistryClient client(client_options(*registry_));
  auto resumed = client.pull(pull_into(target_dir_, "library/tiny", "latest"));
  ASSERT_TRUE(resumed.ok()) << resumed.error().to_string();
  EXPECT_GE(resumed->bytes_resumed, 1u << 20);
  EXPECT_LT(resumed->bytes_resumed, model.size);
  // Exactly the missing bytes came over the network this time.
  EXPECT_EQ(resumed->bytes_received, fetched_size(source_, *resumed) - resumed->bytes_resumed);
  EXPECT_EQ(test::read_whole_file(dest), test::read_whole_file(source_.blob_path(model.digest)));
  EXPECT_FALSE(std::filesystem::exists(partial_path(dest)));
  EXPECT_FALSE(std::filesystem::exists(partial_parts_path(dest)));
}

TEST_F(RegistryRoundTrip, KilledPullResumes) {
  push_source();
  const auto& model = source_.model_layer();
  const std::string dest = test::blob_file(target_dir_, model.digest);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child pulls slowly until it is killed; it never returns into the test framework.
    RegistryClientOptions slow = client_options(*registry_);
    slow.limits.max_receive_bytes_per_second = 512u << 10;  // 4 connections: ~1.5 s for the blob
    RegistryClient client(slow);
    (void)client.pull(pull_into(target_dir_, "library/tiny", "latest"));
    ::_exit(0);
  }
  // Kill it once its progress record shows at least 512 KiB stored.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  uint64_t recorded = 0;
  while (std::chrono::steady_clock::now() < deadline && recorded < (512u << 10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream in(partial_parts_path(dest));
    std::string line;
    std::getline(in, line);
    std::getline(in, line);
    recorded = 0;
    uint64_t offset, length, done;
    while (in >> offset >> length >> done) recorded += done;
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_GE(recorded, 512u << 10) << "the child pull made no progress";
  ASSERT_FALSE(std::filesystem::exists(dest));

  RegistryClient client(client_options(*registry_));
  auto resumed = client.pull(pull_into(target_dir_, "library/tiny", "latest"));
  ASSERT_TRUE(resumed.ok()) << resumed.error().to_string();
  EXPECT_GE(resumed->bytes_resumed, recorded);
  // The child may have finished the small blobs; of the model, only what was missing came.
  EXPECT_LT(resumed->bytes_resumed, model.size);
  EXPECT_EQ(resumed->bytes_received + resumed->bytes_resumed, fetched_size(source_, *resumed));
  EXPECT_EQ(test::read_whole_file(dest), test::read_whole_file(source_.blob_path(model.digest)));
  EXPECT_EQ(test::list_dir(target_dir_), test::list_dir(source_.dir));
}

TEST_F(RegistryRoundTrip, BlobCorruptedInTheRegistryIsRefusedAndNothingIsWritten) {
  push_source();
  const auto& model = source_.model_layer();
  {
    // Same size, one byte changed, in the registry's own storage.
    std::fstream f(registry_->blob_data_path(model.digest), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekp(static_cast<std::streamoff>(model.size / 2));
    f.put('\x5a' ^ source_.dir.size());
  }
  RegistryClient client(client_options(*registry_));
  auto pulled = client.pull(pull_into(target_dir_, "library/tiny", "latest"));
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.error().kind, ErrorKind::kCorrupt) << pulled.error().to_string();
  EXPECT_NE(pulled.error().message.find(model.digest), std::string::npos) << pulled.error().message;
  // The config blob came before the model layer and is fine; nothing of the model is left.
  EXPECT_EQ(test::list_dir(target_dir_), std::vector<std::string>{"sha256-" + source_.blobs[0].digest.substr(7)});
}

TEST_F(RegistryRoundTrip, TruncatedBlobInTheRegistryIsRefused) {
  push_source();
  const auto& model = source_.model_layer();
  std::filesystem::resize_file(registry_->blob_data_path(model.digest), model.size - 1000);
  RegistryClient client(client_options(*registry_));
  PullRequest pull = pull_into(target_dir_, "library/tiny", "latest");
  pull.has_blob = [](const std::string&) { return false; };
  auto pulled = client.pull(pull);
  ASSERT_FALSE(pulled.ok());
  EXPECT_FALSE(std::filesystem::exists(test::blob_file(target_dir_, model.digest)));
  EXPECT_FALSE(std::filesystem::exists(partial_path(test::blob_file(target_dir_, model.digest))));
}

TEST_F(RegistryRoundTrip, MissingTagIsNotFound) {
  RegistryClient client(client_options(*registry_));
  auto pulled = client.pull(pull_into(target_dir_, "library/absent", "latest"));
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.error().kind, ErrorKind::kNotFound) << pulled.error().to_string();
  EXPECT_TRUE(test::list_dir(target_dir_).empty());
}

TEST_F(RegistryRoundTrip, PushOfABlobThatDoesNotMatchItsDigestIsRefused) {
  // The local file changed after the manifest was written (same size, other bytes).
  const auto& model = source_.model_layer();
  {
    std::fstream f(source_.blob_path(model.digest), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x00');
    f.put('\x01');
  }
  RegistryClient client(client_options(*registry_));
  auto pushed = client.push(push_from(source_, "library/tiny", "latest"));
  ASSERT_FALSE(pushed.ok());
  EXPECT_NE(pushed.error().message.find(model.digest), std::string::npos) << pushed.error().message;
  EXPECT_NE(pushed.error().message.find("DIGEST_INVALID"), std::string::npos) << pushed.error().message;
  // No manifest went up.
  auto manifest = client.fetch_manifest("library/tiny", "latest");
  ASSERT_FALSE(manifest.ok());
  EXPECT_EQ(manifest.error().kind, ErrorKind::kNotFound);
}

TEST_F(RegistryRoundTrip, PushOfAMissingBlobFileNamesIt) {
  std::filesystem::remove(source_.blob_path(source_.blobs[2].digest));
  RegistryClient client(client_options(*registry_));
  auto pushed = client.push(push_from(source_, "library/tiny", "latest"));
  ASSERT_FALSE(pushed.ok());
  EXPECT_EQ(pushed.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(pushed.error().message.find(source_.blob_path(source_.blobs[2].digest)), std::string::npos)
      << pushed.error().message;
}

TEST_F(RegistryRoundTrip, NoRoomForABlobIsOneClearErrorBeforeDownloading) {
  push_source();
  // A child whose files may not grow past 1 MiB stands in for a full disk: the 3 MiB blob's
  // space cannot be claimed, so the pull fails before fetching it and leaves nothing behind.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{1u << 20, 1u << 20};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    RegistryClient client(client_options(*registry_));
    auto pulled = client.pull(pull_into(target_dir_, "library/tiny", "latest"));
    std::string report = pulled.ok() ? "ok" : pulled.error().to_string();
    (void)!::write(pipe_fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string report;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_NE(report.find("i/o error: cannot allocate 3145728 bytes"), std::string::npos) << report;
  EXPECT_NE(report.find(source_.model_layer().digest), std::string::npos) << report;
  const std::string dest = test::blob_file(target_dir_, source_.model_layer().digest);
  EXPECT_FALSE(std::filesystem::exists(dest));
  EXPECT_FALSE(std::filesystem::exists(partial_path(dest)));
}

TEST_F(RegistryRoundTrip, ResumedPartialWithStaleBytesIsFetchedAgain) {
  push_source();
  RegistryClientOptions slow = client_options(*registry_);
  slow.limits.max_receive_bytes_per_second = 1u << 20;
  RegistryClient slow_client(slow);
  PullRequest first = pull_into(target_dir_, "library/tiny", "latest");
  const auto& model = source_.model_layer();
  first.progress = [&](const ProgressEvent& e) { return !(e.digest == model.digest && e.completed >= (1u << 20)); };
  ASSERT_FALSE(slow_client.pull(first).ok());
  const std::string dest = test::blob_file(target_dir_, model.digest);
  {
    // What a power loss can leave: the record counts bytes the file does not hold.
    std::fstream f(partial_path(dest), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.write("stale", 5);
  }
  RegistryClient client(client_options(*registry_));
  auto pulled = client.pull(pull_into(target_dir_, "library/tiny", "latest"));
  ASSERT_TRUE(pulled.ok()) << pulled.error().to_string();
  EXPECT_EQ(test::read_whole_file(dest), test::read_whole_file(source_.blob_path(model.digest)));
  EXPECT_EQ(test::list_dir(target_dir_), test::list_dir(source_.dir));
}

TEST_F(RegistryRoundTrip, TwoPullsOfOneModelAtOnceTakeTurnsPerBlob) {
  push_source();
  RegistryClientOptions slow = client_options(*registry_);
  slow.limits.max_receive_bytes_per_second = 4u << 20;
  std::vector<Result<PullResult>> results(2, make_error(ErrorKind::kInternal, "not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      RegistryClient client(slow);
      results[static_cast<size_t>(i)] = client.pull(pull_into(target_dir_, "library/tiny", "latest"));
    });
  }
  for (auto& t : threads) t.join();
  uint64_t received = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    received += r->bytes_received;
  }
  // Each blob came over the network once, whichever pull fetched it.
  uint64_t total = 0;
  for (const auto& b : source_.blobs) total += b.size;
  EXPECT_EQ(received, total);
  const auto& model = source_.model_layer();
  EXPECT_EQ(test::read_whole_file(test::blob_file(target_dir_, model.digest)),
            test::read_whole_file(source_.blob_path(model.digest)));
  EXPECT_EQ(test::list_dir(target_dir_), test::list_dir(source_.dir));
}

}  // namespace
}  // namespace hearth::registry
