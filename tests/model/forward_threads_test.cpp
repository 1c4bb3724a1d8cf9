// The forward pass gives bit-identical logits whatever the thread count: attention splits a
// batch over (token, head range) pairs so that a one-token decode step uses every thread, and
// each head's arithmetic must not depend on how heads are grouped. Checked on models with GQA
// (llama), soft-capping and sliding windows (gemma2), and per-head Q/K norms (qwen3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "util/thread_pool.h"

namespace hearth::model {
namespace {

TEST(AttentionSplit, GivesEveryThreadWorkForShortBatches) {
  EXPECT_EQ(attention_head_chunks(1, 32, 16), 16);  // decode: heads spread over all threads
  EXPECT_EQ(attention_head_chunks(1, 4, 16), 4);    // at most one chunk per head
  EXPECT_EQ(attention_head_chunks(3, 32, 8), 3);    // ceil(8 / 3) chunks per token
  EXPECT_EQ(attention_head_chunks(2, 4, 3), 2);
  EXPECT_EQ(attention_head_chunks(16, 32, 16), 1);  // enough tokens: one chunk each
  EXPECT_EQ(attention_head_chunks(100, 32, 4), 1);
  EXPECT_EQ(attention_head_chunks(1, 32, 1), 1);    // one thread: nothing to split
  EXPECT_EQ(attention_head_chunks(1, 1, 8), 1);
}

// How far logits `got` are from `want` (same size): the largest difference, and want's RMS
// to judge it against.
struct Difference {
  double max_abs = 0, rms_want = 0;
};
Difference difference(const std::vector<float>& want, const std::vector<float>& got) {
  Difference d;
  double sq = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    sq += static_cast<double>(want[i]) * want[i];
    d.max_abs = std::max(d.max_abs, static_cast<double>(std::fabs(want[i] - got[i])));
  }
  d.rms_want = std::sqrt(sq / static_cast<double>(want.size()));
  return d;
}

// Prompt logits (every position) then logits of 4 single-token decode steps.
std::vector<float> run_with_threads(const Model& m, int threads, const std::vector<int32_t>& prompt) {
  ThreadPool pool(threads);
  auto kv = kv::KvCache::create(m.kv_layout(DType::kF16), 4);
  EXPECT_TRUE(kv.ok());
  const int32_t seq = kv->seq_create();
  ForwardPass fwd(m, pool);
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], seq, static_cast<int32_t>(i), true});
  std::vector<float> all, step;
  auto st = fwd.run(batch, *kv, &all);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  for (int i = 0; i < 4; ++i) {
    const BatchToken t{prompt[static_cast<size_t>(i)] + 7, seq, static_cast<int32_t>(prompt.size()) + i, true};
    st = fwd.run(std::span<const BatchToken>(&t, 1), *kv, &step);
    EXPECT_TRUE(st.ok()) << st.error().to_string();
    all.insert(all.end(), step.begin(), step.end());
  }
  return all;
}

TEST(ForwardThreads, DecodeLogitsAreBitIdenticalForAnyThreadCount) {
  // 40 prompt tokens: longer than the random gemma2's sliding window (32), so the window is
  // active in the prompt and during decode.
  std::vector<int32_t> prompt = {1};
  for (int32_t i = 1; i < 40; ++i) prompt.push_back(2 + (i * 37) % 1100);
  for (const char* stem : {"llama-F32", "gemma2-F32", "qwen3-Q8_0"}) {
    const std::string path = test::models_dir() + "/random/" + stem + ".gguf";
    HEARTH_REQUIRE_FILE(path);
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    const std::vector<float> one = run_with_threads(**m, 1, prompt);
    for (int threads : {2, 3, 4}) {
      const std::vector<float> many = run_with_threads(**m, threads, prompt);
      ASSERT_EQ(many.size(), one.size());
      EXPECT_EQ(std::memcmp(many.data(), one.data(), one.size() * sizeof(float)), 0)
          << stem << ": " << threads << " threads";
    }
  }
}

