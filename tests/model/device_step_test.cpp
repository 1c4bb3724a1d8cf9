// How a forward step reaches the device: the offloaded layers of a decode or prefill step (the
// embeddings' upload, every layer's kernels and KV writes, the output layer, the download of
// what the CPU needs next) are one submission and one wait, however many layers are on the
// device; the counts are the Context's own (device::DeviceCounters), and a layer's dispatches
// are counted exactly (the element-wise steps fused into their neighbours). Also prints the
// time per decode step on the test device (lavapipe in CI: a CPU, not a GPU figure). A decode
// step over a long sequence splits attention's keys over workgroups and still matches the CPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/test_device.h"
#include "common/test_paths.h"
#include "kernels/vulkan/vulkan_ops.h"
#include "model/device_offload.h"
#include "model/golden_support.h"

namespace hearth::test {
namespace {

struct StepCounts {
  uint64_t submits = 0, waits = 0, dispatches = 0, barriers = 0;
};

StepCounts since(const device::DeviceCounters& before, const device::DeviceCounters& after) {
  return {after.submits - before.submits, after.fence_waits - before.fence_waits,
          after.dispatches - before.dispatches, after.barriers - before.barriers};
}

// Runs a prompt and `steps` greedy decode steps with `layers` offloaded (as DeviceOffload::create
// takes it); the largest per-step counts over the decode steps, and the prompt's, go to *decode
// and *prefill; returns the mean decode step in milliseconds.
double run_steps(const std::string& path, device::Context& ctx, int32_t layers, int steps, StepCounts* prefill,
                 StepCounts* decode) {
  auto r = GoldenRunner::open(path, 64);
  EXPECT_NE(r, nullptr);
  if (r == nullptr) return 0;
  auto off = model::DeviceOffload::create(*r->model, ctx, layers, r->kv->pool(), r->model->rope_params(0));
  EXPECT_TRUE(off.ok()) << off.error().to_string();
  if (!off.ok()) return 0;
  r->forward->set_offload(off->get());
  const int32_t vocab = r->model->hparams().n_vocab;
  device::DeviceCounters before = ctx.counters();
  std::vector<float> logits = r->run({1, 403, 407, 261, 378, 442, 390, 280}, false);
  *prefill = since(before, ctx.counters());
  *decode = StepCounts{};
  double ms = 0;
  for (int s = 0; s < steps; ++s) {
    const int32_t next = argmax(logits.data(), vocab);
    before = ctx.counters();
    const auto t0 = std::chrono::steady_clock::now();
    logits = r->run({next}, false);
    ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const StepCounts c = since(before, ctx.counters());
    decode->submits = std::max(decode->submits, c.submits);
    decode->waits = std::max(decode->waits, c.waits);
    decode->dispatches = std::max(decode->dispatches, c.dispatches);
    decode->barriers = std::max(decode->barriers, c.barriers);
  }
  r->forward->set_offload(nullptr);
  return ms / steps;
}

// One wait per decode step with one layer, every layer, and every layer and the output layer on
// the device: O(1), not O(layers); one submission per 4 layers. Dispatches grow with the layers.
TEST(DeviceStep, OneWaitPerStepAndOneSubmissionPerFourLayers) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const std::string path = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto probe = GoldenRunner::open(path, 64);
  ASSERT_NE(probe, nullptr);
  const int32_t n_layer = probe->model->hparams().n_layer;
  ASSERT_GE(n_layer, 3);
  StepCounts one_pre, one, all_pre, all, out_pre, out;
  run_steps(path, *ctx, 1, 3, &one_pre, &one);
  run_steps(path, *ctx, n_layer, 3, &all_pre, &all);
  const double ms = run_steps(path, *ctx, n_layer + 1, 8, &out_pre, &out);
  std::printf("[ per step ] 1 layer: %llu submits, %llu waits, %llu dispatches, %llu barriers\n",
              (unsigned long long)one.submits, (unsigned long long)one.waits, (unsigned long long)one.dispatches,
              (unsigned long long)one.barriers);
  std::printf("[ per step ] %d layers: %llu submits, %llu waits, %llu dispatches, %llu barriers\n", n_layer,
              (unsigned long long)all.submits, (unsigned long long)all.waits, (unsigned long long)all.dispatches,
              (unsigned long long)all.barriers);
  std::printf("[ per step ] %d layers + output: %llu submits, %llu waits, %llu dispatches, %llu barriers; "
              "%.3f ms per decode step on %s\n",
              n_layer, (unsigned long long)out.submits, (unsigned long long)out.waits,
              (unsigned long long)out.dispatches, (unsigned long long)out.barriers, ms, ctx->info().name.c_str());
  // A step goes up in parts of 4 layers (the device starts while the host records the rest).
  const auto parts = [](int32_t layers) { return static_cast<uint64_t>((layers + 3) / 4); };
  EXPECT_EQ(one.submits, parts(1));
  EXPECT_EQ(all.submits, parts(n_layer));
  EXPECT_EQ(out.submits, parts(n_layer));
  for (const StepCounts* c : {&one, &all, &out}) EXPECT_EQ(c->waits, 1u);
  // The prompt's step also commits the device KV's first chunk (its address goes up when the
  // pool hands out the chunk's first block, before the step): one more, still not per layer.
  for (const StepCounts* c : {&one_pre, &all_pre, &out_pre}) EXPECT_LE(c->waits, 2u);
  EXPECT_LE(one_pre.submits, parts(1) + 1);
  EXPECT_LE(all_pre.submits, parts(n_layer) + 1);
  EXPECT_LE(out_pre.submits, parts(n_layer) + 1);
  EXPECT_GT(all.dispatches, one.dispatches);
  EXPECT_GT(out.dispatches, all.dispatches);
  // A Llama layer's decode step is 8 dispatches: Q, K and V as one matrix x vector with the
  // attention norm inside it, RoPE of Q and K, the K and V store, attention, the output matrix
  // adding into the residual stream, gate and up as one with the feed-forward norm inside it,
  // SiLU x up, down adding into the residual stream. Without the matrix x vector kernel (no
  // subgroups) the norms (with the residual adds) are dispatches of their own and Q, K, V, gate
  // and up 5 more: 13.
  const bool matvec = kernels::vulkan::VulkanOps(*ctx).use_matvec();
  EXPECT_EQ(all.dispatches - one.dispatches, (matvec ? 8u : 13u) * static_cast<uint64_t>(n_layer - 1));
}

// A decode step over a sequence longer than two attention ranges splits its keys over several
// workgroups per head and merges them (one more dispatch per layer); its logits still match
// the CPU's. Ranges of 8 keys here (256 by default) keep the prompt short on lavapipe.
TEST(DeviceStep, ADecodeStepOverALongSequenceSplitsTheKeysAndMatchesTheCpu) {
  HEARTH_REQUIRE_DEVICE(ctx);
  const std::string path = models_dir() + "/stories260K-llama-f32.gguf";
  HEARTH_REQUIRE_FILE(path);
  auto cpu = GoldenRunner::open(path, 64);
  auto gpu = GoldenRunner::open(path, 64);
  ASSERT_TRUE(cpu && gpu);
  const int32_t n_layer = gpu->model->hparams().n_layer;
  const int32_t vocab = gpu->model->hparams().n_vocab;
  auto off = model::DeviceOffload::create(*gpu->model, *ctx, 99, gpu->kv->pool(), gpu->model->rope_params(0));
  ASSERT_TRUE(off.ok()) << off.error().to_string();
  (*off)->ops().set_attention_split(8);
  gpu->forward->set_offload(off->get());
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 40; ++i) prompt.push_back(1 + (i * 37) % (vocab - 1));
  std::vector<float> want = cpu->run(prompt, false);
  std::vector<float> got = gpu->run(prompt, false);
  double worst = 0;
  uint64_t short_dispatches = 0;
  {
    // The same model's decode step over a short sequence, for the dispatch count.
    auto r = GoldenRunner::open(path, 64);
    ASSERT_NE(r, nullptr);
    auto o = model::DeviceOffload::create(*r->model, *ctx, 99, r->kv->pool(), r->model->rope_params(0));
    ASSERT_TRUE(o.ok());
    (*o)->ops().set_attention_split(8);
    r->forward->set_offload(o->get());
    r->run({1, 2, 3}, false);
    const uint64_t before = ctx->counters().dispatches;
    r->run({4}, false);
    short_dispatches = ctx->counters().dispatches - before;
    r->forward->set_offload(nullptr);
  }
  for (int step = 0; step < 3; ++step) {
    const int32_t next = argmax(want.data(), vocab);
    want = cpu->run({next}, false);
    const uint64_t before = ctx->counters().dispatches;
    got = gpu->run({next}, false);
    EXPECT_EQ(ctx->counters().dispatches - before, short_dispatches + static_cast<uint64_t>(n_layer))
        << "one merge per layer";
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(want[i] - got[i])));
    EXPECT_EQ(argmax(want.data(), vocab), argmax(got.data(), vocab));
  }
  const double sigma = load_json(reference_dir() + "/summary.json")["stories260K-llama-f32"]["logit_std"].get<double>();
  const double tol =
      logit_tolerance(load_json(reference_dir() + "/tolerances.json"), "stories260K-llama-f32").max_abs_over_sigma;
  std::printf("[ max err  ] stories260K decode at position 40, keys split in ranges of 8: device vs CPU %.3g sigma "
              "(tolerance %.3g)\n",
              worst / sigma, tol);
  EXPECT_LT(worst / sigma, tol);
  gpu->forward->set_offload(nullptr);
}

}  // namespace
}  // namespace hearth::test
