// Long prompts must not need memory that grows with n^2: prefill runs in fixed micro-batches and
// its attention in flash tiles (online softmax, no n x n score matrix), so the forward pass's
// scratch after a long prompt is that of a short one plus the per-thread block pointer tables
// (two pointers per 16-token KV block).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_paths.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "util/thread_pool.h"

namespace hearth::model {
namespace {

TEST(PrefillScratch, GrowsOnlyByBlockPointersWithThePromptLength) {
  const std::string path = test::models_dir() + "/random/llama-F32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  // One thread: with several, which threads happen to run an attention item (and so hold their
  // fixed tile work space) varies from run to run.
  constexpr int kThreads = 1;
  constexpr int32_t kShort = 256, kLong = 1792;  // the random llama has 2048 positions
  ThreadPool pool(kThreads);
  auto kv = kv::KvCache::create((*m)->kv_layout(DType::kF16), 2 * (kLong / 16 + 2));
  ASSERT_TRUE(kv.ok()) << kv.error().to_string();
  ForwardPass fwd(**m, pool);
  std::vector<float> logits;
  auto prefill = [&](int32_t n) {
    const int32_t seq = kv->seq_create();
    std::vector<BatchToken> batch;
    for (int32_t i = 0; i < n; ++i) batch.push_back({i == 0 ? 1 : 2 + (i * 37) % 1100, seq, i, i == n - 1});
    const Status st = fwd.run(batch, *kv, &logits);
    EXPECT_TRUE(st.ok()) << st.error().to_string();
    kv->seq_free(seq);
    return fwd.scratch_bytes();
  };
  const size_t short_bytes = prefill(kShort);
  const size_t long_bytes = prefill(kLong);
  ASSERT_GT(short_bytes, 0u);
  // Block pointer tables: 2 pointers per 16 tokens, at most doubled by vector growth.
  const size_t allowed = 2 * 2 * sizeof(void*) * static_cast<size_t>(kLong / 16 + 1) * kThreads;
  EXPECT_LE(long_bytes, short_bytes + allowed)
      << "short " << short_bytes << " B, long " << long_bytes << " B; one n x n score matrix would be "
      << static_cast<size_t>(kLong) * kLong * sizeof(float) << " B";
  EXPECT_EQ(prefill(kLong), long_bytes);  // a second long prompt reuses everything
}

}  // namespace
}  // namespace hearth::model
