// The tokenizer against outside references: llama.cpp's 46 test strings for the five vocab
// GGUFs and the six compact random-model vocabularies, and the "tokens" of every golden in
// shared/reference (add_special = true, parse_special = false). Every case must match exactly.
#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace hearth {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// .inp: each case followed by "\n__ggml_vocab_test__\n"; .out: one line of " id id ..." per case.
struct VectorCase {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<VectorCase> read_vectors(const std::string& gguf_path) {
  static const std::string kSep = "\n__ggml_vocab_test__\n";
  const std::string inp = slurp(gguf_path + ".inp");
  std::vector<VectorCase> cases;
  size_t pos = 0;
  while (true) {
    const size_t hit = inp.find(kSep, pos);
    if (hit == std::string::npos) break;
    cases.push_back({inp.substr(pos, hit - pos), {}});
    pos = hit + kSep.size();
  }
  std::istringstream out(slurp(gguf_path + ".out"));
  std::string line;
  for (size_t i = 0; i < cases.size() && std::getline(out, line); ++i) {
    std::istringstream ls(line);
    int32_t id = 0;
    while (ls >> id) cases[i].ids.push_back(id);
  }
  return cases;
}

std::string escaped(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else o.push_back(static_cast<char>(c));
  }
  return o;
}

// Returns how many of the cases match; reports each mismatch.
size_t check_vectors(const std::string& gguf_path, const std::string& vectors_path) {
  auto file = gguf::File::open(gguf_path);
  EXPECT_TRUE(file.ok()) << (file.ok() ? "" : file.error().to_string());
  if (!file.ok()) return 0;
  auto tok = Tokenizer::from_gguf(file.value());
  EXPECT_TRUE(tok.ok()) << (tok.ok() ? "" : tok.error().to_string());
  if (!tok.ok()) return 0;
  const auto cases = read_vectors(vectors_path);
  EXPECT_EQ(cases.size(), 46u) << vectors_path;
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = tok->encode(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
    if (got == cases[i].ids) {
      ++passed;
    } else {
      std::string g, w;
      for (auto id : got) g += " " + std::to_string(id);
      for (auto id : cases[i].ids) w += " " + std::to_string(id);
      ADD_FAILURE() << vectors_path << " case " << i << " '" << escaped(cases[i].text) << "'\n  got: " << g
                    << "\n want: " << w;
    }
  }
  std::printf("[ vectors  ] %s: %zu/%zu\n", vectors_path.c_str(), passed, cases.size());
  return passed;
}

class VocabVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabVectors, All46CasesMatch) {
  const std::string path = test::vocab_dir() + "/ggml-vocab-" + GetParam() + ".gguf";
  HEARTH_REQUIRE_FILE(path);
  HEARTH_REQUIRE_FILE(path + ".inp");
  EXPECT_EQ(check_vectors(path, path), 46u);
}

