// Load-time interleaving: a model loaded with its matrices interleaved gives logits
// bit-identical to the same model loaded with GGUF rows (prompt and decode steps), for every
// weight type that has an interleaved layout; the matrices that moved are the ones the active
// kernels want interleaved, a tied output keeps sharing the token embedding, and a model parsed
// from the caller's buffer is interleaved from it without touching the buffer.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "kernels/cpu_features.h"
#include "kernels/kernel_table.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "util/file_io.h"
#include "util/thread_pool.h"

namespace hearth::model {
namespace {

std::vector<float> prompt_then_decode(const Model& m, ThreadPool& pool) {
  auto kv = kv::KvCache::create(m.kv_layout(DType::kF16), 4);
  EXPECT_TRUE(kv.ok());
  const int32_t seq = kv->seq_create();
  ForwardPass fwd(m, pool);
  std::vector<BatchToken> batch;
  for (int32_t i = 0; i < 19; ++i) batch.push_back({1 + (i * 53) % 900, seq, i, true});
  std::vector<float> all, step;
  auto st = fwd.run(batch, *kv, &all);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  for (int32_t i = 0; i < 3; ++i) {
    const BatchToken t{5 + 11 * i, seq, 19 + i, true};
    st = fwd.run(std::span<const BatchToken>(&t, 1), *kv, &step);
    EXPECT_TRUE(st.ok()) << st.error().to_string();
    all.insert(all.end(), step.begin(), step.end());
  }
  return all;
}

int interleaved_matrices(const ModelWeights& w) {
  int n = 0;
  for (const auto& L : w.layers) {
    for (const auto* v : {&L.wq, &L.wk, &L.wv, &L.wqkv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down}) {
      n += v->interleaved ? 1 : 0;
    }
  }
  return n + (w.output.interleaved ? 1 : 0);
}

// The model at path loaded twice: with GGUF rows, and interleaved by pool.
struct RowsAndInterleaved {
  std::unique_ptr<Model> rows, interleaved;
};
RowsAndInterleaved load_rows_and_interleaved(const std::string& path, ThreadPool& pool) {
  LoadOptions rows_opt;
  rows_opt.interleave = false;
  LoadOptions il_opt;
  il_opt.pool = &pool;
  auto rows = Model::load(path, rows_opt);
  auto il = Model::load(path, il_opt);
  EXPECT_TRUE(rows.ok()) << rows.error().to_string();
  EXPECT_TRUE(il.ok()) << il.error().to_string();
  if (!rows.ok() || !il.ok()) return {};
  return {std::move(rows).value(), std::move(il).value()};
}

TEST(WeightInterleaving, LogitsEqualThoseOfGgufRows) {
  ThreadPool pool(2);
  int compared = 0;
  for (const char* stem : {"llama-Q4_0", "llama-Q8_0", "llama-Q4_K_M", "llama-Q6_K", "llama-F16", "qwen2-Q4_0"}) {
    SCOPED_TRACE(stem);
    const std::string path = test::models_dir() + "/random/" + stem + ".gguf";
    HEARTH_REQUIRE_FILE(path);
    auto [rows, il] = load_rows_and_interleaved(path, pool);
    ASSERT_TRUE(rows && il);
    EXPECT_EQ(interleaved_matrices(rows->weights()), 0);
    const ModelWeights& w = il->weights();
    // Every matrix the kernels want interleaved was moved.
    const auto& L0 = rows->weights().layers[0];
    EXPECT_EQ(w.layers[0].wq.interleaved, kernels::wants_interleaved(L0.wq));
    EXPECT_EQ(w.layers[0].ffn_down.interleaved, kernels::wants_interleaved(L0.ffn_down));
    EXPECT_EQ(w.output.interleaved, kernels::wants_interleaved(rows->weights().output));
    if (rows->weights().output.data == rows->weights().token_embd.data) {
      EXPECT_EQ(w.output.data, w.token_embd.data) << "a tied output must keep sharing the embedding";
    }
    if (interleaved_matrices(w) > 0) ++compared;
    const std::vector<float> want = prompt_then_decode(*rows, pool);
    const std::vector<float> got = prompt_then_decode(*il, pool);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
  }
  if (kernels::active_cpu_variant() == kernels::CpuVariant::kAvx512) {
    EXPECT_GE(compared, 5);
  }
}

// A one-thread pool gives the interleaving the whole matrix in one call, which it reads in
// L2-sized runs all the same: the runs must cover every panel, at the right place.
TEST(WeightInterleaving, OneThreadReadsInRunsAndGivesTheSameLogits) {
  ThreadPool one(1), two(2);
  for (const char* stem : {"llama-Q4_0", "llama-Q8_0"}) {
    SCOPED_TRACE(stem);
    const std::string path = test::models_dir() + "/random/" + stem + ".gguf";
    HEARTH_REQUIRE_FILE(path);
    auto [rows, il] = load_rows_and_interleaved(path, one);
    ASSERT_TRUE(rows && il);
    const std::vector<float> want = prompt_then_decode(*rows, two);
    const std::vector<float> got = prompt_then_decode(*il, two);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
  }
}

TEST(WeightInterleaving, LeavesTheCallersBufferAlone) {
  const std::string path = test::models_dir() + "/random/llama-Q4_0.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto bytes = read_file(path);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  const std::string original = *bytes;
  auto file = gguf::File::parse(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  auto m = Model::from_file(std::move(file).value());
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_TRUE(*bytes == original) << "interleaving changed the buffer the model was parsed from";
  auto from_disk = Model::load(path);
  ASSERT_TRUE(from_disk.ok());
  ThreadPool pool(2);
  const std::vector<float> want = prompt_then_decode(**from_disk, pool);
  const std::vector<float> got = prompt_then_decode(**m, pool);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace hearth::model

// Layers that went to a device give their host copies back (Model::release_layer_matrices):
// the interleaved copies of the released layers read zeros afterwards (their pages went back to
// the system), the layers kept on the CPU keep theirs, and the byte count is theirs exactly.
namespace hearth::model {
namespace {

TEST(WeightInterleaving, ReleasedLayersGiveTheirCopiesBackAndTheOthersKeepTheirs) {
  const std::string path = test::models_dir() + "/random/llama-Q8_0.gguf";
  HEARTH_REQUIRE_FILE(path);
  ThreadPool pool(2);
  LoadOptions opt;
  opt.interleave = true;
  opt.pool = &pool;
  auto m = Model::load(path, opt);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const ModelWeights& w = (*m)->weights();
  ASSERT_GE(w.layers.size(), 2u);
  if (interleaved_matrices(w) == 0) GTEST_SKIP() << "this CPU's kernels interleave no Q8_0 matrix";
  const auto nonzero = [](const kernels::WeightView& v) {
    const size_t bytes = static_cast<size_t>(v.rows) * v.row_bytes;
    size_t n = 0;
    for (size_t i = 0; i < bytes; ++i) n += v.data[i] != 0 ? 1 : 0;
    return n;
  };
  size_t want = 0;
  const LayerWeights& first = w.layers[0];
  for (const auto* v : {&first.wq, &first.wk, &first.wv, &first.wqkv, &first.wo, &first.ffn_gate, &first.ffn_up, &first.ffn_down}) {
    if (v->data != nullptr && v->interleaved) want += static_cast<size_t>(v->rows) * v->row_bytes;
  }
  const kernels::WeightView& kept = w.layers[1].ffn_down;
  ASSERT_TRUE(first.ffn_down.interleaved && kept.interleaved);
  const size_t kept_before = nonzero(kept);
  ASSERT_GT(nonzero(first.ffn_down), 0u);
  EXPECT_EQ((*m)->release_layer_matrices(1), want);
  EXPECT_GT(want, 0u);
  // Whole pages inside the released matrix read zeros now; the edges may share a page.
  const size_t bytes = static_cast<size_t>(first.ffn_down.rows) * first.ffn_down.row_bytes;
  EXPECT_LT(nonzero(first.ffn_down), bytes / 8);
  EXPECT_EQ(nonzero(kept), kept_before);
}

}  // namespace
}  // namespace hearth::model
