// Names, digests, endpoints, challenges, manifests and part plans: everything the registry
// client checks before (or without) talking to a registry.
#include <gtest/gtest.h>

#include "common/broken_http_peer.h"
#include "registry/blob_download.h"
#include "registry/http_client.h"
#include "registry/registry_client.h"
#include "registry/registry_manifest.h"
#include "registry/registry_reference.h"

namespace hearth::registry {
namespace {

const std::string kDigest = "sha256:" + std::string(64, 'a');

TEST(RegistryReference, DigestsMustBeSha256With64LowerHexDigits) {
  EXPECT_TRUE(validate_blob_digest(kDigest).ok());
  EXPECT_FALSE(validate_blob_digest("sha256:" + std::string(63, 'a')).ok());
  EXPECT_FALSE(validate_blob_digest("sha256:" + std::string(65, 'a')).ok());
  EXPECT_FALSE(validate_blob_digest("sha256:" + std::string(64, 'A')).ok());
  EXPECT_FALSE(validate_blob_digest("sha512:" + std::string(64, 'a')).ok());
  EXPECT_FALSE(validate_blob_digest("sha256:../../" + std::string(58, 'a')).ok());
  EXPECT_EQ(validate_blob_digest("sha256:xyz").error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(digest_short("sha256:0123456789abcdef0123"), "0123456789ab");
}

TEST(RegistryReference, RepositoriesFollowTheRegistryGrammar) {
  for (const char* ok : {"library/qwen3", "user/repo", "a", "bartowski/Llama-3.2-1B-Instruct-GGUF", "a/b/c", "x_y.z"}) {
    EXPECT_TRUE(validate_repository(ok).ok()) << ok;
  }
  for (const char* bad : {"", "../etc", "library/../x", "/abs", "a//b", "a/", "a..b", "-a", "a b", "a?b", "a%2f", "a/./b", "é"}) {
    EXPECT_FALSE(validate_repository(bad).ok()) << bad;
  }
  EXPECT_FALSE(validate_repository(std::string(256, 'a')).ok());
}

TEST(RegistryReference, TagsAndDigestReferences) {
  for (const char* ok : {"latest", "Q4_K_M", "3.2-1b", "_x"}) EXPECT_TRUE(validate_reference(ok).ok()) << ok;
  EXPECT_TRUE(validate_reference(kDigest).ok());
  for (const char* bad : {"", ".hidden", "-x", "a/b", "a b", "sha256:abc", "x:y"}) {
    EXPECT_FALSE(validate_reference(bad).ok()) << bad;
  }
  EXPECT_TRUE(validate_reference(std::string(128, 'a')).ok());
  EXPECT_FALSE(validate_reference(std::string(300, 'a')).ok());
}

TEST(RegistryReference, EndpointsAreHttpsUnlessInsecure) {
  auto ep = parse_registry_endpoint("registry.ollama.ai", false);
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->base_url(), "https://registry.ollama.ai");
  EXPECT_EQ(parse_registry_endpoint("127.0.0.1:5000", true)->base_url(), "http://127.0.0.1:5000");
  EXPECT_EQ(parse_registry_endpoint("127.0.0.1:5000", false)->base_url(), "https://127.0.0.1:5000");
  EXPECT_EQ(parse_registry_endpoint("http://127.0.0.1:5000/", true)->authority(), "127.0.0.1:5000");
  auto plain = parse_registry_endpoint("http://example.com", false);
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.error().message.find("--insecure"), std::string::npos);
  // Hugging Face speaks the same protocol at https://hf.co, whatever the flags.
  EXPECT_EQ(parse_registry_endpoint("hf.co", true)->base_url(), "https://hf.co");
  EXPECT_EQ(parse_registry_endpoint("huggingface.co", false)->base_url(), "https://hf.co");
  for (const char* bad : {"", "host:0", "host:70000", "host:x", "ho/st", "a@b", "-host"}) {
    EXPECT_FALSE(parse_registry_endpoint(bad, true).ok()) << bad;
  }
}

TEST(RegistryReference, BearerChallengesParse) {
  auto c = parse_auth_challenge(
      R"(Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push")");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->scheme, "bearer");
  EXPECT_EQ(c->realm, "https://auth.example/token");
  EXPECT_EQ(c->service, "registry.example");
  EXPECT_EQ(c->scope, "repository:a/b:pull,push");
  EXPECT_EQ(parse_auth_challenge(R"(Basic realm="x")")->scheme, "basic");
  EXPECT_FALSE(parse_auth_challenge("Negotiate abc").ok());
  EXPECT_FALSE(parse_auth_challenge(R"(Bearer realm="unterminated)").ok());
}

TEST(RegistryReference, UrlHelpers) {
  EXPECT_EQ(url_with_query("http://h/p", "a=b"), "http://h/p?a=b");
  EXPECT_EQ(url_with_query("http://h/p?_state=x", "digest=y"), "http://h/p?_state=x&digest=y");
  EXPECT_EQ(url_escape("sha256:ab/c d"), "sha256%3Aab%2Fc%20d");
  EXPECT_EQ(resolve_location("http://h:1/v2/x/blobs/uploads/", "/v2/x/blobs/uploads/u?s=1"), "http://h:1/v2/x/blobs/uploads/u?s=1");
  EXPECT_EQ(resolve_location("http://h:1/a", "https://cdn/b"), "https://cdn/b");
}

TEST(RegistryManifest, ParsesConfigAndLayersStrictly) {
  std::string good = R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
    "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":")" + kDigest + R"(","size":10},
    "layers":[{"mediaType":"application/vnd.ollama.image.model","digest":")" + kDigest + R"(","size":5}]})";
  auto m = parse_manifest(good);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->layers.size(), 1u);
  EXPECT_EQ(m->layers[0].media_type, "application/vnd.ollama.image.model");
  EXPECT_EQ(m->blobs().size(), 1u);  // the same digest twice is fetched once

  std::string traversal = good;
  traversal.replace(traversal.rfind(kDigest), kDigest.size(), "sha256:../../../../etc/passwd");
  EXPECT_EQ(parse_manifest(traversal).error().kind, ErrorKind::kCorrupt);
  std::string negative = good;
  negative.replace(negative.find("\"size\":5"), 8, "\"size\":-5");
  EXPECT_FALSE(parse_manifest(negative).ok());
  EXPECT_FALSE(parse_manifest("not json").ok());
  EXPECT_FALSE(parse_manifest(R"({"schemaVersion":1})").ok());
  EXPECT_FALSE(parse_manifest(R"({"schemaVersion":2,"config":{}})").ok());
  EXPECT_EQ(parse_manifest(R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json"})")
                .error().kind, ErrorKind::kUnsupported);
}

