// ModelStore: manifests round-trip, blobs are verified before they are kept, copy/remove/gc
// keep the store consistent (and count as manifest changes), GGUF imports share the file (hard
// link), and an ollama store is read as a fallback without being written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/model_store.h"
#include "store/store_fixture.h"
#include "util/file_io.h"
#include "util/sha256.h"

namespace hearth::store {
namespace {

namespace fs = std::filesystem;
using test::put_model;

ModelName name_of(const std::string& s) { return *parse_model_name(s); }

TEST(Manifest, RoundTripsAndRejectsBadDigests) {
  Manifest m;
  m.config = Layer{media_type::kConfig, "sha256:" + std::string(64, 'a'), 10, ""};
  m.layers.push_back(Layer{media_type::kModel, "sha256:" + std::string(64, 'b'), 1234, ""});
  m.layers.push_back(Layer{media_type::kTemplate, "sha256:" + std::string(64, 'c'), 5, ""});
  auto back = Manifest::parse(m.to_json());
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->to_json(), m.to_json());
  EXPECT_EQ(back->blob_digests().size(), 3u);
  EXPECT_EQ(back->total_size(), 1249u);
  ASSERT_NE(back->find_layer(media_type::kTemplate), nullptr);
  EXPECT_NE(m.to_json().find("\"schemaVersion\":2"), std::string::npos);

  std::string bad = m.to_json();
  bad.replace(bad.find(std::string(64, 'b')), 64, "../../../../etc/passwd");
  EXPECT_FALSE(Manifest::parse(bad).ok());
  EXPECT_FALSE(Manifest::parse("[]").ok());
  EXPECT_FALSE(Manifest::parse("{\"config\":{}}").ok());
}

// The change counter a listing cache (the router's /models/sse) keys on: every manifest written
// or removed counts, through any copy of the store; reads and failed writes do not.
TEST(ModelStore, ManifestChangesCountWritesAndRemovalsOnly) {
  ModelStore store(hearth::test::make_temp_dir());
  const ModelStore same = store;  // the server's routes and its feed hold copies
  EXPECT_EQ(store.manifest_changes(), 0u);
  put_model(store, "alpha", "weights-a");
  const uint64_t after_put = same.manifest_changes();
  EXPECT_GE(after_put, 1u);
  (void)store.list();
  (void)store.resolve(name_of("alpha"));
  EXPECT_EQ(same.manifest_changes(), after_put);
  ASSERT_TRUE(store.copy(name_of("alpha"), name_of("beta")).ok());
  EXPECT_EQ(same.manifest_changes(), after_put + 1);
  EXPECT_FALSE(store.copy(name_of("nobody"), name_of("gamma")).ok());
  EXPECT_FALSE(store.remove(name_of("nobody")).ok());
  EXPECT_EQ(same.manifest_changes(), after_put + 1);
  ASSERT_TRUE(store.remove(name_of("beta")).ok());
  EXPECT_EQ(same.manifest_changes(), after_put + 2);
}

TEST(ModelStore, PutResolveListCopyRemove) {
  ModelStore store(hearth::test::make_temp_dir());
  StoredModel a = put_model(store, "alpha", "weights-a", "{\"temperature\":0.5}");
  put_model(store, "me/beta:v1", "weights-b");
  EXPECT_EQ(a.manifest.layers.size(), 2u);
  EXPECT_TRUE(fs::exists(store.root() + "/manifests/registry.ollama.ai/library/alpha/latest"));
  auto blob = store.find_blob(a.manifest.layers[0].digest);
  ASSERT_TRUE(blob.has_value());
  EXPECT_EQ(*read_file(*blob), "weights-a");

  auto listed = store.list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].name.display(), "alpha:latest");
  EXPECT_EQ(listed[1].name.display(), "me/beta:v1");
  auto upper = store.resolve(name_of("ALPHA:LATEST"));
  EXPECT_TRUE(upper.ok());

  ASSERT_TRUE(store.copy(name_of("alpha"), name_of("alpha-copy:x")).ok());
  auto copy = store.resolve(name_of("alpha-copy:x"));
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->manifest_digest, a.manifest_digest);
  auto by_digest = store.resolve(name_of("alpha-copy:x@" + a.manifest_digest));
  EXPECT_TRUE(by_digest.ok());
  EXPECT_FALSE(store.resolve(name_of("alpha@sha256:" + std::string(64, '0'))).ok());

  // Removing one name keeps the blobs the copy still uses; removing the copy frees them.
  ASSERT_TRUE(store.remove(name_of("alpha")).ok());
  EXPECT_TRUE(store.find_blob(a.manifest.layers[0].digest).has_value());
  ASSERT_TRUE(store.remove(name_of("alpha-copy:x")).ok());
  EXPECT_FALSE(store.find_blob(a.manifest.layers[0].digest).has_value());
  EXPECT_FALSE(fs::exists(store.root() + "/manifests/registry.ollama.ai/library/alpha"));
  auto gone = store.remove(name_of("alpha"));
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(store.list().size(), 1u);
  EXPECT_STORE_CONSISTENT(store);
}

