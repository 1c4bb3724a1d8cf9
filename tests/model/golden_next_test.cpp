// The forward pass against the goldens of the newer architectures (shared/next: qwen3moe,
// gemma3, gpt-oss), with the same checks and tolerances as golden_test.cpp, once per CPU
// variant. MoE goldens also record llama.cpp's expert choice at every layer and position
// (moe_router): the test checks that Hearth's router picks the same experts wherever
// llama.cpp's gap between the k-th and (k+1)-th score is not a near-tie, and imposes
// llama.cpp's choice where it differs, so a near-tie (a discontinuity worth about one sigma in
// the logits) does not hide how close the rest of the computation is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/test_paths.h"
#include "kernels/cpu_features.h"
#include "model/golden_support.h"

namespace hearth::test {
namespace {

// The newer architectures' goldens (the llama IQ4 ones run with the llama goldens in
// golden_test.cpp: next_golden_stems()).
const char* const kStems[] = {"qwen3moe-F32", "qwen3moe-Q8_0", "qwen3moe-Q4_K_M", "gemma3-F32",
                              "gemma3-Q8_0",  "gemma3-Q4_K_M", "gpt-oss-F32",     "gpt-oss-Q8_0",
                              "gpt-oss-Q4_K_M", "gpt-oss-MXFP4"};

// The largest llama.cpp router gap at which Hearth may choose other experts: a gap this small
// is within the difference of two correct float32 engines (the float64 cross-check in
// next/reference/README.md disagrees only at gaps up to 0.128 on quantized files, and at 0.0008
// on F32 ones; Hearth copies llama.cpp's arithmetic and stays well inside both).
double allowed_router_gap(const std::string& stem) { return stem.ends_with("F32") ? 0.002 : 0.05; }

// Compares each routed token with the golden's choice and imposes the golden's experts.
class GoldenRouter : public model::RouterObserver {
 public:
  explicit GoldenRouter(const nlohmann::json& router) {
    for (const auto& layer : router["layers"]) {
      const int32_t il = layer["layer"].get<int32_t>();
      const auto& experts = layer["experts"];
      const auto& gaps = layer["gap"];
      for (size_t pos = 0; pos < experts.size(); ++pos) {
        choices_[{il, static_cast<int32_t>(pos)}] = {experts[pos].get<std::vector<int32_t>>(), gaps[pos].get<double>()};
      }
    }
  }
  void on_route(int32_t layer, const model::BatchToken& token, std::span<const float> scores,
                std::span<int32_t> chosen) override {
    ++calls_;
    auto it = choices_.find({layer, token.pos});
    if (it == choices_.end()) {
      ++unknown_;
      return;
    }
    const auto& [want, gap] = it->second;
    std::set<int32_t> ours(chosen.begin(), chosen.end());
    if (ours == std::set<int32_t>(want.begin(), want.end()) || want.size() != chosen.size()) return;
    ++disagreements_;
    max_gap_ = std::max(max_gap_, gap);
    // The golden's experts, best first by Hearth's own scores.
    std::vector<int32_t> forced = want;
    std::stable_sort(forced.begin(), forced.end(), [&](int32_t a, int32_t b) {
      return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(b)];
    });
    std::copy(forced.begin(), forced.end(), chosen.begin());
  }
  int calls_ = 0;
  int disagreements_ = 0;
  int unknown_ = 0;
  double max_gap_ = 0.0;

 private:
  std::map<std::pair<int32_t, int32_t>, std::pair<std::vector<int32_t>, double>> choices_;
};

struct NextCase {
  std::string stem;
  kernels::CpuVariant variant;
};

std::vector<NextCase> all_cases() {
  std::vector<NextCase> cases;
  for (const char* stem : kStems) {
    for (auto v : kernels::supported_cpu_variants()) cases.push_back({stem, v});
  }
  return cases;
}

class GoldenNext : public ::testing::TestWithParam<NextCase> {};

TEST_P(GoldenNext, MatchesLlamaCpp) {
  const NextCase& c = GetParam();
  ASSERT_TRUE(kernels::set_cpu_variant_for_testing(c.variant).ok());
  HEARTH_REQUIRE_FILE(next_reference_dir() + "/summary.json");
  const std::string path = next_model_path_for_stem(c.stem);
  HEARTH_REQUIRE_FILE(path);
  auto summary = load_json(next_reference_dir() + "/summary.json");
  auto tolerances = load_json(next_reference_dir() + "/tolerances.json");
  ASSERT_TRUE(tolerances.is_object());
  auto runner = GoldenRunner::open(path, 512);
  ASSERT_NE(runner, nullptr);
  const double sigma = summary[c.stem]["logit_std"].get<double>();
  for (const char* slug : {"capital-of-france", "mixed-paragraph", "once-upon-a-time", "unicode"}) {
    const std::string file = next_reference_dir() + "/" + c.stem + "/" + slug + ".json";
    HEARTH_REQUIRE_FILE(file);
    auto g = load_json(file);
    ASSERT_TRUE(g.is_object()) << file;
    const std::string label = c.stem + "/" + slug + " [" + std::string(kernels::cpu_variant_name(c.variant)) + "]";
    std::unique_ptr<GoldenRouter> router;
    if (g.contains("moe_router")) {
      router = std::make_unique<GoldenRouter>(g["moe_router"]);
      runner->forward->set_router_observer(router.get());
    }
    check_logits_golden(*runner, g, sigma, logit_tolerance(tolerances, c.stem), label);
    runner->forward->set_router_observer(nullptr);
    if (router) {
      EXPECT_GT(router->calls_, 0) << label << ": the router was never consulted";
      EXPECT_EQ(router->unknown_, 0) << label << ": positions without a golden routing";
      EXPECT_LE(router->max_gap_, allowed_router_gap(c.stem))
          << label << ": the router chose other experts than llama.cpp where its gap was " << router->max_gap_;
      std::printf("[golden] %s router disagreements %d (largest llama.cpp gap %.5f)\n", label.c_str(),
                  router->disagreements_, router->max_gap_);
    }
  }
  (void)kernels::set_cpu_variant_for_testing(kernels::best_cpu_variant());
}

std::string case_name(const ::testing::TestParamInfo<NextCase>& info) {
  std::string name = info.param.stem + "_" + std::string(kernels::cpu_variant_name(info.param.variant));
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(NextModels, GoldenNext, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace hearth::test
