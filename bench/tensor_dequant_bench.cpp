// Dequantization throughput of the scalar reference code, per type, on a 4096x256 random
// tensor, with a memcpy of the F32 output size measured in the same run as the baseline.
// Reports GB/s of output (floats written) and of input (quantized bytes read), prints each
// type's ratio to memcpy, and writes JSON (bench_tensor_dequant.json unless
// --benchmark_out is given).
#include <benchmark/benchmark.h>

#include "bench_ratio_reporter.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tensor/quantize.h"

namespace {

constexpr int64_t kRows = 4096;
constexpr int64_t kCols = 256;
constexpr int64_t kElements = kRows * kCols;

const std::vector<float>& random_weights() {
  static const std::vector<float> w = [] {
    std::mt19937 rng(42);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<float> v(kElements);
    for (auto& x : v) x = dist(rng);
    return v;
  }();
  return w;
}

void set_rates(benchmark::State& state, double in_bytes, double out_bytes) {
  state.counters["out_GB/s"] = benchmark::Counter(out_bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["in_GB/s"] = benchmark::Counter(in_bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MemcpyBaseline(benchmark::State& state) {
  const auto& src = random_weights();
  std::vector<float> dst(kElements);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kElements * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_rates(state, kElements * sizeof(float), kElements * sizeof(float));
}

void BM_Dequantize(benchmark::State& state, hearth::DType type) {
  const auto bytes = hearth::dtype_row_bytes(type, kElements);
  if (!bytes.ok()) {
    state.SkipWithError(bytes.error().message.c_str());
    return;
  }
  std::vector<uint32_t> packed((*bytes + 3) / 4);
  if (auto s = hearth::quantize_row(type, random_weights().data(), packed.data(), kElements); !s.ok()) {
    state.SkipWithError(s.error().message.c_str());
    return;
  }
  std::vector<float> out(kElements);
  for (auto _ : state) {
    auto s = hearth::dequantize_row(type, packed.data(), out.data(), kElements);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_rates(state, static_cast<double>(*bytes), kElements * sizeof(float));
}

// Output rates relative to memcpy, printed after the usual console table.
class RatioReporter : public hearth::bench::RatioReporter {
 public:
  RatioReporter() : hearth::bench::RatioReporter("out_GB/s", "output GB/s relative to memcpy (%.2f GB/s) in this run:") {}
};

}  // namespace

int main(int argc, char** argv) {
  using hearth::DType;
  benchmark::RegisterBenchmark("MemcpyBaseline", BM_MemcpyBaseline)->UseRealTime();
  for (DType t : {DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                  DType::kQ8_0, DType::kQ8_1, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K,
                  DType::kQ6_K, DType::kQ8_K, DType::kIQ4_NL, DType::kIQ4_XS, DType::kMXFP4}) {
    benchmark::RegisterBenchmark(("Dequantize/" + std::string(hearth::dtype_name(t))).c_str(), BM_Dequantize, t)->UseRealTime();
  }
  RatioReporter reporter;
  return hearth::bench::run_benchmarks(argc, argv, "bench_tensor_dequant.json", reporter);
}
