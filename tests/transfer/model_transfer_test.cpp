// Pull and push of stored models against Debian's real docker-registry: a round trip keeps
// every digest, a second repository mounts the shared blob, a blob corrupted on the registry or
// a cancelled pull publishes no manifest, and the store stays consistent throughout.
#include "transfer/model_transfer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/require_docker_registry.h"
#include "store/store_fixture.h"

namespace hearth::transfer {
namespace {

using store::ModelStore;
using store::test::put_model;

struct Recorder {
  std::vector<ProgressEvent> events;
  ProgressCallback callback() {
    return [this](const ProgressEvent& e) {
      events.push_back(e);
      return true;
    };
  }
  bool saw(const std::string& status) const {
    for (const auto& e : events) {
      if (e.status == status) return true;
    }
    return false;
  }
};

store::ModelName name_of(const std::string& text) {
  auto n = store::parse_model_name(text);
  EXPECT_TRUE(n.ok()) << text;
  return *n;
}

class TransferTest : public ::testing::Test {
 protected:
  void SetUp() override { HEARTH_START_DOCKER_REGISTRY(registry_); }
  std::string remote(const std::string& model) const { return registry_->address() + "/" + model; }
  TransferOptions insecure() const {
    TransferOptions o;
    o.insecure = true;
    o.limits.max_attempts = 2;
    o.limits.retry_budget = std::chrono::milliseconds(2000);
    return o;
  }
  std::unique_ptr<test::DockerRegistry> registry_;
};

TEST_F(TransferTest, PushThenPullIntoAnEmptyStoreKeepsEveryDigest) {
  ModelStore source(test::make_temp_dir());
  const std::string weights(300000, 'w');
  const store::StoredModel pushed = put_model(source, remote("library/tiny:v1"), weights, "{\"temperature\":0}");

  Recorder push_events;
  auto push = push_model(source, pushed.name, insecure(), push_events.callback());
  ASSERT_TRUE(push.ok()) << push.error().to_string();
  EXPECT_EQ(push->manifest_digest, pushed.manifest_digest);
  EXPECT_EQ(push->blobs_uploaded, 3);
  EXPECT_EQ(push_events.events.front().status, "retrieving manifest");
  const std::string model_digest = pushed.manifest.layers[0].digest;
  EXPECT_TRUE(push_events.saw("pushing " + model_digest.substr(7, 12)));
  EXPECT_TRUE(push_events.saw("pushing manifest"));

  ModelStore target(test::make_temp_dir());
  Recorder pull_events;
  auto pull = pull_model(target, pushed.name, insecure(), pull_events.callback());
  ASSERT_TRUE(pull.ok()) << pull.error().to_string();
  auto got = target.resolve(pushed.name);
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->manifest_digest, pushed.manifest_digest);
  EXPECT_EQ(got->manifest.blob_digests(), pushed.manifest.blob_digests());
  auto bytes = target.read_blob(model_digest);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, weights);
  ASSERT_GE(pull_events.events.size(), 5u);
  EXPECT_EQ(pull_events.events.front().status, "pulling manifest");
  EXPECT_EQ(pull_events.events.back().status, "writing manifest");
  bool model_completed = false;
  for (const auto& e : pull_events.events) {
    if (e.digest == model_digest && e.completed == weights.size() && e.total == weights.size()) model_completed = true;
  }
  EXPECT_TRUE(model_completed);
  EXPECT_TRUE(pull_events.saw("verifying sha256 digest"));
  EXPECT_STORE_CONSISTENT(target);

  // Pulling again fetches nothing.
  auto again = pull_model(target, pushed.name, insecure(), {});
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_TRUE(again->fetched.empty());
}

TEST_F(TransferTest, ASecondRepositoryMountsTheSharedBlob) {
  ModelStore store(test::make_temp_dir());
  const std::string weights(100000, 'm');
  const store::StoredModel first = put_model(store, remote("library/base:v1"), weights);
  ASSERT_TRUE(push_model(store, first.name, insecure(), {}).ok());
  const store::StoredModel second = put_model(store, remote("me/derived:v1"), weights, "{\"top_k\":1}");
  auto push = push_model(store, second.name, insecure(), {});
  ASSERT_TRUE(push.ok()) << push.error().to_string();
  EXPECT_EQ(push->blobs_mounted, 1);   // the weights, from library/base
  EXPECT_EQ(push->blobs_uploaded, 2);  // its own params and config
}

