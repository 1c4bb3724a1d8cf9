// The accuracy cost of each KV cache type, bounded: the random llama (head size 64, GQA) reads
// the first tokens of the stories evaluation text with an F16 cache and with F32, BF16, Q8_0 and
// Q4_0 caches; each type's next-token distributions stay within a KL and top-1 bound of the F16
// cache's, and the coarser the type, the larger its error (so a type that silently fell back
// to F16 fails). A model whose heads are not a multiple of 32 refuses a quantized cache, and
// takes a BF16 one (pairs need only even head sizes).
#include <gtest/gtest.h>

#include <cstdio>

#include "common/test_paths.h"
#include "engine/kv_accuracy.h"
#include "util/file_io.h"

namespace hearth::engine {
namespace {

struct Bound {
  DType type;
  double max_mean_kl;
  double min_top1;
};

// The first n tokens of the stories evaluation text in the model's vocabulary (empty, with a
// failure recorded, when the files are missing or the text is shorter).
std::vector<int32_t> text_tokens(const std::string& model, size_t n, const ContextOptions& o) {
  const std::string text_path = test::reference_dir() + "/stories-eval.txt";
  auto text = read_file(text_path);
  auto ctx = InferenceContext::load(model, o);
  if (!text.ok() || !ctx.ok()) {
    ADD_FAILURE() << "cannot read " << text_path << " or load " << model;
    return {};
  }
  std::vector<int32_t> tokens = (*ctx)->tokenizer().encode(*text, true, false);
  if (tokens.size() <= n) {
    ADD_FAILURE() << "the text has only " << tokens.size() << " tokens";
    return {};
  }
  tokens.resize(n);
  return tokens;
}

TEST(KvAccuracy, EachTypeStaysWithinItsBoundOfF16) {
  const std::string model = test::models_dir() + "/random/llama-F32.gguf";
  HEARTH_REQUIRE_FILE(model);
  HEARTH_REQUIRE_FILE(test::reference_dir() + "/stories-eval.txt");
  ContextOptions o;
  o.n_threads = 2;
  const std::vector<int32_t> tokens = text_tokens(model, 96, o);
  ASSERT_EQ(tokens.size(), 96u);

  const std::vector<Bound> bounds = {
      {DType::kF32, 1e-5, 0.99}, {DType::kBF16, 4e-4, 0.94}, {DType::kQ8_0, 2e-3, 0.95}, {DType::kQ4_0, 0.25, 0.6}};
  std::vector<DType> types;
  for (const Bound& b : bounds) types.push_back(b.type);
  auto r = kv_accuracy(model, tokens, types, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->size(), bounds.size());
  for (size_t i = 0; i < bounds.size(); ++i) {
    const KvAccuracy& a = (*r)[i];
    SCOPED_TRACE(std::string(dtype_name(a.type)));
    std::printf("%s: mean KL %.3g, max KL %.3g, top-1 %.4f, max logit error %.3g, ppl %.4f (F16 %.4f)\n",
                std::string(dtype_name(a.type)).c_str(), a.mean_kl, a.max_kl, a.top1_agreement, a.max_logit_error, a.ppl,
                a.ppl_f16);
    EXPECT_EQ(a.n_positions, 95);
    EXPECT_LE(a.mean_kl, bounds[i].max_mean_kl);
    EXPECT_GE(a.top1_agreement, bounds[i].min_top1);
    EXPECT_GT(a.max_logit_error, 0.0);  // the cache type really changed the arithmetic
  }
  // F32 < BF16 (8 significant bits per value) < Q8_0 (8 bits per value, the scale per block) < Q4_0
  EXPECT_LT((*r)[0].mean_kl, (*r)[1].mean_kl);
  EXPECT_LT((*r)[1].mean_kl, (*r)[2].mean_kl);
  EXPECT_LT((*r)[2].mean_kl, (*r)[3].mean_kl);
}

// stories260K (trained weights, head size 8) with a BF16 cache: the text's perplexity within
// 0.5% of the F16 cache's, the distributions within a KL bound.
TEST(KvAccuracy, Bf16CacheOnATrainedModel) {
  const std::string model = test::models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(model);
  HEARTH_REQUIRE_FILE(test::reference_dir() + "/stories-eval.txt");
  ContextOptions o;
  o.n_threads = 2;
  const std::vector<int32_t> tokens = text_tokens(model, 256, o);
  ASSERT_EQ(tokens.size(), 256u);
  auto r = kv_accuracy(model, tokens, {DType::kBF16}, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const KvAccuracy& a = r->front();
  std::printf("BF16: mean KL %.3g, top-1 %.4f, ppl %.4f (F16 %.4f)\n", a.mean_kl, a.top1_agreement, a.ppl, a.ppl_f16);
  EXPECT_LE(a.mean_kl, 1e-3);
  EXPECT_GE(a.top1_agreement, 0.97);
  EXPECT_NEAR(a.ppl, a.ppl_f16, 0.005 * a.ppl_f16);
  EXPECT_GT(a.max_logit_error, 0.0);
}

TEST(KvAccuracy, QuantizedCacheNeedsHeadsOfWholeBlocks) {
  const std::string model = test::models_dir() + "/stories260K-llama-f32.gguf";  // head size 8
  HEARTH_REQUIRE_FILE(model);
  for (DType type : {DType::kQ8_0, DType::kQ4_0}) {
    ContextOptions o;
    o.n_threads = 1;
    o.n_ctx = 64;
    o.kv_type = type;
    auto ctx = InferenceContext::load(model, o);
    ASSERT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_NE(ctx.error().message.find("multiples of 32"), std::string::npos) << ctx.error().message;
  }
}

}  // namespace
}  // namespace hearth::engine
