// Parses every shared GGUF file (models, random models, vocab files) and checks the facts
// written down in shared/models/README.md, models/random/README.md + manifest.json and
// vocab/README.md: tensor counts and types, sizes, key counts, hyperparameters and the
// stories260K quirks a loader must accept.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"

namespace hearth::gguf {
namespace {

std::vector<std::string> gguf_files_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name.substr(name.size() - 5) == ".gguf") out.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

int64_t parameter_count(const File& f) {
  int64_t n = 0;
  for (const auto& t : f.tensors()) n += t.element_count();
  return n;
}

std::map<std::string, int> type_counts(const File& f) {
  std::map<std::string, int> counts;
  for (const auto& t : f.tensors()) counts[std::string(dtype_name(t.type))]++;
  return counts;
}

TEST(GgufModels, EverySharedFileParses) {
  std::vector<std::string> files;
  for (const auto& dir : {test::models_dir(), test::models_dir() + "/random", test::vocab_dir()}) {
    auto found = gguf_files_in(dir);
    files.insert(files.end(), found.begin(), found.end());
  }
  HEARTH_REQUIRE_FILE(test::models_dir() + "/stories260K-llama-f32.gguf");
  EXPECT_GE(files.size(), 2u + 33u + 5u);
  for (const auto& path : files) {
    auto f = File::open(path);
    ASSERT_TRUE(f.ok()) << path << ": " << f.error().to_string();
    EXPECT_TRUE(f->version() == 2 || f->version() == 3) << path;
    EXPECT_EQ(f->path(), path);
    for (const auto& t : f->tensors()) {
      ASSERT_NE(t.data, nullptr);
      EXPECT_EQ(t.offset % f->alignment(), 0u) << path << " " << t.name;
      EXPECT_LE(f->data_offset() + t.offset + t.size_bytes, f->file_size()) << path << " " << t.name;
      EXPECT_EQ(f->find_tensor(t.name), &t);
    }
    for (const auto& kv : f->metadata()) EXPECT_EQ(f->find(kv.key), &kv.value) << path << " " << kv.key;
  }
}

TEST(GgufModels, Stories260KFactsAndQuirks) {
  const std::string path = test::models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto r = File::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const File& f = *r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.file_size(), 1185376u);
  EXPECT_EQ(f.tensors().size(), 48u);
  EXPECT_EQ(f.metadata().size(), 19u);
  EXPECT_EQ(f.architecture(), "llama");
  EXPECT_FALSE(f.has("general.alignment"));
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_FALSE(f.has("general.file_type"));
  EXPECT_FALSE(f.has("tokenizer.ggml.pre"));
  EXPECT_FALSE(f.has("tokenizer.ggml.add_bos_token"));
  EXPECT_FALSE(f.has("tokenizer.chat_template"));
  EXPECT_TRUE(f.has("tokenizer.ggml.seperator_token_id"));
  EXPECT_EQ(parameter_count(f), 292800);
  EXPECT_EQ(type_counts(f), (std::map<std::string, int>{{"F32", 48}}));

  EXPECT_EQ(f.get<uint32_t>("llama.context_length").value(), 2048u);
  EXPECT_EQ(f.get<int64_t>("llama.embedding_length").value(), 64);
  EXPECT_EQ(f.get<int32_t>("llama.block_count").value(), 5);
  EXPECT_EQ(f.get<uint64_t>("llama.feed_forward_length").value(), 172u);
  EXPECT_EQ(f.get<uint32_t>("llama.attention.head_count").value(), 8u);
  EXPECT_EQ(f.get<uint32_t>("llama.attention.head_count_kv").value(), 4u);
  EXPECT_EQ(f.get<uint32_t>("llama.rope.dimension_count").value(), 8u);
  EXPECT_FLOAT_EQ(f.get<float>("llama.attention.layer_norm_rms_epsilon").value(), 1e-5f);
  EXPECT_NEAR(f.get<double>("llama.attention.layer_norm_rms_epsilon").value(), 1e-5, 1e-9);
  EXPECT_FALSE(f.has("llama.rope.freq_base"));
  EXPECT_FLOAT_EQ(f.get_or<float>("llama.rope.freq_base", 10000.0f), 10000.0f);