TEST_F(TransferTest, ABlobCorruptedOnTheRegistryIsRefusedAndNothingIsPublished) {
  ModelStore source(test::make_temp_dir());
  const store::StoredModel model = put_model(source, remote("library/bad:v1"), std::string(50000, 'c'));
  ASSERT_TRUE(push_model(source, model.name, insecure(), {}).ok());
  const std::string weights_digest = model.manifest.layers[0].digest;
  {
    std::fstream f(registry_->blob_data_path(weights_digest), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekp(1000);
    f.put('X');
  }
  ModelStore target(test::make_temp_dir());
  auto pull = pull_model(target, model.name, insecure(), {});
  ASSERT_FALSE(pull.ok());
  EXPECT_EQ(pull.error().kind, ErrorKind::kCorrupt) << pull.error().to_string();
  EXPECT_NE(pull.error().message.find(weights_digest.substr(7, 12)), std::string::npos) << pull.error().message;
  EXPECT_FALSE(target.resolve(model.name).ok());
  EXPECT_FALSE(target.has_blob(weights_digest));
  EXPECT_TRUE(target.list().empty());
  EXPECT_STORE_CONSISTENT(target);
}

TEST_F(TransferTest, ACancelledPullPublishesNoManifest) {
  ModelStore source(test::make_temp_dir());
  const store::StoredModel model = put_model(source, remote("library/gone:v1"), std::string(70000, 'g'));
  ASSERT_TRUE(push_model(source, model.name, insecure(), {}).ok());
  ModelStore target(test::make_temp_dir());
  auto pull = pull_model(target, model.name, insecure(), [](const ProgressEvent& e) { return e.status != "writing manifest"; });
  ASSERT_FALSE(pull.ok());
  EXPECT_EQ(pull.error().kind, ErrorKind::kUnavailable);
  EXPECT_FALSE(target.resolve(model.name).ok());
  EXPECT_STORE_CONSISTENT(target);
  // The blobs stay; the next pull only publishes.
  auto next = pull_model(target, model.name, insecure(), {});
  ASSERT_TRUE(next.ok()) << next.error().to_string();
  EXPECT_TRUE(next->fetched.empty());
  EXPECT_TRUE(target.resolve(model.name).ok());
}

TEST_F(TransferTest, MissingModelsAreNotFound) {
  ModelStore store(test::make_temp_dir());
  auto missing = pull_model(store, name_of(remote("library/nothing:v1")), insecure(), {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound) << missing.error().to_string();
  auto not_stored = push_model(store, name_of(remote("library/nothing:v1")), insecure(), {});
  ASSERT_FALSE(not_stored.ok());
  EXPECT_EQ(not_stored.error().kind, ErrorKind::kNotFound);
  EXPECT_TRUE(store.list().empty());
}

TEST(RemoteModel, NamesMapToEndpointsRepositoriesAndReferences) {
  auto plain = remote_model(name_of("qwen3"), false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->endpoint.base_url(), "https://registry.ollama.ai");
  EXPECT_EQ(plain->repository, "library/qwen3");
  EXPECT_EQ(plain->reference, "latest");
  auto local = remote_model(name_of("127.0.0.1:5000/me/tiny:v2"), true);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->endpoint.base_url(), "http://127.0.0.1:5000");
  EXPECT_EQ(local->repository, "me/tiny");
  EXPECT_EQ(local->reference, "v2");
  auto secure = remote_model(name_of("127.0.0.1:5000/me/tiny:v2"), false);
  ASSERT_TRUE(secure.ok());
  EXPECT_EQ(secure->endpoint.base_url(), "https://127.0.0.1:5000");  // plain HTTP only with insecure
  auto hf = remote_model(name_of("hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M"), false);
  ASSERT_TRUE(hf.ok()) << hf.error().to_string();
  EXPECT_EQ(hf->endpoint.base_url(), "https://hf.co");
  EXPECT_EQ(hf->reference, "Q4_K_M");
  const std::string digest = "sha256:" + std::string(64, 'a');
  auto pinned = remote_model(name_of("me/tiny@" + digest), false);
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->reference, digest);
}

}  // namespace
}  // namespace hearth::transfer
