// Model names and digests: ollama's defaults, its character and length rules, and that no
// name or digest can point outside the store.
#include <gtest/gtest.h>

#include "store/model_name.h"

namespace hearth::store {
namespace {

TEST(ModelName, DefaultsFillMissingParts) {
  auto n = parse_model_name("qwen3");
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(n->host, "registry.ollama.ai");
  EXPECT_EQ(n->ns, "library");
  EXPECT_EQ(n->model, "qwen3");
  EXPECT_EQ(n->tag, "latest");
  EXPECT_EQ(n->display(), "qwen3:latest");
  EXPECT_EQ(n->manifest_relpath(), "manifests/registry.ollama.ai/library/qwen3/latest");
}

TEST(ModelName, AllParts) {
  auto n = parse_model_name("localhost:5000/me/my-model.v2:q4_K_M");
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(n->host, "localhost:5000");
  EXPECT_EQ(n->ns, "me");
  EXPECT_EQ(n->model, "my-model.v2");
  EXPECT_EQ(n->tag, "q4_K_M");
  EXPECT_EQ(n->display(), "localhost:5000/me/my-model.v2:q4_K_M");
  auto hf = parse_model_name("hf.co/user/repo:Q4_K_M");
  ASSERT_TRUE(hf.ok());
  EXPECT_EQ(hf->host, "hf.co");
  auto ns = parse_model_name("me/model:v1");
  ASSERT_TRUE(ns.ok());
  EXPECT_EQ(ns->display(), "me/model:v1");
}

TEST(ModelName, DigestSuffix) {
  const std::string hex(64, 'a');
  auto n = parse_model_name("m:t@sha256:" + hex);
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(n->digest, "sha256:" + hex);
  EXPECT_EQ(n->tag, "t");
  EXPECT_FALSE(parse_model_name("m@sha256:" + std::string(63, 'a')).ok());
  EXPECT_FALSE(parse_model_name("m@sha256:" + std::string(64, 'A')).ok());
}

TEST(ModelName, TraversalAndAbsolutePathsAreRefused) {
  for (const char* bad : {"../etc/passwd", "a/../../b", "/etc/passwd", "..", ".", "model:..", "ns/..:tag", "a/b/c/d",
                          "model:../x", "host/ns/.hidden", "mo del", "m:t/x", "", "m:", ":tag", "ns.dots/model"}) {
    auto n = parse_model_name(bad);
    EXPECT_FALSE(n.ok()) << bad;
    if (!n.ok()) {
      EXPECT_EQ(n.error().kind, ErrorKind::kInvalidArgument) << bad;
      EXPECT_FALSE(n.error().message.empty());
    }
  }
}

TEST(ModelName, LengthLimits) {
  auto long_tag = parse_model_name("model:" + std::string(300, 'x'));
  ASSERT_FALSE(long_tag.ok());
  EXPECT_NE(long_tag.error().message.find("tag is 300 characters long (at most 80)"), std::string::npos)
      << long_tag.error().message;
  EXPECT_TRUE(parse_model_name("model:" + std::string(80, 'x')).ok());
  EXPECT_FALSE(parse_model_name(std::string(81, 'm')).ok());
  EXPECT_TRUE(parse_model_name(std::string(300, 'h') + "/ns/model").ok());
  EXPECT_FALSE(parse_model_name(std::string(351, 'h') + "/ns/model").ok());
}

TEST(ModelName, SameAsIgnoresCase) {
  auto a = parse_model_name("Qwen3:Latest");
  auto b = parse_model_name("qwen3");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->same_as(*b));
}

TEST(Digest, Forms) {
  const std::string hex(64, '0');
  EXPECT_EQ(*parse_digest("sha256-" + hex), "sha256:" + hex);
  EXPECT_EQ(*parse_digest("sha256:" + hex), "sha256:" + hex);
  for (const std::string& bad : {std::string("sha256:../../x"), "md5:" + hex, "sha256:" + hex + "0", std::string("sha256:"),
                                "sha256:" + std::string(63, '0') + "/"}) {
    auto d = parse_digest(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.error().message.find("64 lower-case hex"), std::string::npos);
  }
}

}  // namespace
}  // namespace hearth::store