TEST(ModelStore, ManifestNeedsItsBlobs) {
  ModelStore store(hearth::test::make_temp_dir());
  Manifest m;
  m.config = Layer{media_type::kConfig, "sha256:" + std::string(64, 'a'), 10, ""};
  auto st = store.write_manifest(name_of("x"), m);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("is missing"), std::string::npos);
  EXPECT_FALSE(fs::exists(store.root() + "/manifests/registry.ollama.ai/library/x/latest"));
  EXPECT_STORE_CONSISTENT(store);
}

TEST(ModelStore, BlobWriterVerifiesDigest) {
  ModelStore store(hearth::test::make_temp_dir());
  {
    auto w = store.begin_blob();
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->append("hello ").ok());
    ASSERT_TRUE(w->append("world").ok());
    auto d = w->commit("sha256:" + std::string(64, '1'));
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message.find("digest mismatch"), std::string::npos);
  }
  EXPECT_STORE_CONSISTENT(store);  // the refused upload left no temporary file
  EXPECT_TRUE(fs::is_empty(store.root() + "/blobs"));
  auto w = store.begin_blob();
  ASSERT_TRUE(w->append("hello world").ok());
  auto d = w->commit("sha256:" + sha256_hex("hello world"));
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_TRUE(store.has_blob(*d));
  { auto abandoned = store.begin_blob(); ASSERT_TRUE(abandoned->append("half").ok()); }
  EXPECT_STORE_CONSISTENT(store);
}

TEST(ModelStore, CommitBlobFileRefusesWrongData) {
  ModelStore store(hearth::test::make_temp_dir());
  ASSERT_TRUE(store.blob_path("sha256:" + std::string(64, 'a')).ok());
  const std::string partial = store.root() + "/blobs/sha256-" + std::string(64, 'a') + "-partial";
  std::ofstream(partial) << "not what the digest says";
  auto st = store.commit_blob_file(partial, "sha256:" + std::string(64, 'a'));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::kCorrupt);
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_FALSE(store.has_blob("sha256:" + std::string(64, 'a')));
  std::ofstream(partial) << "right";
  ASSERT_TRUE(store.commit_blob_file(partial, "sha256:" + sha256_hex("right")).ok());
  EXPECT_TRUE(store.has_blob("sha256:" + sha256_hex("right")));
  EXPECT_FALSE(store.blob_path("sha256:../../etc").ok());
}

