// Layer offload on the test device (lavapipe in CI) against llama.cpp's goldens: every layer
// on the device and a CPU/device split, for F32, F16, Q8_0 and Q4_K_M random llamas and
// stories260K; a batch equals the same tokens one by one; a device that runs out of memory
// midway and a device too small for the model fall back to a split; the device memory held is
// what size_vram reports. Only the once-upon-a-time prompt: lavapipe is slow.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "common/test_device.h"
#include "common/test_paths.h"
#include "model/device_offload.h"
#include "model/golden_support.h"

namespace hearth::test {
namespace {

struct OffloadCase {
  std::string stem;
  int32_t layers;  // -2: all but one (a split); else as DeviceOffload::create takes it
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
    runner->forward->set_offload(off.get());
    const std::string label = c.stem + " on " + ctx->info().name + " (" + std::to_string(off->n_layers()) + "/" +
                              std::to_string(n_layer) + " layers)";
    check_logits_golden(*runner, load_json(golden), summary[c.stem]["logit_std"].get<double>(),
                        logit_tolerance(tolerances, c.stem), label);
    runner->forward->set_offload(nullptr);
  }
  EXPECT_EQ(ctx->allocated_bytes(), before);  // everything freed with the offload
}

INSTANTIATE_TEST_SUITE_P(Models, DeviceOffloadGolden,
                         // Q8_0 with a split runs in RunningOutOfDeviceMemoryFallsBackToASplit; Q4_K_M
                         // holds Q4_K and Q6_K matrices. Q4_0, Q6_K and Q5_K_M pass too (tried by
                         // hand) but cost CI seconds on lavapipe.
                         ::testing::Values(OffloadCase{"stories260K-llama-f32", 99}, OffloadCase{"stories260K-llama-f32", -2},
                                           OffloadCase{"llama-F32", 99}, OffloadCase{"llama-F16", -2},
                                           OffloadCase{"llama-Q4_K_M", 99}),
                         [](const auto& info) {
                           std::string n = info.param.stem + (info.param.layers == -2 ? "_split" : "_all");
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

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
  double vs_cpu = 0, batch_vs_single = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    vs_cpu = std::max(vs_cpu, static_cast<double>(std::fabs(batched[i] - want[i])));
    batch_vs_single = std::max(batch_vs_single, static_cast<double>(std::fabs(batched[i] - single[i])));
  }
  std::printf("[ max err  ] stories260K last logits: device vs CPU %.3g, batch vs single %.3g\n", vs_cpu,
              batch_vs_single);
  EXPECT_LT(vs_cpu, 5e-3);  // the CPU's prefill tile rounds Q to F16; the device keeps F32
  EXPECT_LT(batch_vs_single, 1e-4);
  EXPECT_EQ(argmax(batched.data(), static_cast<int32_t>(batched.size())),
            argmax(want.data(), static_cast<int32_t>(want.size())));
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
