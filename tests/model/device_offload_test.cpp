// Layer offload on the test device (lavapipe in CI) against llama.cpp's goldens: every layer
// (and the output layer: 99 asks for more than the model has) on the device and a CPU/device
// split, for F32, F16, Q8_0 and Q4_K_M random llamas, qwen2 (Q/K/V biases), qwen3 (QK norms)
// and stories260K; the same against the CPU over a prompt and decode steps (also gemma2, phi3
// and a tiny Llama 3 with RoPE frequency factors); the output layer
// goes up only with n_layer + 1 and is counted in the device bytes; a batch equals the same tokens one by one; a device that runs out of memory
// midway and a device too small for the model fall back to a split; the device memory held is
// what size_vram reports. Only the once-upon-a-time prompt: lavapipe is slow.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>

#include "common/test_device.h"
#include "devtools/model_maker.h"
#include "common/test_paths.h"
#include "model/device_offload.h"
#include "model/golden_support.h"

namespace hearth::test {
namespace {

struct OffloadCase {
  std::string stem;
  int32_t layers;  // -2: all but one (a split); else as DeviceOffload::create takes it
  bool shared_memory = false;  // the shared-memory reductions even where the device has subgroups
  bool next = false;           // a shared/next file (its own reference directory)
};

std::unique_ptr<model::DeviceOffload> offload_for(GoldenRunner& r, device::Context& ctx, int32_t layers) {
  const int32_t n_layer = r.model->hparams().n_layer;
  const int32_t want = layers == -2 ? n_layer - 1 : layers;
  auto off = model::DeviceOffload::create(*r.model, ctx, want, r.kv->pool(), r.model->rope_params(0));
  EXPECT_TRUE(off.ok()) << off.error().to_string();
  if (!off.ok()) return nullptr;
  return std::move(*off);
}

class DeviceOffloadGolden : public ::testing::TestWithParam<OffloadCase> {};

TEST_P(DeviceOffloadGolden, MatchesLlamaCpp) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const OffloadCase& c = GetParam();
  const std::string path = model_path_for_stem(c.stem);
  HEARTH_REQUIRE_FILE(path);
  const std::string golden = reference_dir() + "/" + c.stem + "/once-upon-a-time.json";
  HEARTH_REQUIRE_FILE(golden);
  auto summary = load_json(reference_dir() + "/summary.json");
  auto tolerances = load_json(reference_dir() + "/tolerances.json");
  auto runner = GoldenRunner::open(path, 64);
  ASSERT_NE(runner, nullptr);
  const uint64_t before = ctx->allocated_bytes();
  {
    auto off = offload_for(*runner, *ctx, c.layers);
    ASSERT_NE(off, nullptr);
    const int32_t n_layer = runner->model->hparams().n_layer;
    EXPECT_EQ(off->n_layers(), c.layers == -2 ? n_layer - 1 : n_layer);
    EXPECT_GT(off->device_bytes(), before);
    if (c.shared_memory) off->ops().set_use_subgroups(false);
    runner->forward->set_offload(off.get());
    const std::string label = c.stem + " on " + ctx->info().name + " (" + std::to_string(off->n_layers()) + "/" +
                              std::to_string(n_layer) + " layers, " +
                              (off->ops().use_subgroups() ? "subgroup" : "shared-memory") + " reductions)";
    check_logits_golden(*runner, load_json(golden), summary[c.stem]["logit_std"].get<double>(),
                        logit_tolerance(tolerances, c.stem), label);
    runner->forward->set_offload(nullptr);
  }
  EXPECT_EQ(ctx->allocated_bytes(), before);  // everything freed with the offload
}

INSTANTIATE_TEST_SUITE_P(Models, DeviceOffloadGolden,
                         // Q8_0 with a split runs in RunningOutOfDeviceMemoryFallsBackToASplit; Q4_K_M
                         // holds Q4_K and Q6_K matrices; qwen3 has QK norms (qwen2's biases: against
                         // the CPU in DeviceOffloadArch, qwen2-F32 here too when tried by hand). Q4_0, Q6_K and Q5_K_M pass too (tried by
                         // hand) but cost CI seconds on lavapipe. On a device with subgroup arithmetic
                         // (lavapipe has it) the *_shared cases run the shared-memory fallback.
                         ::testing::Values(OffloadCase{"stories260K-llama-f32", 99}, OffloadCase{"stories260K-llama-f32", -2},
                                           OffloadCase{"llama-F32", 99}, OffloadCase{"llama-F16", -2},
                                           OffloadCase{"llama-Q4_K_M", 99}, OffloadCase{"qwen3-F32", 99},
                                           OffloadCase{"stories260K-llama-f32", 99, true}, OffloadCase{"llama-F16", -2, true},
                                           OffloadCase{"llama-Q4_K_M", 99, true}),
                         [](const auto& info) {
                           std::string n = info.param.stem + (info.param.layers == -2 ? "_split" : "_all") +
                                           (info.param.shared_memory ? "_shared" : "");
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// Largest |device - CPU| logit over a prompt (every position) and `steps` greedy decode steps
// (the CPU's choices fed to both), divided by the model's logit std; the argmax must agree
// wherever the CPU's top two are apart by more than the error.
double device_vs_cpu_over_sigma(GoldenRunner& cpu, GoldenRunner& gpu, const std::vector<int32_t>& prompt, int steps,
                                double sigma) {
  const int32_t vocab = cpu.model->hparams().n_vocab;
  double worst = 0;
  auto compare = [&](const std::vector<float>& want, const std::vector<float>& got) {
    EXPECT_EQ(want.size(), got.size());
    for (size_t row = 0; row * vocab < std::min(want.size(), got.size()); ++row) {
      const float* w = want.data() + row * vocab;
      const float* g = got.data() + row * vocab;
      double err = 0;
      for (int32_t i = 0; i < vocab; ++i) err = std::max(err, static_cast<double>(std::fabs(w[i] - g[i])));
      worst = std::max(worst, err / sigma);
      std::vector<float> sorted(w, w + vocab);
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
      if (sorted[0] - sorted[1] > 2 * err) {
        EXPECT_EQ(argmax(w, vocab), argmax(g, vocab)) << "row " << row;
      }
    }
  };
  std::vector<float> want = cpu.run(prompt, true);
  compare(want, gpu.run(prompt, true));
  for (int s = 0; s < steps; ++s) {
    const int32_t next = argmax(want.data() + want.size() - vocab, vocab);
    want = cpu.run({next}, false);
    compare(want, gpu.run({next}, false));
  }
  return worst;
}

class DeviceOffloadArch : public ::testing::TestWithParam<OffloadCase> {};

// Each architecture the device runs, all on the device (output layer too) and as a split,
// against the CPU path over a prompt and decode steps, within the golden F32/quantized tolerance.
TEST_P(DeviceOffloadArch, MatchesTheCpuOverAPromptAndDecodeSteps) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const OffloadCase& c = GetParam();
  const std::string path = c.next ? next_model_path_for_stem(c.stem) : model_path_for_stem(c.stem);
  HEARTH_REQUIRE_FILE(path);
  const std::string refs = c.next ? next_reference_dir() : reference_dir();
  auto summary = load_json(refs + "/summary.json");
  auto tolerances = load_json(refs + "/tolerances.json");
  const double sigma = summary[c.stem]["logit_std"].get<double>();
  auto cpu = GoldenRunner::open(path, 64);
  auto gpu = GoldenRunner::open(path, 64);
  ASSERT_TRUE(cpu && gpu);
  auto off = offload_for(*gpu, *ctx, c.layers);
  ASSERT_NE(off, nullptr);
  const int32_t n_layer = gpu->model->hparams().n_layer;
  ASSERT_EQ(off->n_layers(), c.layers == -2 ? n_layer - 1 : n_layer) << "the device refused the architecture";
  EXPECT_EQ(off->has_output(), c.layers > n_layer);
  gpu->forward->set_offload(off.get());
  const std::vector<int32_t> prompt = {1, 15, 27, 300, 42, 7, 99, 120};
  const double err = device_vs_cpu_over_sigma(*cpu, *gpu, prompt, 3, sigma);
  std::printf("[ max err  ] %s on %s (%d/%d layers%s): device vs CPU %.3g sigma\n", c.stem.c_str(),
              ctx->info().name.c_str(), off->n_layers(), n_layer, off->has_output() ? " + output" : "", err);
  EXPECT_LT(err, logit_tolerance(tolerances, c.stem).max_abs_over_sigma);
  gpu->forward->set_offload(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Archs, DeviceOffloadArch,
                         // gemma2: post-norms, attention and final softcaps, GELU, sliding layers;
                         // phi3: fused QKV and gate/up; gemma3: QK norms, and sliding layers
                         // with their own RoPE base (10,000 beside the global layers' 1,000,000);
                         // IQ4_NL: weights dequantised to F16 at upload.
                         ::testing::Values(OffloadCase{"qwen2-F32", 99}, OffloadCase{"qwen2-Q4_0", -2},
                                           OffloadCase{"qwen3-F32", 99}, OffloadCase{"qwen3-F32", -2},
                                           OffloadCase{"gemma2-F32", 99}, OffloadCase{"gemma2-Q8_0", -2},
                                           OffloadCase{"phi3-F32", 99}, OffloadCase{"phi3-Q4_0", -2},
                                           OffloadCase{"gemma3-F32", 99, false, true},
                                           OffloadCase{"gemma3-Q8_0", -2, false, true},
                                           OffloadCase{"llama-IQ4_NL", 99, false, true}),
                         [](const auto& info) {
                           std::string n = info.param.stem + (info.param.layers == -2 ? "_split" : "_all");
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// A Llama 3 shape (make-model's tiny llama: rope_freqs.weight, base 500000) goes on the device
// whole, its RoPE frequency factors with it, and matches the CPU. The factors' math at far
// positions (and YaRN's) is checked op by op in VulkanOps.RopeMatchesTheCpuInBothStyles...;
// here positions stay small, where Llama 3's factors move the angles little.
TEST(DeviceOffload, Llama3RopeFrequencyFactorsGoUpAndMatchTheCpu) {
  HEARTH_REQUIRE_DEVICE(ctx);
  devtools::MakeModelOptions o;
  o.arch = "llama";
  o.shape = "tiny";
  o.type = "f16";
  o.n_threads = 2;
  o.output = make_temp_dir() + "/llama3-tiny-f16.gguf";
  ASSERT_TRUE(devtools::make_model(o).ok());
  auto cpu = GoldenRunner::open(o.output, 64);
  auto gpu = GoldenRunner::open(o.output, 64);
  ASSERT_TRUE(cpu && gpu);
  ASSERT_NE(gpu->model->weights().rope_freqs, nullptr);
  ASSERT_NE(gpu->model->rope_params(0).freq_factors, nullptr);
  const int32_t n_layer = gpu->model->hparams().n_layer;
  auto off = offload_for(*gpu, *ctx, 99);
  ASSERT_NE(off, nullptr);
  ASSERT_EQ(off->n_layers(), n_layer) << "the device refused the Llama 3 shape";
  ASSERT_TRUE(off->has_output());
  gpu->forward->set_offload(off.get());
  const std::vector<int32_t> prompt = {1, 15, 27, 300, 42, 7, 99, 120, 500, 3, 64, 800};
  // The logit spread of this random model, measured on the CPU's first run.
  const std::vector<float> first = cpu->run(prompt, false);
  double mean = 0, sq = 0;
  for (float v : first) mean += v;
  mean /= static_cast<double>(first.size());
  for (float v : first) sq += (v - mean) * (v - mean);
  const double sigma = std::sqrt(sq / static_cast<double>(first.size()));
  cpu->reset();
  const double err = device_vs_cpu_over_sigma(*cpu, *gpu, prompt, 3, sigma);
  std::printf("[ max err  ] tiny Llama 3 F16 (rope_freqs) on %s: device vs CPU %.3g sigma\n", ctx->info().name.c_str(),
              err);
  auto tolerances = load_json(reference_dir() + "/tolerances.json");
  EXPECT_LT(err, logit_tolerance(tolerances, "llama-F16").max_abs_over_sigma);
  gpu->forward->set_offload(nullptr);
}

// -ngl n_layer keeps the output layer on the CPU, n_layer + 1 puts it on the device (counted in
// the device bytes), automatic fit takes it when it fits; logits match the CPU either way.
TEST(DeviceOffload, OutputLayerGoesUpWithNLayerPlusOneAndMatchesTheCpu) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const std::string path = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto cpu = GoldenRunner::open(path, 64);
  auto gpu = GoldenRunner::open(path, 64);
  ASSERT_TRUE(cpu && gpu);
  const model::ModelHparams& h = gpu->model->hparams();
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 442, 390, 280};
  auto summary = load_json(reference_dir() + "/summary.json");
  const double sigma = summary["stories260K-llama-f32"]["logit_std"].get<double>();
  uint64_t layers_only = 0;
  {
    auto off = offload_for(*gpu, *ctx, h.n_layer);
    ASSERT_NE(off, nullptr);
    EXPECT_EQ(off->n_layers(), h.n_layer);
    EXPECT_FALSE(off->has_output());
    layers_only = off->device_bytes();
  }
  {
    auto off = offload_for(*gpu, *ctx, h.n_layer + 1);
    ASSERT_NE(off, nullptr);
    ASSERT_TRUE(off->has_output());
    // The output matrix (F32 here: n_vocab x n_embd floats) and its norm are device memory.
    EXPECT_GE(off->device_bytes(), layers_only + uint64_t{4} * h.n_vocab * h.n_embd + uint64_t{4} * h.n_embd);
    gpu->forward->set_offload(off.get());
    gpu->reset();
    const double err = device_vs_cpu_over_sigma(*cpu, *gpu, prompt, 4, sigma);
    std::printf("[ max err  ] stories260K, output layer on the device: %.3g sigma\n", err);
    EXPECT_LT(err, 0.01);
    gpu->forward->set_offload(nullptr);
    gpu->reset();  // the next offload attaches to a pool with no block in use
  }
  {
    auto off = offload_for(*gpu, *ctx, -1);  // lavapipe has room for all of it
    ASSERT_NE(off, nullptr);
    EXPECT_EQ(off->n_layers(), h.n_layer);
    EXPECT_TRUE(off->has_output());
  }
  {
    // A device with room for the layers but not the output layer keeps it on the CPU.
    ctx->set_allocation_limit(layers_only + 4096);
    auto off = offload_for(*gpu, *ctx, h.n_layer + 1);
    ctx->set_allocation_limit(0);
    ASSERT_NE(off, nullptr);
    EXPECT_EQ(off->n_layers(), h.n_layer);
    EXPECT_FALSE(off->has_output());
  }
}

TEST(DeviceOffload, BatchEqualsSingleTokensAndMatchesTheCpu) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const std::string path = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 442, 390, 280};
  auto cpu = GoldenRunner::open(path, 64);
  auto gpu = GoldenRunner::open(path, 64);
  ASSERT_TRUE(cpu && gpu);
  auto off = offload_for(*gpu, *ctx, 99);
  ASSERT_NE(off, nullptr);
  gpu->forward->set_offload(off.get());
  const std::vector<float> want = cpu->run(tokens, false);
  const std::vector<float> batched = gpu->run(tokens, false);
  gpu->reset();
  std::vector<float> single;
  for (int32_t t : tokens) single = gpu->run({t}, false);
  ASSERT_EQ(want.size(), batched.size());
  ASSERT_EQ(want.size(), single.size());
  double vs_cpu = 0, single_vs_cpu = 0, batch_vs_single = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    vs_cpu = std::max(vs_cpu, static_cast<double>(std::fabs(batched[i] - want[i])));
    single_vs_cpu = std::max(single_vs_cpu, static_cast<double>(std::fabs(single[i] - want[i])));
    batch_vs_single = std::max(batch_vs_single, static_cast<double>(std::fabs(batched[i] - single[i])));
  }
  std::printf("[ max err  ] stories260K last logits: device vs CPU %.3g (token by token %.3g), batch vs single %.3g\n",
              vs_cpu, single_vs_cpu, batch_vs_single);
  EXPECT_LT(vs_cpu, 5e-3);  // the CPU's prefill tile rounds Q to F16; the device keeps F32
  EXPECT_LT(single_vs_cpu, 5e-3);
  // A batch of more than 4 tokens goes through the tiled matmul, single tokens through the
  // matrix x vector kernel: the same products summed in another order, so the two agree as
  // closely as the device and the CPU do (on an H200, 2.4e-3; on lavapipe, 8e-5), not bit for bit.
  EXPECT_LT(batch_vs_single, 5e-3);
  const int32_t n_vocab = static_cast<int32_t>(want.size());
  EXPECT_EQ(argmax(batched.data(), n_vocab), argmax(want.data(), n_vocab));
  EXPECT_EQ(argmax(single.data(), n_vocab), argmax(want.data(), n_vocab));
}

