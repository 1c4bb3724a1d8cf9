// Throughput of the pointwise ops (rms_norm, layer_norm, softmax, silu, gelu, add, mul, scale,
// rope) at the sizes a 7B-class model uses per token, for the scalar reference and every SIMD
// variant this CPU supports, against a memcpy of the same number of bytes measured in the same
// run. Reports GB/s of floats read and written, prints each case's ratio to memcpy and to the
// scalar variant, and writes JSON (bench_kernels_pointwise.json unless --benchmark_out is
// given). Single-threaded; rates use CPU time, which stays meaningful on a shared machine.
#include <benchmark/benchmark.h>

#include "bench_ratio_reporter.h"

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"

namespace {

using hearth::kernels::CpuVariant;
using hearth::kernels::KernelTable;

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

void set_rate(benchmark::State& state, double bytes) {
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

constexpr size_t kBaselineFloats = 14336;

void BM_MemcpyBaseline(benchmark::State& state) {
  const std::vector<float> src = random_floats(kBaselineFloats, 1, -1.0f, 1.0f);
  std::vector<float> dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, 2.0 * static_cast<double>(src.size() * sizeof(float)));  // read + write
}

// One op on n floats, touching `streams` arrays of n floats per call (for the rate). The op
// runs repeatedly on the same buffer, so each case is chosen to stay bounded and away from
// subnormals: norms and rope preserve the scale, softmax/silu/gelu map into small ranges,
// mul and scale use factors of +-1, add grows by at most 1 per call.
struct PointwiseCase {
  const char* name;
  size_t n;
  int streams;
  std::function<void(const KernelTable&, std::vector<float>& x, const std::vector<float>& other)> run;
};

void BM_Pointwise(benchmark::State& state, PointwiseCase c, CpuVariant variant) {
  const KernelTable& t = hearth::kernels::kernels_for(variant);
  std::vector<float> x = random_floats(c.n, 2, -4.0f, 4.0f);
  std::vector<float> other = random_floats(c.n, 3, -1.0f, 1.0f);
  for (float& o : other) o = o < 0.0f ? -1.0f : 1.0f;
  for (auto _ : state) {
    c.run(t, x, other);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, static_cast<double>(c.streams) * static_cast<double>(c.n * sizeof(float)));
}

std::vector<PointwiseCase> cases() {
  hearth::kernels::RopeParams rope_normal;
  rope_normal.rope_dims = 128;
  hearth::kernels::RopeParams rope_neox = rope_normal;
  rope_neox.style = hearth::kernels::RopeStyle::kNeox;
  return {
      {"RmsNorm/4096", 4096, 2,
       [](const KernelTable& t, std::vector<float>& x, const std::vector<float>& w) {
         t.rms_norm(x.data(), nullptr, x.data(), 4096, 1e-5f);
       }},
      {"LayerNorm/1024", 1024, 3,
       [](const KernelTable& t, std::vector<float>& x, const std::vector<float>& w) {
         t.layer_norm(x.data(), w.data(), nullptr, x.data(), 1024, 1e-12f);
       }},
      {"Softmax/32000", 32000, 2,
       [](const KernelTable& t, std::vector<float>& x, const std::vector<float>&) { t.softmax(x.data(), 32000); }},
      {"Softmax/512", 512, 2,
       [](const KernelTable& t, std::vector<float>& x, const std::vector<float>&) { t.softmax(x.data(), 512); }},
      {"Silu/14336", 14336, 2,
       [](const KernelTable& t, std::vector<float>& x, const std::vector<float>&) { t.silu(x.data(), 14336); }},
      {"Gelu/14336", 14336, 2,
       [](const KernelTable& t, std::vector<float>& x, const std::vector<float>&) { t.gelu(x.data(), 14336); }},
      {"Add/4096", 4096, 3,
       [](const KernelTable& t, std::vector<float>& x, const std::vector<float>& o) { t.add(x.data(), o.data(), 4096); }},
      {"Mul/14336", 14336, 3,
       [](const KernelTable& t, std::vector<float>& x, const std::vector<float>& o) { t.mul(x.data(), o.data(), 14336); }},
      {"Scale/4096", 4096, 2,
       [](const KernelTable& t, std::vector<float>& x, const std::vector<float>&) { t.scale(x.data(), -1.0f, 4096); }},
      {"RopeNormal/32x128", 4096, 2,
       [rope_normal](const KernelTable& t, std::vector<float>& x, const std::vector<float>&) {
         t.rope(x.data(), 32, 128, 1000, rope_normal);
       }},
      {"RopeNeox/32x128", 4096, 2,
       [rope_neox](const KernelTable& t, std::vector<float>& x, const std::vector<float>&) {
         t.rope(x.data(), 32, 128, 1000, rope_neox);
       }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("MemcpyBaseline", BM_MemcpyBaseline);
  for (const PointwiseCase& c : cases()) {
    for (CpuVariant v : hearth::kernels::supported_cpu_variants()) {
      const std::string name = std::string(c.name) + "/" + std::string(hearth::kernels::cpu_variant_name(v));
      benchmark::RegisterBenchmark(name.c_str(), BM_Pointwise, c, v)->MinTime(0.1);
    }
  }
  hearth::bench::VariantRatioReporter reporter("GB/s", "GB/s read+written relative to memcpy (%.2f GB/s) and to scalar, this run:");
  return hearth::bench::run_benchmarks(argc, argv, "bench_kernels_pointwise.json", reporter);
}