  EXPECT_EQ(f.get<std::string>("tokenizer.ggml.model").value(), "llama");
  EXPECT_EQ(f.get_array<std::string>("tokenizer.ggml.tokens").value().size(), 512u);
  EXPECT_EQ(f.get_array<float>("tokenizer.ggml.scores").value().size(), 512u);
  EXPECT_EQ(f.get_array<int32_t>("tokenizer.ggml.token_type").value().size(), 512u);
  EXPECT_EQ(f.get<uint32_t>("tokenizer.ggml.bos_token_id").value(), 1u);
  EXPECT_EQ(f.get<uint32_t>("tokenizer.ggml.eos_token_id").value(), 2u);
  EXPECT_EQ(f.get<uint32_t>("tokenizer.ggml.unknown_token_id").value(), 0u);
  // pad is stored as uint32 0xFFFFFFFF (-1): fine as uint32 or int64, out of range as int32.
  EXPECT_EQ(f.get<uint32_t>("tokenizer.ggml.padding_token_id").value(), 0xFFFFFFFFu);
  EXPECT_EQ(f.get<int64_t>("tokenizer.ggml.padding_token_id").value(), 0xFFFFFFFFll);
  auto pad32 = f.get<int32_t>("tokenizer.ggml.padding_token_id");
  ASSERT_FALSE(pad32.ok());
  EXPECT_EQ(pad32.error().kind, ErrorKind::kOutOfRange);

  // The tokenizer arrays come before general.architecture.
  size_t tokens_pos = 0, arch_pos = 0;
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    if (f.metadata()[i].key == "tokenizer.ggml.tokens") tokens_pos = i;
    if (f.metadata()[i].key == "general.architecture") arch_pos = i;
  }
  EXPECT_LT(tokens_pos, arch_pos);

  const TensorInfo* out = f.find_tensor("output.weight");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->shape, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(out->rows(), 512);
  EXPECT_EQ(out->size_bytes, 64u * 512u * 4u);
  EXPECT_EQ(f.find_tensor("no.such.tensor"), nullptr);
}

TEST(GgufModels, Llama2TinyRandomFacts) {
  const std::string path = test::models_dir() + "/llama2-tiny-random-f16.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto r = File::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const File& f = *r;
  EXPECT_EQ(f.file_size(), 1750560u);
  EXPECT_EQ(f.architecture(), "llama");
  EXPECT_EQ(parameter_count(f), 513048);
  EXPECT_EQ(type_counts(f), (std::map<std::string, int>{{"F16", 9}, {"F32", 3}}));
  EXPECT_EQ(f.get<uint32_t>("general.file_type").value(), 1u);
  EXPECT_EQ(f.get<uint32_t>("llama.embedding_length").value(), 8u);
  EXPECT_EQ(f.get<uint32_t>("llama.block_count").value(), 1u);
  EXPECT_EQ(f.get<uint32_t>("llama.attention.head_count").value(), 2u);
  EXPECT_EQ(f.get<uint32_t>("llama.attention.head_count_kv").value(), 2u);
  EXPECT_EQ(f.get<uint32_t>("llama.feed_forward_length").value(), 32u);
  EXPECT_EQ(f.get<uint32_t>("llama.context_length").value(), 4096u);
  EXPECT_EQ(f.get<uint32_t>("llama.rope.dimension_count").value(), 4u);
  EXPECT_EQ(f.get_array<std::string>("tokenizer.ggml.tokens").value().size(), 32000u);
}