TEST(BlobParts, LargeBlobsSplitIntoPartsInOrder) {
  BlobDownloadOptions o;  // defaults: 64 MiB threshold, 16 MiB parts
  EXPECT_EQ(plan_blob_parts(0, o).size(), 1u);
  EXPECT_EQ(plan_blob_parts((64ull << 20) - 1, o).size(), 1u);
  auto parts = plan_blob_parts((512ull << 20) + 3, o);
  ASSERT_EQ(parts.size(), 33u);
  uint64_t next = 0;
  for (auto [offset, length] : parts) {
    EXPECT_EQ(offset, next);
    EXPECT_LE(length, 16ull << 20);
    next += length;
  }
  EXPECT_EQ(next, (512ull << 20) + 3);
  EXPECT_EQ(parts.back().second, 3u);
}

TEST(RegistryClientInput, BadNamesAreRefusedBeforeAnyRequest) {
  test::BrokenHttpPeer peer(test::BrokenPeerMode::kStatus500);
  RegistryClientOptions o;
  o.endpoint = *parse_registry_endpoint("127.0.0.1:" + std::to_string(peer.port()), true);
  RegistryClient client(o);
  PullRequest pull;
  pull.has_blob = [](const std::string&) { return false; };
  pull.blob_path = [](const std::string& d) { return "/nonexistent/" + d; };
  for (auto [repo, ref] : std::vector<std::pair<std::string, std::string>>{
           {"library/x", "sha256:1234"}, {"library/x", "sha256:" + std::string(64, 'g')},
           {"../x", "latest"}, {"library/x", std::string(300, 't')}, {"library/x", "../../etc"}}) {
    pull.repository = repo;
    pull.reference = ref;
    auto r = client.pull(pull);
    ASSERT_FALSE(r.ok()) << repo << ":" << ref;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument) << r.error().to_string();
  }
  PushRequest push;
  push.repository = "library/x";
  push.reference = "latest";
  push.manifest_bytes = R"({"schemaVersion":2,"config":{"digest":"sha256:12","size":1},"layers":[]})";
  push.blob_path = [](const std::string& d) { return d; };
  EXPECT_FALSE(client.push(push).ok());
  EXPECT_EQ(peer.connections(), 0);
}

}  // namespace
}  // namespace hearth::registry
