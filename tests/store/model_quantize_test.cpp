// create with `quantize`: an F16 GGUF becomes a new model blob of the asked type (the tensor
// types llama-quantize picks, general.file_type and the config's file type set), also when
// creating from another model; an already quantized source or an unknown type is refused and
// leaves nothing behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "gguf/gguf_file.h"
#include "store/model_create.h"
#include "store/store_fixture.h"

namespace hearth::store {
namespace {

namespace fs = std::filesystem;

std::string random_llama(const std::string& type) { return hearth::test::models_dir() + "/random/llama-" + type + ".gguf"; }

struct Fixture {
  std::string dir = hearth::test::make_temp_dir();
  ModelStore store{dir + "/store"};
  std::vector<std::string> statuses;
  CreateProgress progress = [this](const std::string& s) { statuses.push_back(s); };
};

std::string config_file_type(const ModelStore& store, const StoredModel& m) {
  auto c = ModelConfig::from_json(nlohmann::json::parse(*store.read_blob(m.manifest.config.digest)));
  return c.ok() ? c->file_type : "<bad config>";
}

TEST(CreateQuantized, F16GgufToQ4KMHasLlamaQuantizesTypes) {
  HEARTH_REQUIRE_FILE(random_llama("F16"));
  HEARTH_REQUIRE_FILE(random_llama("Q4_K_M"));
  Fixture f;
  CreateRequest r;
  r.from = random_llama("F16");
  r.quantize = "q4_K_M";
  auto m = create_model(f.store, *parse_model_name("small:q4"), r, CreateOptions{true, "/"}, f.progress);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_NE(std::find(f.statuses.begin(), f.statuses.end(), "quantizing F16 model to Q4_K_M"), f.statuses.end());
  EXPECT_EQ(config_file_type(f.store, *m), "Q4_K_M");
  const Layer* model = m->manifest.find_layer(media_type::kModel);
  ASSERT_NE(model, nullptr);
  auto path = f.store.find_blob(model->digest);
  ASSERT_TRUE(path.has_value());
  EXPECT_EQ(fs::file_size(*path), model->size);
  auto mine = gguf::File::open(*path);
  auto theirs = gguf::File::open(random_llama("Q4_K_M"));
  ASSERT_TRUE(mine.ok() && theirs.ok());
  EXPECT_EQ(mine->get_or<uint32_t>("general.file_type", 0), 15u);
  for (const auto& t : mine->tensors()) {
    EXPECT_EQ(t.type, theirs->find_tensor(t.name)->type) << t.name;
  }
  EXPECT_STORE_CONSISTENT(f.store);

  // From a model in the store: the new model gets its own blob; the base is unchanged.
  CreateRequest base;
  base.from = random_llama("F16");
  ASSERT_TRUE(create_model(f.store, *parse_model_name("small:f16"), base, CreateOptions{true, "/"}, f.progress).ok());
  CreateRequest derived;
  derived.from = "small:f16";
  derived.quantize = "Q8_0";
  auto q8 = create_model(f.store, *parse_model_name("small:q8"), derived, CreateOptions{}, f.progress);
  ASSERT_TRUE(q8.ok()) << q8.error().to_string();
  EXPECT_EQ(config_file_type(f.store, *q8), "Q8_0");
  EXPECT_EQ(config_file_type(f.store, *f.store.resolve(*parse_model_name("small:f16"))), "F16");
  EXPECT_TRUE(q8->manifest.find_layer(media_type::kModel)->from.empty());
  EXPECT_STORE_CONSISTENT(f.store);
}

TEST(CreateQuantized, RefusesQuantizedSourcesAndUnknownTypesWithoutWriting) {
  HEARTH_REQUIRE_FILE(random_llama("Q4_0"));
  HEARTH_REQUIRE_FILE(random_llama("F16"));
  Fixture f;
  CreateRequest already;
  already.from = random_llama("Q4_0");
  already.quantize = "Q4_K_M";
  auto a = create_model(f.store, *parse_model_name("x"), already, CreateOptions{true, "/"}, f.progress);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::kUnsupported);
  EXPECT_NE(a.error().message.find("only supported for F16, BF16 and F32"), std::string::npos) << a.error().message;

  f.statuses.clear();
  CreateRequest unknown;
  unknown.from = random_llama("F16");
  unknown.quantize = "Q3_K_XL";
  auto u = create_model(f.store, *parse_model_name("y"), unknown, CreateOptions{true, "/"}, f.progress);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_TRUE(f.statuses.empty()) << "an unknown type is refused before any work";
  EXPECT_TRUE(f.store.list().empty());
  EXPECT_STORE_CONSISTENT(f.store);
}

}  // namespace
}  // namespace hearth::store