TEST(DeviceOffload, PromptMicroBatchesGrowOnTheDeviceWhileTheScoreScratchStaysBounded) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const std::string path = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto gpu = GoldenRunner::open(path, 64);
  ASSERT_TRUE(gpu);
  auto off = offload_for(*gpu, *ctx, 99);
  ASSERT_NE(off, nullptr);
  const int64_t heads = gpu->model->hparams().n_head;
  EXPECT_EQ(off->micro_batch_tokens(600, 128), 512);
  // 512 tokens x heads x n_kv floats would pass 256 MiB: fewer tokens, never below the CPU's.
  const int64_t n_kv = (int64_t{256} << 20) / (4 * heads * 300);
  EXPECT_NEAR(static_cast<double>(off->micro_batch_tokens(n_kv, 128)), 300.0, 1.0);
  EXPECT_EQ(off->micro_batch_tokens(int64_t{1} << 30, 128), 128);
}

TEST(DeviceOffload, RunningOutOfDeviceMemoryFallsBackToASplit) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const std::string path = model_path_for_stem("llama-Q8_0");
  HEARTH_REQUIRE_FILE(path);
  auto r = GoldenRunner::open(path, 64);
  ASSERT_NE(r, nullptr);
  const int32_t n_layer = r->model->hparams().n_layer;
  ASSERT_GE(n_layer, 2);
  // How much one layer takes, measured.
  uint64_t one_layer = 0;
  {
    auto one = offload_for(*r, *ctx, 1);
    ASSERT_NE(one, nullptr);
    ASSERT_EQ(one->n_layers(), 1);
    one_layer = one->device_bytes();
  }
  const uint64_t base = ctx->allocated_bytes();
  one_layer -= base;  // device_bytes() counts the whole context
  // Room for one and a half layers: asking for all fails midway (an injected allocation
  // failure) and keeps one; automatic fit sees the model is bigger than the device.
  ctx->set_allocation_limit(base + one_layer + one_layer / 2);
  auto asked = offload_for(*r, *ctx, 99);
  ASSERT_NE(asked, nullptr);
  EXPECT_EQ(asked->n_layers(), 1);
  asked.reset();
  auto fit = offload_for(*r, *ctx, -1);
  ASSERT_NE(fit, nullptr);
  EXPECT_LE(fit->n_layers(), 1);
  fit.reset();
  ctx->set_allocation_limit(0);

  // The split still computes the model: the golden within tolerance with one layer up.
  ctx->set_allocation_limit(base + one_layer + one_layer / 2);
  auto split = offload_for(*r, *ctx, 99);
  ctx->set_allocation_limit(0);
  ASSERT_NE(split, nullptr);
  r->forward->set_offload(split.get());
  auto summary = load_json(reference_dir() + "/summary.json");
  auto tolerances = load_json(reference_dir() + "/tolerances.json");
  check_logits_golden(*r, load_json(reference_dir() + "/llama-Q8_0/once-upon-a-time.json"),
                      summary["llama-Q8_0"]["logit_std"].get<double>(), logit_tolerance(tolerances, "llama-Q8_0"),
                      "llama-Q8_0 after an allocation failure");
  r->forward->set_offload(nullptr);
}

}  // namespace
}  // namespace hearth::test
