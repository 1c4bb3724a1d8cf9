// Matrix x vector (decode: 1 token) and a 4-token tile of VulkanOps::matmul on the first Vulkan
// device (HEARTH_GPU picks another), for each weight type the device runs as stored, with the
// subgroup kernel and with the shared-memory fallback, interleaved in the same run. Each
// iteration is one recorded dispatch, submitted and waited for, so the figure includes the
// submission. On lavapipe (Mesa's CPU driver) these are CPU timings, not GPU figures.
// HEARTH_BENCH_ROWS / HEARTH_BENCH_COLS change the 2048x2048 default shape.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device/device.h"
#include "kernels/vulkan/vulkan_ops.h"
#include "tensor/quantize.h"

namespace {

using hearth::DType;
namespace device = hearth::device;
namespace vk = hearth::kernels::vulkan;

int64_t env_dim(const char* name) {
  const char* env = std::getenv(name);
  const int64_t v = env != nullptr ? std::atoll(env) : 2048;
  return v > 0 ? v : 2048;
}

device::Context* test_device() {
  static std::unique_ptr<device::Context> ctx = [] {
    auto devices = device::list_devices();
    if (!devices.ok() || devices->empty()) return std::unique_ptr<device::Context>();
    size_t pick = 0;
    if (const char* env = std::getenv("HEARTH_GPU"); env != nullptr && *env != '\0') {
      auto c = device::choose_device(*devices, env);
      if (!c.ok() || !c->has_value()) return std::unique_ptr<device::Context>();
      pick = **c;
    }
    auto c = device::Context::open(pick);
    if (!c.ok()) return std::unique_ptr<device::Context>();
    std::fprintf(stderr, "device: %s\n", device::describe_device(pick, (*c)->info()).c_str());
    return std::move(*c);
  }();
  return ctx.get();
}

void BM_VulkanMatmul(benchmark::State& state, DType type, uint32_t n_tokens, bool subgroups) {
  device::Context* ctx = test_device();
  if (ctx == nullptr) {
    state.SkipWithError("no Vulkan device");
    return;
  }
  if (subgroups && !ctx->info().subgroup_arithmetic) {
    state.SkipWithError("the device has no subgroup arithmetic");
    return;
  }
  const int64_t rows = env_dim("HEARTH_BENCH_ROWS"), cols = env_dim("HEARTH_BENCH_COLS");
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> wf(static_cast<size_t>(rows * cols));
  for (float& v : wf) v = dist(rng);
  const size_t row_bytes = *hearth::dtype_row_bytes(type, cols);
  std::vector<uint8_t> wb(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    if (!hearth::quantize_row(type, wf.data() + r * cols, wb.data() + r * row_bytes, cols).ok()) {
      state.SkipWithError("quantize failed");
      return;
    }
  }
  vk::VulkanOps ops(*ctx);
  ops.set_use_subgroups(subgroups);
  auto w = ops.upload_weight(hearth::kernels::WeightView{type, wb.data(), cols, rows, row_bytes, false});
  auto x = ctx->alloc(static_cast<size_t>(cols) * n_tokens * sizeof(float));
  auto y = ctx->alloc(static_cast<size_t>(rows) * n_tokens * sizeof(float));
  if (!w.ok() || !x.ok() || !y.ok()) {
    state.SkipWithError("device allocation failed");
    return;
  }
  std::vector<float> xv(static_cast<size_t>(cols) * n_tokens);
  for (float& v : xv) v = dist(rng);
  (void)ctx->upload(*x, 0, xv.data(), xv.size() * sizeof(float));
  for (auto _ : state) {
    device::Recorder rec(*ctx);
    if (!ops.matmul(rec, *w, {&*x, 0}, static_cast<uint32_t>(cols), n_tokens, {&*y, 0}, static_cast<uint32_t>(rows)).ok() ||
        !rec.run().ok()) {
      state.SkipWithError("dispatch failed");
      return;
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(wb.size()));
}

void register_all() {
  for (DType type : {DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    for (uint32_t tokens : {1u, 4u}) {
      for (bool sg : {false, true}) {
        const std::string name = std::string("vulkan_matmul/") + std::string(hearth::dtype_name(type)) + "/tokens:" +
                                 std::to_string(tokens) + (sg ? "/subgroup" : "/shared");
        benchmark::RegisterBenchmark(name.c_str(), BM_VulkanMatmul, type, tokens, sg)->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