INSTANTIATE_TEST_SUITE_P(SharedVocab, VocabVectors,
                         ::testing::Values("llama-spm", "gpt-2", "bert-bge", "deepseek-llm", "falcon"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

class CompactVocabVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(CompactVocabVectors, All46CasesMatch) {
  const std::string model = test::models_dir() + "/random/" + GetParam() + "-F32.gguf";
  const std::string vectors = test::reference_dir() + "/tokenizer/" + GetParam() + "-F32.gguf";
  HEARTH_REQUIRE_FILE(model);
  HEARTH_REQUIRE_FILE(vectors + ".inp");
  EXPECT_EQ(check_vectors(model, vectors), 46u);
}

INSTANTIATE_TEST_SUITE_P(RandomModels, CompactVocabVectors,
                         ::testing::Values("llama", "qwen2", "qwen3", "gemma2", "phi3", "bert"));

// The o200k vocabulary of gpt-oss (compacted), from shared/next.
TEST(NextModels, GptOssVectorsMatch) {
  const std::string model = test::shared_dir() + "/next/models/gpt-oss-F32.gguf";
  const std::string vectors = test::shared_dir() + "/next/reference/tokenizer/gpt-oss-F32.gguf";
  HEARTH_REQUIRE_FILE(model);
  HEARTH_REQUIRE_FILE(vectors + ".inp");
  EXPECT_EQ(check_vectors(model, vectors), 46u);
  // Harmony's end of generation: <|return|>, <|call|>, <|endoftext|>; not <|end|>, which only
  // closes a message.
  auto file = gguf::File::open(model);
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::from_gguf(file.value());
  ASSERT_TRUE(tok.ok());
  for (int32_t id : {1007, 1017, 1004}) EXPECT_TRUE(tok->is_eog(id)) << id;
  for (int32_t id : {1012, 1010, 1013, 42}) EXPECT_FALSE(tok->is_eog(id)) << id;
}

// The prompt tokens of the shared/next goldens (qwen3moe and gemma3 reuse the qwen3 and gemma2
// vocabularies; gpt-oss brings o200k).
TEST(NextModels, GoldenPromptTokensMatch) {
  for (const char* stem : {"qwen3moe-F32", "gemma3-F32", "gpt-oss-F32"}) {
    const std::string model = test::shared_dir() + "/next/models/" + stem + ".gguf";
    HEARTH_REQUIRE_FILE(model);
    auto file = gguf::File::open(model);
    ASSERT_TRUE(file.ok()) << file.error().to_string();
    auto tok = Tokenizer::from_gguf(file.value());
    ASSERT_TRUE(tok.ok()) << tok.error().to_string();
    for (const char* slug : {"once-upon-a-time", "capital-of-france", "mixed-paragraph", "unicode"}) {
      const std::string path = test::shared_dir() + "/next/reference/" + stem + "/" + slug + ".json";
      HEARTH_REQUIRE_FILE(path);
      const auto golden = nlohmann::json::parse(slurp(path));
      EXPECT_EQ(tok->encode(golden.at("prompt").get<std::string>(), true, false),
                golden.at("tokens").get<std::vector<int32_t>>())
          << stem << " / " << slug;
    }
  }
}

// Every golden's prompt tokens, for every model directory under reference/.
TEST(ReferenceGoldens, PromptTokensMatch) {
  const std::string ref = test::reference_dir();
  HEARTH_REQUIRE_FILE(ref + "/summary.json");
  DIR* dir = opendir(ref.c_str());
  ASSERT_NE(dir, nullptr);
  std::vector<std::string> model_dirs;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name == "prompts" || name == "tokenizer") continue;
    if (test::file_exists(ref + "/" + name + "/once-upon-a-time.json")) model_dirs.push_back(name);
  }
  closedir(dir);
  ASSERT_GE(model_dirs.size(), 35u);
  size_t checked = 0;
  for (const std::string& stem : model_dirs) {
    std::string model = test::models_dir() + "/" + stem + ".gguf";
    if (!test::file_exists(model)) model = test::models_dir() + "/random/" + stem + ".gguf";
    HEARTH_REQUIRE_FILE(model);
    auto file = gguf::File::open(model);
    ASSERT_TRUE(file.ok()) << file.error().to_string();
    auto tok = Tokenizer::from_gguf(file.value());
    ASSERT_TRUE(tok.ok()) << tok.error().to_string();
    for (const char* slug : {"once-upon-a-time", "capital-of-france", "mixed-paragraph", "unicode"}) {
      const std::string path = ref + "/" + stem + "/" + slug + ".json";
      if (!test::file_exists(path)) continue;
      const auto golden = nlohmann::json::parse(slurp(path));
      const auto want = golden.at("tokens").get<std::vector<int32_t>>();
      const auto got = tok->encode(golden.at("prompt").get<std::string>(), true, false);
      EXPECT_EQ(got, want) << stem << " / " << slug;
      ++checked;
    }
  }
  std::printf("[ goldens  ] %zu prompt tokenizations checked over %zu models\n", checked, model_dirs.size());
  EXPECT_GE(checked, 4 * model_dirs.size());
}

}  // namespace
}  // namespace hearth