// A decode step over more than kAttentionKeyPart keys is split by keys and merged: its logits
// agree with the same token's logits from a prefill (the flash tile path) within F16 rounding,
// and stay bit-identical whatever the thread count.
TEST(ForwardThreads, LongDecodeSplitByKeysMatchesPrefill) {
  const std::string path = test::models_dir() + "/random/llama-F32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const int32_t n = kAttentionKeyPart + 77;
  std::vector<BatchToken> batch;
  for (int32_t i = 0; i < n; ++i) batch.push_back({i == 0 ? 1 : 2 + (i * 37) % 1100, 0, i, i == n - 1});
  auto last_logits = [&](int threads, bool split_last) {
    ThreadPool pool(threads);
    auto kv = kv::KvCache::create((*m)->kv_layout(DType::kF16), n / 16 + 2);
    EXPECT_TRUE(kv.ok());
    const int32_t seq = kv->seq_create();
    EXPECT_EQ(seq, 0);
    ForwardPass fwd(**m, pool);
    std::vector<float> out;
    std::span<const BatchToken> all(batch);
    if (!split_last) {
      EXPECT_TRUE(fwd.run(all, *kv, &out).ok());
      return out;
    }
    EXPECT_TRUE(fwd.run(all.first(static_cast<size_t>(n - 1)), *kv, &out).ok());
    EXPECT_TRUE(fwd.run(all.last(1), *kv, &out).ok());
    return out;
  };
  const std::vector<float> prefill = last_logits(2, false);
  const std::vector<float> decode = last_logits(1, true);
  ASSERT_EQ(prefill.size(), decode.size());
  ASSERT_FALSE(decode.empty());
  const Difference d = difference(prefill, decode);
  EXPECT_LT(d.max_abs, 1e-2 * d.rms_want) << "rms " << d.rms_want;
  const std::vector<float> decode3 = last_logits(3, true);
  EXPECT_EQ(std::memcmp(decode3.data(), decode.data(), decode.size() * sizeof(float)), 0);
}

// Two sequences decoding in one batch, one long enough to split by keys: the threads alternate
// between their items (and block tables, which attend() builds once per thread, call and
// sequence), and in each of two steps each sequence's logits match the same step taken alone.
TEST(ForwardThreads, SequencesInOneDecodeBatchMatchTheirStepsAlone) {
  const std::string path = test::models_dir() + "/random/llama-F32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const int32_t lengths[2] = {kAttentionKeyPart + 45, 300};
  auto token = [](int32_t s, int32_t i) { return i == 0 ? 1 : 2 + (i * (37 + 6 * s)) % 1100; };
  // Prefills the sequences in `seqs`, then takes two decode steps with all of them in each
  // batch; returns each step's logits, sequence by sequence.
  auto decode = [&](const std::vector<int32_t>& seqs) {
    ThreadPool pool(3);
    auto kv = kv::KvCache::create((*m)->kv_layout(DType::kF16), (lengths[0] + lengths[1]) / 16 + 8);
    EXPECT_TRUE(kv.ok());
    ForwardPass fwd(**m, pool);
    std::vector<int32_t> ids;
    std::vector<float> out;
    for (int32_t s : seqs) {
      ids.push_back(kv->seq_create());
      std::vector<BatchToken> prompt;
      for (int32_t i = 0; i < lengths[s]; ++i) prompt.push_back({token(s, i), ids.back(), i, false});
      EXPECT_TRUE(fwd.run(prompt, *kv, &out).ok());
    }
    std::vector<std::vector<float>> logits(2);
    for (int32_t step = 0; step < 2; ++step) {
      std::vector<BatchToken> batch;
      for (size_t k = 0; k < seqs.size(); ++k) {
        batch.push_back({token(seqs[k], lengths[seqs[k]] + step), ids[k], lengths[seqs[k]] + step, true});
      }
      EXPECT_TRUE(fwd.run(batch, *kv, &out).ok());
      const size_t vocab = out.size() / seqs.size();
      for (size_t k = 0; k < seqs.size(); ++k) {
        logits[static_cast<size_t>(seqs[k])].insert(logits[static_cast<size_t>(seqs[k])].end(),
                                                    out.begin() + static_cast<std::ptrdiff_t>(k * vocab),
                                                    out.begin() + static_cast<std::ptrdiff_t>((k + 1) * vocab));
      }
    }
    return logits;
  };
  const auto both = decode({0, 1});
  for (int32_t s = 0; s < 2; ++s) {
    const auto alone = decode({s});
    const std::vector<float>& want = alone[static_cast<size_t>(s)];
    const std::vector<float>& got = both[static_cast<size_t>(s)];
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    const Difference d = difference(want, got);
    EXPECT_LT(d.max_abs, 1e-4 * d.rms_want) << "sequence " << s;
  }
}

}  // namespace
}  // namespace hearth::model
