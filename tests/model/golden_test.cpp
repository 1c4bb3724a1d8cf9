// The forward pass against llama.cpp's goldens (shared/reference): for every model and prompt,
// logits at every prompt position and along the greedy continuation (teacher-forced with the
// golden tokens) within the README's tolerances, top-1 agreement wherever the golden margin
// clears the gate, and for bert the pooled embedding and per-token hidden states. Runs once
// per CPU variant this machine supports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/test_paths.h"
#include "kernels/cpu_features.h"
#include "model/golden_support.h"

namespace hearth::test {
namespace {

struct GoldenCase {
  std::string stem;
  kernels::CpuVariant variant;
};

std::vector<GoldenCase> all_cases() {
  std::vector<GoldenCase> cases;
  for (const auto& stem : golden_stems()) {
    for (auto v : kernels::supported_cpu_variants()) cases.push_back({stem, v});
  }
  return cases;
}

std::vector<std::string> golden_files(const std::string& stem) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(reference_dir() + "/" + stem, ec)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() == ".json" && name != "perplexity.json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class Golden : public ::testing::TestWithParam<GoldenCase> {};

void check_embedding_golden(GoldenRunner& r, const nlohmann::json& g, const nlohmann::json& tol,
                            const std::string& label) {
  const int32_t d = r.model->hparams().n_embd;
  std::vector<int32_t> tokens = g["tokens"].get<std::vector<int32_t>>();
  r.reset();
  std::vector<float> hidden = r.run(tokens, true);
  ASSERT_EQ(hidden.size(), tokens.size() * static_cast<size_t>(d));
  double tok_err = 0.0;
  const auto& ref_tokens = g["token_embeddings"];
  for (size_t t = 0; t < tokens.size(); ++t) {
    for (int32_t i = 0; i < d; ++i) {
      tok_err = std::max(tok_err, std::fabs(hidden[t * d + i] - ref_tokens[t][static_cast<size_t>(i)].get<double>()));
    }
  }
  std::vector<double> pooled(static_cast<size_t>(d), 0.0);
  for (size_t t = 0; t < tokens.size(); ++t) {
    for (int32_t i = 0; i < d; ++i) pooled[static_cast<size_t>(i)] += hidden[t * d + i];
  }
  double norm = 0.0;
  for (double& x : pooled) {
    x /= static_cast<double>(tokens.size());
    norm += x * x;
  }
  norm = std::sqrt(norm);
  const auto& ref = g["embedding"];
  double dot = 0.0, ref_norm = 0.0, max_err = 0.0;
  for (int32_t i = 0; i < d; ++i) {
    double ours = pooled[static_cast<size_t>(i)] / norm, theirs = ref[static_cast<size_t>(i)].get<double>();
    dot += ours * theirs;
    ref_norm += theirs * theirs;
    max_err = std::max(max_err, std::fabs(ours - theirs));
  }
  double cosine = dot / std::sqrt(ref_norm);
  EXPECT_GE(cosine, tol["min_cosine"].get<double>()) << label;
  EXPECT_LE(max_err, tol["max_abs_normalized"].get<double>()) << label;
  EXPECT_LE(tok_err, tol["max_abs_token_embeddings"].get<double>()) << label;
  std::printf("[golden] %s cosine=%.8f max_abs=%.2e token_max_abs=%.2e\n", label.c_str(), cosine, max_err, tok_err);
}

TEST_P(Golden, MatchesLlamaCpp) {
  const GoldenCase& c = GetParam();
  ASSERT_TRUE(kernels::set_cpu_variant_for_testing(c.variant).ok());
  HEARTH_REQUIRE_FILE(reference_dir() + "/summary.json");
  const std::string path = model_path_for_stem(c.stem);
  HEARTH_REQUIRE_FILE(path);
  auto summary = load_json(reference_dir() + "/summary.json");
  auto tolerances = load_json(reference_dir() + "/tolerances.json");
  ASSERT_TRUE(tolerances.is_object());
  auto files = golden_files(c.stem);
  ASSERT_FALSE(files.empty());
  auto runner = GoldenRunner::open(path, 512);
  ASSERT_NE(runner, nullptr);
  for (const auto& file : files) {
    auto g = load_json(file);
    ASSERT_TRUE(g.is_object()) << file;
    std::string label = c.stem + "/" + g["prompt_slug"].get<std::string>() + " [" +
                        std::string(kernels::cpu_variant_name(c.variant)) + "]";
    if (g["mode"] == "embedding") {
      bool quantized = c.stem.find("F32") == std::string::npos;
      check_embedding_golden(*runner, g, tolerances["embedding"][quantized ? "quantized" : "F32"], label);
    } else {
      double sigma = summary[c.stem]["logit_std"].get<double>();
      check_logits_golden(*runner, g, sigma, logit_tolerance(tolerances, c.stem), label);
    }
  }
  (void)kernels::set_cpu_variant_for_testing(kernels::best_cpu_variant());
}

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string name = info.param.stem + "_" + std::string(kernels::cpu_variant_name(info.param.variant));
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Models, Golden, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace hearth::test
