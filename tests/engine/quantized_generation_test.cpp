// Models made by Hearth's quantizer run: the random llama F16 model quantized to each type
// generates greedily, and the F32 model quantized to Q4_K_M generates exactly what
// llama-quantize's Q4_K_M file generates (the bytes are the same, so the tokens must be).
#include <gtest/gtest.h>

#include "common/test_paths.h"
#include "engine/generation.h"
#include "gguf/gguf_quantizer.h"

namespace hearth::engine {
namespace {

std::string random_llama(const std::string& type) { return test::models_dir() + "/random/llama-" + type + ".gguf"; }

Result<std::vector<int32_t>> greedy_tokens(const std::string& path) {
  ContextOptions o;
  o.n_ctx = 128;
  o.n_threads = 2;
  HEARTH_ASSIGN(auto ctx, InferenceContext::load(path, o));
  GenerateOptions g;
  g.n_predict = 12;
  g.sampling.temperature = 0;
  g.stop_at_eog = false;
  HEARTH_ASSIGN(auto r, generate(*ctx, "Once upon a time", g));
  return r.tokens;
}

TEST(QuantizedGeneration, EveryTypeGeneratesAndQ4KMMatchesLlamaQuantize) {
  HEARTH_REQUIRE_FILE(random_llama("F16"));
  HEARTH_REQUIRE_FILE(random_llama("F32"));
  HEARTH_REQUIRE_FILE(random_llama("Q4_K_M"));
  const std::string dir = test::make_temp_dir();
  for (const char* type : {"F16", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"}) {
    const std::string out = dir + "/" + type + ".gguf";
    auto q = gguf::quantize_gguf_file(random_llama("F16"), out, *gguf::quantize_type_from_name(type), 2, nullptr);
    ASSERT_TRUE(q.ok()) << type << ": " << q.error().to_string();
    auto tokens = greedy_tokens(out);
    ASSERT_TRUE(tokens.ok()) << type << ": " << tokens.error().to_string();
    EXPECT_EQ(tokens->size(), 12u) << type;
  }
  const std::string mine = dir + "/from-f32-Q4_K_M.gguf";
  ASSERT_TRUE(gguf::quantize_gguf_file(random_llama("F32"), mine, gguf::FileType::kQ4_K_M, 2, nullptr).ok());
  auto a = greedy_tokens(mine);
  auto b = greedy_tokens(random_llama("Q4_K_M"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

}  // namespace
}  // namespace hearth::engine
