// RoPE scaling end to end against llama.cpp: stories260K (trained on short stories with its own
// RoPE) rewritten with rope-scaling metadata, YaRN (factor 4 over an original context of 128)
// and linear (factor 2), reads the stories evaluation text in 512-token chunks, so most
// positions lie past the original context where the scaling changes every rotation. The
// chunked perplexity must match llama-perplexity's on the same files (recorded below) within
// the tolerance of the unscaled reference test; the unscaled model's perplexity over the same
// chunks is far from both, so a scaling that were ignored or wrong could not pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/test_paths.h"
#include "engine/generation.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "util/file_io.h"

namespace hearth::engine {
namespace {

// A copy of the GGUF at src with extra (or replaced) metadata.
Status copy_with_metadata(const std::string& src, const std::string& dst,
                          const std::vector<std::pair<std::string, gguf::Value>>& extra) {
  HEARTH_ASSIGN(gguf::File f, gguf::File::open(src));
  gguf::Writer w(f.alignment());
  for (const gguf::KeyValue& kv : f.metadata()) w.set(kv.key, kv.value);
  for (const auto& [key, value] : extra) w.set(key, value);
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::string bytes(t.size_bytes, '\0');
    HEARTH_TRY(f.read_bytes(t.data, t.size_bytes, bytes.data()));
    HEARTH_TRY(w.add_tensor(t.name, t.type, t.shape, bytes));
  }
  return w.write(dst);
}

Result<double> chunked_ppl(const std::string& model, const std::vector<int32_t>& tokens) {
  ContextOptions o;
  o.n_threads = 2;
  o.n_ctx = 512;
  o.gpu_layers = 0;
  HEARTH_ASSIGN(auto ctx, InferenceContext::load(model, o));
  HEARTH_ASSIGN(PerplexityResult r, perplexity(*ctx, tokens, 512));
  return r.ppl;
}

struct Scaled {
  const char* name;
  std::vector<std::pair<std::string, gguf::Value>> metadata;
  double llama_cpp_ppl;  // llama-perplexity -c 512 -b 512 -t 2 on the same file (llama.cpp June 2025)
};

TEST(RopeScaling, YarnAndLinearMatchLlamaCpp) {
  const std::string stories = test::models_dir() + "/stories260K-llama-f32.gguf";
  const std::string eval = test::reference_dir() + "/stories-eval.txt";
  HEARTH_REQUIRE_FILE(stories);
  HEARTH_REQUIRE_FILE(eval);
  auto text = read_file(eval);
  ASSERT_TRUE(text.ok());
  std::vector<int32_t> tokens;
  {
    auto ctx = InferenceContext::load(stories, ContextOptions{});
    ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
    tokens = (*ctx)->tokenizer().encode(*text, true, false);
  }
  auto plain = chunked_ppl(stories, tokens);
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  std::printf("[rope] none: ppl %.4f\n", *plain);
  EXPECT_NEAR(*plain, 5.2614, 0.01);  // llama-perplexity -c 512 on the file as shipped

  const std::vector<Scaled> cases = {
      {"yarn",
       {{"llama.rope.scaling.type", gguf::Value("yarn")},
        {"llama.rope.scaling.factor", gguf::Value(4.0f)},
        {"llama.rope.scaling.original_context_length", gguf::Value(uint32_t{128})}},
       6.9577},
      {"linear", {{"llama.rope.scaling.type", gguf::Value("linear")}, {"llama.rope.scaling.factor", gguf::Value(2.0f)}},
       14.9935},
  };
  const std::string dir = test::make_temp_dir();
  for (const Scaled& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir + "/stories-" + c.name + ".gguf";
    ASSERT_TRUE(copy_with_metadata(stories, path, c.metadata).ok());
    auto ppl = chunked_ppl(path, tokens);
    ASSERT_TRUE(ppl.ok()) << ppl.error().to_string();
    std::printf("[rope] %s: ppl %.4f (llama.cpp %.4f)\n", c.name, *ppl, c.llama_cpp_ppl);
    EXPECT_NEAR(*ppl, c.llama_cpp_ppl, 0.01);
    EXPECT_GT(std::fabs(*ppl - *plain), 0.1);  // the scaling matters at these positions
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hearth::engine
