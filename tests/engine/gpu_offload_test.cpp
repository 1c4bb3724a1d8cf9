// The engine with layers on the GPU (lavapipe in CI, named through HEARTH_GPU since automatic
// choice skips CPU drivers): stories260K's 128-token greedy continuation equals llama.cpp's with
// every layer and with a split, and the context names the device and whether the output layer
// went there; HEARTH_GPU=none and a HEARTH_GPU naming no device; the device
// KV of a serving engine is allocated when a conversation takes blocks, shows in its metrics and
// slots, and goes back when the idle engine trims (growth chunk by chunk: device_kv_test); the
// CPU KV holds only the CPU layers' rows, so its memory shrinks as -ngl grows.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "common/test_device.h"
#include "common/test_paths.h"
#include "engine/generation.h"
#include "engine/serving_test_util.h"

namespace hearth::engine {
namespace {

// Sets HEARTH_GPU for the scope.
class GpuChoice {
 public:
  explicit GpuChoice(const char* value) {
    const char* old = std::getenv("HEARTH_GPU");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("HEARTH_GPU", value, 1);
  }
  ~GpuChoice() {
    if (had_) {
      setenv("HEARTH_GPU", old_.c_str(), 1);
    } else {
      unsetenv("HEARTH_GPU");
    }
  }