TEST(GgufModels, RandomModelsMatchManifest) {
  const std::string dir = test::models_dir() + "/random";
  HEARTH_REQUIRE_FILE(dir + "/manifest.json");
  std::ifstream in(dir + "/manifest.json");
  auto manifest = nlohmann::json::parse(in);
  ASSERT_EQ(manifest["models"].size(), 33u);
  for (const auto& m : manifest["models"]) {
    const std::string file = m["file"];
    const std::string path = dir + "/" + file;
    HEARTH_REQUIRE_FILE(path);
    auto r = File::open(path);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    const File& f = *r;
    SCOPED_TRACE(file);
    const std::string arch = m["arch"];
    EXPECT_EQ(f.architecture(), arch);
    EXPECT_EQ(f.file_size(), m["bytes"].get<size_t>());

    std::map<std::string, int> want_counts;
    for (auto& [type, n] : m["tensor_type_counts"].items()) want_counts[type] = n.get<int>();
    EXPECT_EQ(type_counts(f), want_counts);
    EXPECT_EQ(f.tensors().size(), m["tensor_types"].size());
    for (auto& [name, type] : m["tensor_types"].items()) {
      const TensorInfo* t = f.find_tensor(name);
      ASSERT_NE(t, nullptr) << name;
      EXPECT_EQ(dtype_name(t->type), type.get<std::string>()) << name;
    }

    const auto& hp = m["hparams"];
    EXPECT_EQ(f.get<int64_t>(arch + ".block_count").value(), hp["n_layer"].get<int64_t>());
    EXPECT_EQ(f.get<int64_t>(arch + ".embedding_length").value(), hp["n_embd"].get<int64_t>());
    EXPECT_EQ(f.get<int64_t>(arch + ".context_length").value(), hp["n_ctx_train"].get<int64_t>());
    EXPECT_EQ(f.get<int64_t>(arch + ".feed_forward_length").value(), hp["n_ff"].get<int64_t>());
    EXPECT_EQ(f.get<int64_t>(arch + ".attention.head_count").value(), hp["n_head"].get<int64_t>());
    EXPECT_EQ(f.get_or<int64_t>(arch + ".attention.head_count_kv", hp["n_head"].get<int64_t>()),
              hp["n_head_kv"].get<int64_t>());
    if (hp.contains("rope_base")) {
      EXPECT_FLOAT_EQ(f.get_or<float>(arch + ".rope.freq_base", 10000.0f), hp["rope_base"].get<float>());
    }
    const int64_t n_vocab = hp["n_vocab"];
    EXPECT_EQ(static_cast<int64_t>(f.get_array<std::string>("tokenizer.ggml.tokens").value().size()), n_vocab);
    const TensorInfo* embd = f.find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->shape, (std::vector<int64_t>{hp["n_embd"].get<int64_t>(), n_vocab}));

    const auto& vocab = m["vocab"];
    EXPECT_EQ(f.get<std::string>("tokenizer.ggml.model").value(), vocab["tokenizer_model"].get<std::string>());
    if (vocab["tokenizer_pre"].is_null()) {
      EXPECT_FALSE(f.has("tokenizer.ggml.pre"));
    } else {
      EXPECT_EQ(f.get<std::string>("tokenizer.ggml.pre").value(), vocab["tokenizer_pre"].get<std::string>());
    }
  }
}

TEST(GgufModels, VocabFilesMatchReadme) {
  struct Row {
    const char* file;
    size_t bytes;
    const char* model;
    const char* pre;
    size_t tokens;
    size_t merges;
  };
  const Row rows[] = {
      {"ggml-vocab-llama-spm.gguf", 723869, "llama", "default", 32000, 0},
      {"ggml-vocab-gpt-2.gguf", 1766807, "gpt2", "gpt-2", 50257, 50000},
      {"ggml-vocab-bert-bge.gguf", 627549, "bert", "bert-bge", 30522, 0},
      {"ggml-vocab-deepseek-llm.gguf", 3970167, "gpt2", "deepseek-llm", 102400, 99757},
      {"ggml-vocab-falcon.gguf", 2287728, "gpt2", "falcon", 65024, 64784},
  };
  for (const auto& row : rows) {
    const std::string path = test::vocab_dir() + "/" + row.file;
    HEARTH_REQUIRE_FILE(path);
    SCOPED_TRACE(row.file);
    auto r = File::open(path);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->file_size(), row.bytes);
    EXPECT_TRUE(r->tensors().empty());
    EXPECT_EQ(r->get<std::string>("tokenizer.ggml.model").value(), row.model);
    EXPECT_EQ(r->get<std::string>("tokenizer.ggml.pre").value(), row.pre);
    EXPECT_EQ(r->get_array<std::string>("tokenizer.ggml.tokens").value().size(), row.tokens);
    if (row.merges > 0) {
      EXPECT_EQ(r->get_array<std::string>("tokenizer.ggml.merges").value().size(), row.merges);
    }
  }
}

TEST(GgufModels, OpenMissingFileIsNotFound) {
  auto r = File::open(test::make_temp_dir() + "/absent.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(r.error().message.find("absent.gguf"), std::string::npos);
}

}  // namespace
}  // namespace hearth::gguf
