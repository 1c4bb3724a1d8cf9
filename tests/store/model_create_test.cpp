// create: from a local GGUF (hard-linked in place), from a blob digest, from another model;
// the layers a Modelfile gives; refusals that leave the store consistent.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "store/model_create.h"
#include "store/store_fixture.h"
#include "util/file_io.h"

namespace hearth::store {
namespace {

namespace fs = std::filesystem;

std::string stories() { return hearth::test::models_dir() + "/stories260K-llama-f32.gguf"; }

struct Fixture {
  std::string dir = hearth::test::make_temp_dir();
  std::string gguf = dir + "/stories.gguf";
  ModelStore store{dir + "/store"};
  std::vector<std::string> statuses;
  CreateProgress progress = [this](const std::string& s) { statuses.push_back(s); };
  Fixture() { fs::copy_file(stories(), gguf); }
};

std::string layer_text(const ModelStore& store, const StoredModel& m, const char* type) {
  const Layer* l = m.manifest.find_layer(type);
  if (l == nullptr) return "<none>";
  return *store.read_blob(l->digest);
}

TEST(CreateModel, FromModelfileWithLocalGgufHardLinksIt) {
  HEARTH_REQUIRE_FILE(stories());
  Fixture f;
  auto mf = parse_modelfile("FROM ./stories.gguf\nPARAMETER temperature 0.1\nPARAMETER stop END\nSYSTEM be brief\n"
                            "TEMPLATE {{ .Prompt }}\nMESSAGE user hi\nMESSAGE assistant hello\nLICENSE MIT\n");
  ASSERT_TRUE(mf.ok());
  CreateOptions opts{true, f.dir};
  auto m = create_model(f.store, *parse_model_name("me/tiny:v1"), create_request_from(*mf), opts, f.progress);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  std::vector<std::string> types;
  for (const auto& l : m->manifest.layers) types.push_back(l.media_type);
  EXPECT_EQ(types, (std::vector<std::string>{media_type::kModel, media_type::kTemplate, media_type::kSystem, media_type::kParams,
                                             media_type::kMessages, media_type::kLicense}));
  struct stat a {}, b {};
  ASSERT_EQ(::stat(f.gguf.c_str(), &a), 0);
  ASSERT_EQ(::stat(f.store.find_blob(m->manifest.layers[0].digest)->c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino) << "the GGUF was copied instead of linked";
  EXPECT_EQ(m->manifest.layers[0].size, fs::file_size(f.gguf));
  EXPECT_EQ(layer_text(f.store, *m, media_type::kSystem), "be brief");
  EXPECT_EQ(nlohmann::json::parse(layer_text(f.store, *m, media_type::kParams)),
            nlohmann::json::parse(R"({"temperature":0.1,"stop":["END"]})"));
  EXPECT_EQ(nlohmann::json::parse(layer_text(f.store, *m, media_type::kMessages)),
            nlohmann::json::parse(R"([{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}])"));
  auto config = ModelConfig::from_json(nlohmann::json::parse(*f.store.read_blob(m->manifest.config.digest)));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->model_family, "llama");
  EXPECT_EQ(config->file_type, "F32");
  EXPECT_FALSE(config->model_type.empty());
  EXPECT_EQ(config->diff_ids.size(), 6u);
  EXPECT_EQ(f.statuses.back(), "writing manifest");
  EXPECT_STORE_CONSISTENT(f.store);
}

TEST(CreateModel, NoTemplateKeepsTheGgufsOwn) {
  HEARTH_REQUIRE_FILE(stories());
  Fixture f;
  CreateRequest r;
  r.from = f.gguf;
  auto m = create_model(f.store, *parse_model_name("plain"), r, CreateOptions{true, "/"}, f.progress);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->manifest.layers.size(), 1u);
  EXPECT_EQ(m->manifest.find_layer(media_type::kTemplate), nullptr);
}

TEST(CreateModel, FromBlobDigestAndFromModel) {
  HEARTH_REQUIRE_FILE(stories());
  Fixture f;
  auto imported = f.store.import_file(f.gguf);
  ASSERT_TRUE(imported.ok());
  CreateRequest r;
  r.files = {{"stories.gguf", imported->digest}};
  r.parameters = {{"temperature", 0.5}, {"stop", {"A"}}};
  r.system = "one";
  auto base = create_model(f.store, *parse_model_name("base"), r, CreateOptions{}, f.progress);
  ASSERT_TRUE(base.ok()) << base.error().to_string();

  CreateRequest derived;
  derived.from = "base";
  derived.parameters = {{"top_k", 3}, {"stop", "B"}};
  derived.system = "two";
  auto d = create_model(f.store, *parse_model_name("derived"), derived, CreateOptions{}, f.progress);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->manifest.layers[0].digest, imported->digest);
  EXPECT_EQ(d->manifest.layers[0].from, "base:latest");
  EXPECT_EQ(layer_text(f.store, *d, media_type::kSystem), "two");
  EXPECT_EQ(nlohmann::json::parse(layer_text(f.store, *d, media_type::kParams)),
            nlohmann::json::parse(R"({"temperature":0.5,"top_k":3,"stop":["B"]})"));

  CreateRequest by_digest;
  by_digest.from = imported->digest;
  EXPECT_TRUE(create_model(f.store, *parse_model_name("by-digest"), by_digest, CreateOptions{}, f.progress).ok());
  EXPECT_STORE_CONSISTENT(f.store);
}

TEST(CreateModel, RefusalsLeaveNothingBehind) {
  HEARTH_REQUIRE_FILE(stories());
  Fixture f;
  const ModelName name = *parse_model_name("x");
  CreateRequest local;
  local.from = f.gguf;
  auto refused = create_model(f.store, name, local, CreateOptions{}, f.progress);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("--allow-local-files"), std::string::npos);

  CreateRequest missing;
  missing.from = "sha256:" + std::string(64, 'a');
  EXPECT_EQ(create_model(f.store, name, missing, CreateOptions{}, f.progress).error().kind, ErrorKind::kNotFound);
  CreateRequest no_model;
  no_model.from = "nobody";
  EXPECT_EQ(create_model(f.store, name, no_model, CreateOptions{}, f.progress).error().kind, ErrorKind::kNotFound);

  auto not_gguf = f.store.put_blob("this is not a gguf file at all");
  CreateRequest bad;
  bad.files = {{"model.gguf", *not_gguf}};
  auto e = create_model(f.store, name, bad, CreateOptions{}, f.progress);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, ErrorKind::kCorrupt);

  CreateRequest bad_param;
  bad_param.from = f.gguf;
  bad_param.parameters = {{"temperature", "warm"}};
  EXPECT_FALSE(create_model(f.store, name, bad_param, CreateOptions{true, "/"}, f.progress).ok());
  CreateRequest q;
  q.from = f.gguf;
  q.quantize = "q9_k";
  EXPECT_EQ(create_model(f.store, name, q, CreateOptions{true, "/"}, f.progress).error().kind, ErrorKind::kInvalidArgument);

  EXPECT_FALSE(f.store.resolve(name).ok());
  EXPECT_STORE_CONSISTENT(f.store);
}

}  // namespace
}  // namespace hearth::store