 private:
  bool had_ = false;
  std::string old_;
};

Result<std::unique_ptr<InferenceContext>> open(int32_t gpu_layers) {
  ContextOptions o;
  o.n_ctx = 256;
  o.n_threads = 2;
  o.gpu_layers = gpu_layers;
  return InferenceContext::load(stories(), o);
}

TEST(GpuOffload, Stories260KGreedyMatchesReferenceWithAllLayersAndWithASplit) {
  HEARTH_REQUIRE_DEVICE(dev);
  HEARTH_REQUIRE_FILE(stories());
  const std::string ref_path = test::reference_dir() + "/stories260K-llama-f32/once-upon-a-time-greedy128.json";
  HEARTH_REQUIRE_FILE(ref_path);
  std::ifstream in(ref_path);
  auto ref = nlohmann::json::parse(in, nullptr, false);
  const auto want = ref["greedy"]["tokens"].get<std::vector<int32_t>>();
  const char* env = std::getenv("HEARTH_GPU");
  GpuChoice choice(env != nullptr && *env != '\0' ? env : "0");  // the test device
  // Every layer: the whole 128 tokens; a split: the first 24 (lavapipe is slow).
  for (int32_t layers : {1000, 2}) {
    auto ctx = open(layers);
    ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
    EXPECT_EQ((*ctx)->gpu_layers(), std::min(layers, (*ctx)->model().hparams().n_layer));
    EXPECT_GT((*ctx)->device_bytes(), 0u);
    ASSERT_NE((*ctx)->gpu(), nullptr);
    EXPECT_EQ((*ctx)->gpu()->name, dev->info().name);
    EXPECT_EQ((*ctx)->gpu_output(), layers > (*ctx)->model().hparams().n_layer);
    GenerateOptions g;
    g.n_predict = layers == 2 ? 24 : 128;
    g.sampling.temperature = 0;
    g.stop_at_eog = false;
    auto r = generate(**ctx, ref["prompt"].get<std::string>(), g);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    size_t same = 0;
    ASSERT_EQ(r->tokens.size(), static_cast<size_t>(g.n_predict));
    while (same < r->tokens.size() && r->tokens[same] == want[same]) ++same;
    EXPECT_EQ(same, r->tokens.size()) << layers << " layers on the GPU: first difference at step " << same;
  }
}

TEST(GpuOffload, CpuKvHoldsOnlyTheCpuLayersRowsAndShrinksWithLayersOffloaded) {
  HEARTH_REQUIRE_DEVICE(dev);
  HEARTH_REQUIRE_FILE(stories());
  const char* env = std::getenv("HEARTH_GPU");
  GpuChoice choice(env != nullptr && *env != '\0' ? env : "0");
  std::vector<int32_t> first_tokens;
  size_t previous_block = SIZE_MAX, previous_committed = SIZE_MAX;
  for (int32_t layers : {0, 2, 1000}) {
    auto ctx = open(layers);
    ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
    const int32_t n_layer = (*ctx)->model().hparams().n_layer;
    const int32_t on_device = (*ctx)->gpu_layers();
    ASSERT_EQ(on_device, std::min(layers, n_layer));
    const kv::KvBlockPool& pool = (*ctx)->kv().pool();
    EXPECT_EQ(pool.layout().offloaded_layers, on_device);
    const size_t layer_rows = static_cast<size_t>(pool.layout().block_tokens) * (pool.k_row_bytes() + pool.v_row_bytes());
    EXPECT_EQ(pool.block_bytes(), static_cast<size_t>(n_layer - on_device) * layer_rows);
    GenerateOptions g;
    g.n_predict = 12;
    g.sampling.temperature = 0;
    g.stop_at_eog = false;
    auto r = generate(**ctx, "Once upon a time", g);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    if (first_tokens.empty()) first_tokens = r->tokens;
    EXPECT_EQ(r->tokens, first_tokens) << on_device << " layers on the device";
    const kv::KvPoolStats st = pool.stats();
    std::printf("[ cpu kv   ] %d/%d layers on %s: CPU KV block %zu bytes, committed %zu bytes\n", on_device, n_layer,
                (*ctx)->device_bytes() > 0 ? "the device" : "the CPU", st.block_bytes, st.committed_bytes);
    EXPECT_LT(st.block_bytes, previous_block);
    EXPECT_LE(st.committed_bytes, previous_committed);
    if (on_device == 0) {
      EXPECT_GT(st.committed_bytes, 0u);
    }
    if (on_device == n_layer) {  // every row is on the device
      EXPECT_EQ(st.committed_bytes, 0u);
    }
    previous_block = st.block_bytes;
    previous_committed = st.committed_bytes;
  }
}

TEST(GpuOffload, NoneKeepsTheCpuAndAnUnknownDeviceIsAnError) {
  HEARTH_REQUIRE_DEVICE(dev);
  HEARTH_REQUIRE_FILE(stories());
  {
    GpuChoice choice("none");
    auto ctx = open(-1);
    ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
    EXPECT_EQ((*ctx)->device_bytes(), 0u);
    EXPECT_EQ((*ctx)->gpu_layers(), 0);
    EXPECT_EQ((*ctx)->gpu(), nullptr);
    EXPECT_FALSE((*ctx)->gpu_output());
  }
  {
    GpuChoice choice("no-such-gpu-anywhere");
    auto ctx = open(-1);
    ASSERT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_NE(ctx.error().message.find("HEARTH_GPU"), std::string::npos) << ctx.error().message;
  }
}

TEST_F(ServingEngineTest, DeviceKvComesWithAConversationAndGoesBackWhenIdle) {
  HEARTH_REQUIRE_DEVICE(dev);
  HEARTH_REQUIRE_FILE(stories());
  const char* env = std::getenv("HEARTH_GPU");
  GpuChoice choice(env != nullptr && *env != '\0' ? env : "0");  // the test device
  ContextOptions co;
  co.n_ctx = 256;  // stories260K's KV: 640 bytes a token, so one chunk holds it all
  co.n_threads = 2;
  co.gpu_layers = 1000;
  auto ctx = InferenceContext::load(stories(), co);
  ASSERT_TRUE(ctx.ok()) << ctx.error().to_string();
  ASSERT_EQ((*ctx)->gpu_layers(), (*ctx)->model().hparams().n_layer);
  const uint64_t weights = (*ctx)->device_bytes();
  ServingOptions o;
  o.n_slots = 1;
  o.idle_cache_bytes = 0;
  o.idle_after = std::chrono::milliseconds(1000);  // time to read the figures before the trim
  auto engine = start(**ctx, o);
  ASSERT_NE(engine, nullptr);
  EngineMetrics m = engine->metrics();
  EXPECT_GT(m.kv_device_bytes_reserved, 0u);
  EXPECT_EQ(m.kv_device_bytes_committed, 0u);  // nothing until a block is handed out
  std::vector<int32_t> prompt = {1};
  for (int i = 1; i < 40; ++i) prompt.push_back(260 + (i * 37) % 240);
  Collected c = collect(*engine->submit(greedy(prompt, 2)));
  ASSERT_EQ(c.final.kind, EngineEvent::Kind::kDone) << c.final.error.to_string();
  // While the conversation's blocks are held (the slot keeps them until the idle trim), the
  // device chunk: the metrics, the slot's own figure and the context's allocations agree.
  m = engine->metrics();
  const uint64_t chunk = m.kv_device_bytes_reserved;
  EXPECT_GT(m.kv_blocks_used, 0);
  EXPECT_EQ(m.kv_device_bytes_committed, chunk);
  const auto slots = engine->slots();
  ASSERT_EQ(slots.size(), 1u);
  // About 42 tokens: 3 blocks, every layer's F16 rows of them on the device, none on the CPU.
  const kv::KvBlockPool& pool = (*ctx)->kv().pool();
  const size_t layer_rows = static_cast<size_t>(pool.layout().block_tokens) * (pool.k_row_bytes() + pool.v_row_bytes());
  EXPECT_EQ(slots[0].kv_device_bytes, 3 * static_cast<size_t>(pool.layout().n_layers) * layer_rows);
  EXPECT_EQ(pool.block_bytes(), 0u);
  EXPECT_GE((*ctx)->device_bytes() - weights, chunk);
  for (int i = 0; i < 300; ++i) {  // up to 3 s
    m = engine->metrics();
    if (m.kv_blocks_used == 0 && m.kv_device_bytes_committed == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(m.kv_device_bytes_committed, 0u);
  std::printf("[ device kv] reserved %llu, chunk %llu, after the idle trim %llu bytes\n",
              static_cast<unsigned long long>(m.kv_device_bytes_reserved), static_cast<unsigned long long>(chunk),
              static_cast<unsigned long long>(m.kv_device_bytes_committed));
}

}  // namespace
}  // namespace hearth::engine