TEST(ModelStore, GarbageCollectorDropsOrphansAndStaleTempFiles) {
  ModelStore store(hearth::test::make_temp_dir());
  StoredModel kept = put_model(store, "kept", "kept-weights");
  auto orphan = store.put_blob("nobody uses me");
  ASSERT_TRUE(orphan.ok());
  const std::string stale = store.root() + "/blobs/upload.tmp-123";
  std::ofstream(stale) << "half an upload";
  const std::string stale_manifest = store.root() + "/manifests/registry.ollama.ai/library/kept/latest.tmp-9";
  std::ofstream(stale_manifest) << "{";
  // Young files survive a collection with a grace period: they may be writes in progress.
  auto young = store.collect_garbage(std::chrono::hours(1));
  ASSERT_TRUE(young.ok());
  EXPECT_TRUE(young->removed_blobs.empty());
  EXPECT_TRUE(store.has_blob(*orphan));
  EXPECT_EQ(store.list().size(), 1u);  // a temp manifest is never listed

  auto report = store.collect_garbage(std::chrono::seconds(-1));
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  ASSERT_EQ(report->removed_blobs.size(), 1u);
  EXPECT_EQ(report->removed_blobs[0], *orphan);
  EXPECT_EQ(report->removed_temp_files.size(), 2u);
  EXPECT_FALSE(store.has_blob(*orphan));
  for (const auto& d : kept.manifest.blob_digests()) EXPECT_TRUE(store.has_blob(d));
  EXPECT_STORE_CONSISTENT(store);
}

TEST(ModelStore, ConsistencyCheckFindsProblems) {
  ModelStore store(hearth::test::make_temp_dir());
  StoredModel m = put_model(store, "m", "weights");
  std::ofstream(store.root() + "/blobs/upload.tmp-1") << "x";
  fs::remove(store.root() + "/blobs/" + blob_file_name(m.manifest.layers[0].digest));
  auto r = store.check_consistency();
  EXPECT_EQ(r.problems.size(), 2u);
}

TEST(ModelStore, ImportHardLinksAGgufInPlace) {
  const std::string dir = hearth::test::make_temp_dir();
  const std::string src = dir + "/model.gguf";
  std::ofstream(src) << std::string(100000, 'g');
  ModelStore store(dir + "/store");
  auto b = store.import_file(src);
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(b->method, ImportMethod::kHardLink);
  EXPECT_EQ(b->size, 100000u);
  struct stat a {}, c {};
  ASSERT_EQ(::stat(src.c_str(), &a), 0);
  ASSERT_EQ(::stat(store.find_blob(b->digest)->c_str(), &c), 0);
  EXPECT_EQ(a.st_ino, c.st_ino);  // one file, two names: no second copy
  EXPECT_EQ(a.st_nlink, 2u);
  auto again = store.import_file(src);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->digest, b->digest);
  EXPECT_FALSE(store.import_file(dir + "/missing.gguf").ok());
  EXPECT_FALSE(store.import_file(dir).ok());
  EXPECT_STORE_CONSISTENT(store);
}

TEST(ModelStore, OllamaStoreIsAReadOnlyFallback) {
  ModelStore ollama(hearth::test::make_temp_dir());
  StoredModel theirs = put_model(ollama, "llama3", "their-weights");
  put_model(ollama, "shared", "their-shared");
  ModelStore store(hearth::test::make_temp_dir(), {ollama.root()});
  put_model(store, "shared", "our-shared");
  auto listed = store.list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].name.model, "llama3");
  EXPECT_TRUE(listed[0].read_only);
  EXPECT_FALSE(listed[1].read_only);  // our "shared" hides theirs
  auto r = store.resolve(name_of("llama3"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->read_only);
  EXPECT_TRUE(store.has_blob(theirs.manifest.layers[0].digest));
  auto rm = store.remove(name_of("llama3"));
  ASSERT_FALSE(rm.ok());
  EXPECT_NE(rm.error().message.find("read-only"), std::string::npos);
  // A copy brings the blobs into our store; theirs is untouched.
  ASSERT_TRUE(store.copy(name_of("llama3"), name_of("mine")).ok());
  EXPECT_TRUE(fs::exists(store.root() + "/blobs/" + blob_file_name(theirs.manifest.layers[0].digest)));
  ASSERT_TRUE(store.remove(name_of("mine")).ok());
  EXPECT_TRUE(ollama.resolve(name_of("llama3")).ok());
  EXPECT_TRUE(ollama.has_blob(theirs.manifest.layers[0].digest));
  EXPECT_STORE_CONSISTENT(store);
  EXPECT_STORE_CONSISTENT(ollama);
}

}  // namespace
}  // namespace hearth::store
