// The forward pass over a KV cache whose sliding-window layers release the blocks that fall out
// of their window (gemma3: 5 of 6 layers slide, window 32; gpt-oss: 1 of 2, window 16): the
// logits equal, bit for bit, those of a cache that keeps every block, while the sliding pool
// holds at most window + one block of the sequence and its committed memory stays flat.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "common/test_paths.h"
#include "model/golden_support.h"

namespace hearth::test {
namespace {

struct Run {
  std::vector<std::vector<float>> logits;  // the prompt's last position, then each decode step
  int32_t max_sliding_blocks = 0;
  size_t sliding_committed_after_warmup = 0;
  size_t sliding_committed_at_end = 0;
};

Run run_sequence(const std::string& path, bool release_sliding) {
  Run out;
  auto m = model::Model::load(path);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  if (!m.ok()) return out;
  ThreadPool pool(2);
  kv::KvCacheOptions options;
  options.pool.background_commit = false;
  if (release_sliding) options.sliding = (*m)->kv_sliding();
  auto kv = kv::KvCache::create((*m)->kv_layout(DType::kF16), 16, options);
  EXPECT_TRUE(kv.ok()) << kv.error().to_string();
  if (!kv.ok()) return out;
  EXPECT_EQ(kv->has_sliding_pool(), release_sliding);
  model::ForwardPass forward(**m, pool);
  const int32_t seq = kv->seq_create();
  const int32_t n_vocab = (*m)->hparams().n_vocab;
  std::vector<model::BatchToken> batch;
  for (int32_t p = 0; p < 40; ++p) batch.push_back({(p * 7 + 3) % n_vocab, seq, p, p == 39});
  std::vector<float> logits;
  for (int32_t p = 40; p <= 240; ++p) {
    const Status st = forward.run(batch, *kv, &logits, nullptr);
    EXPECT_TRUE(st.ok()) << st.error().to_string();
    if (!st.ok()) return out;
    out.logits.push_back(logits);
    const kv::KvCacheStats stats = kv->stats();
    out.max_sliding_blocks = std::max(out.max_sliding_blocks, stats.sliding.blocks_used);
    if (p == 80) out.sliding_committed_after_warmup = stats.sliding.committed_bytes;
    out.sliding_committed_at_end = stats.sliding.committed_bytes;
    // Teacher-forced continuation: the next token is the argmax (a real decode loop).
    const int32_t next = argmax(logits.data(), n_vocab);
    batch = {{next, seq, p, true}};
  }
  return out;
}

void check_model(const std::string& stem) {
  const std::string path = next_model_path_for_stem(stem);
  HEARTH_REQUIRE_FILE(path);
  auto m = model::Model::load(path);
  ASSERT_TRUE(m.ok());
  const int32_t window = (*m)->hparams().sliding_window;
  ASSERT_GT(window, 0);
  const Run kept = run_sequence(path, false);
  const Run released = run_sequence(path, true);
  ASSERT_EQ(kept.logits.size(), released.logits.size());
  for (size_t i = 0; i < kept.logits.size(); ++i) {
    ASSERT_EQ(kept.logits[i], released.logits[i]) << stem << " step " << i;
  }
  // Window + one block (+1: the window rarely starts on a block boundary).
  EXPECT_LE(released.max_sliding_blocks, window / 16 + 2) << stem;
  EXPECT_GT(released.sliding_committed_at_end, 0u);
  EXPECT_EQ(released.sliding_committed_at_end, released.sliding_committed_after_warmup) << stem;
}

TEST(SlidingWindowKv, Gemma3ReleasesOutOfWindowBlocksWithIdenticalLogits) { check_model("gemma3-F32"); }

TEST(SlidingWindowKv, GptOssReleasesOutOfWindowBlocksWithIdenticalLogits) { check_model("gpt-oss-Q8_0"); }

}  // namespace
}  // namespace hearth::test
