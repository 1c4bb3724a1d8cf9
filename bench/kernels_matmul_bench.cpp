// Matrix x vector (1 token) and matrix x matrix (64 tokens) throughput of kernels::matmul on a
// 2048x2048 random weight matrix of each main type, for the scalar reference and every SIMD
// variant this CPU supports (as GGUF stores the rows), and for the best variant also in the
// interleaved layout the engine loads weights into (".../interleaved", the types that have one),
// with a memcpy of the F32 matrix size measured in the same run as the baseline. Reports GB/s of
// weight bytes read (once per call), prints each case's ratio to memcpy and to the scalar
// variant, and writes JSON (bench_kernels_matmul.json unless --benchmark_out is given).
// Threads: HEARTH_BENCH_THREADS (default 1, so that numbers are per core); rates use CPU time,
// which stays meaningful on a shared machine. HEARTH_BENCH_ROWS (default 2048) makes the weight
// matrix taller, e.g. past the caches to see memory-bound rates.
#include <benchmark/benchmark.h>

#include "bench_ratio_reporter.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/interleaved_layout.h"
#include "kernels/ops.h"
#include "tensor/quantize.h"

namespace {

using hearth::DType;
using hearth::kernels::CpuVariant;

constexpr int64_t kDim = 2048;  // columns (and rows unless HEARTH_BENCH_ROWS says otherwise)

int64_t matrix_rows() {
  static const int64_t rows = [] {
    const char* env = std::getenv("HEARTH_BENCH_ROWS");
    const int64_t r = env != nullptr ? std::atoll(env) : kDim;
    return r > 0 ? r : kDim;
  }();
  return rows;
}

const std::vector<float>& random_floats(size_t n, uint32_t seed, float sigma) {
  static std::map<std::pair<size_t, uint32_t>, std::vector<float>> cache;
  auto& v = cache[{n, seed}];
  if (v.empty()) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, sigma);
    v.resize(n);
    for (auto& x : v) x = dist(rng);
  }
  return v;
}

hearth::ThreadPool& pool() {
  static hearth::ThreadPool p([] {
    const char* env = std::getenv("HEARTH_BENCH_THREADS");
    return env != nullptr ? std::atoi(env) : 1;
  }());
  return p;
}

struct Matrix {
  std::vector<uint8_t> bytes;
  hearth::kernels::WeightView view;
};

const Matrix& matrix_of(DType type);

// The same matrix in the interleaved layout the engine loads weights into (as `hearth run` multiplies
// them), for the types whose kernels have one.
const Matrix& interleaved_matrix_of(DType type) {
  static std::map<DType, std::unique_ptr<Matrix>> cache;
  auto& m = cache[type];
  if (!m) {
    const Matrix& rows = matrix_of(type);
    m = std::make_unique<Matrix>();
    m->bytes.resize(rows.bytes.size());
    hearth::kernels::interleave_weight(rows.view, 0, rows.view.rows / hearth::kernels::kInterleavedPanelRows,
                                       m->bytes.data());
    m->view = rows.view;
    m->view.data = m->bytes.data();
    m->view.interleaved = true;
  }
  return *m;
}

const Matrix& matrix_of(DType type) {
  static std::map<DType, std::unique_ptr<Matrix>> cache;
  auto& m = cache[type];
  if (!m) {
    m = std::make_unique<Matrix>();
    const size_t row_bytes = *hearth::dtype_row_bytes(type, kDim);
    const int64_t rows = matrix_rows();
    m->bytes.resize(row_bytes * static_cast<size_t>(rows));
    const auto& w = random_floats(static_cast<size_t>(kDim * kDim), 1, 0.02f);
    for (int64_t r = 0; r < rows; ++r) {  // rows past kDim repeat the first kDim
      (void)hearth::quantize_row(type, w.data() + (r % kDim) * kDim, m->bytes.data() + r * row_bytes, kDim);
    }
    m->view = {type, m->bytes.data(), kDim, rows, row_bytes};
  }
  return *m;
}

void set_rate(benchmark::State& state, double bytes) {
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MemcpyBaseline(benchmark::State& state) {
  const auto& src = random_floats(static_cast<size_t>(kDim * kDim), 1, 0.02f);
  std::vector<float> dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, static_cast<double>(src.size() * sizeof(float)));
}

void BM_Matmul(benchmark::State& state, DType type, CpuVariant variant, int64_t n_tokens, bool interleaved) {
  if (auto s = hearth::kernels::set_cpu_variant_for_testing(variant); !s.ok()) {
    state.SkipWithError(s.error().message.c_str());
    return;
  }
  const Matrix& m = interleaved ? interleaved_matrix_of(type) : matrix_of(type);
  const auto& x = random_floats(static_cast<size_t>(kDim * n_tokens), 2, 1.0f);
  std::vector<float> y(static_cast<size_t>(matrix_rows() * n_tokens));
  hearth::kernels::MatmulScratch scratch;
  for (auto _ : state) {
    auto s = hearth::kernels::matmul(m.view, x.data(), n_tokens, y.data(), pool(), scratch);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(y.data());
  }
  set_rate(state, static_cast<double>(m.bytes.size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(n_tokens), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("MemcpyBaseline", BM_MemcpyBaseline);
  const DType types[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                         DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,
                         DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS,
                         DType::kMXFP4};
  for (int64_t tokens : {int64_t{1}, int64_t{64}}) {
    for (DType t : types) {
      for (CpuVariant v : hearth::kernels::supported_cpu_variants()) {
        const std::string name = std::string(tokens == 1 ? "Matvec/" : "Matmul64/") +
                                 std::string(hearth::dtype_name(t)) + "/" +
                                 std::string(hearth::kernels::cpu_variant_name(v));
        benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, t, v, tokens, false)->MinTime(0.2);
      }
      const CpuVariant best = hearth::kernels::supported_cpu_variants().back();
      const std::string inter = std::string(tokens == 1 ? "Matvec/" : "Matmul64/") + std::string(hearth::dtype_name(t)) +
                                "/" + std::string(hearth::kernels::cpu_variant_name(best)) + "/interleaved";
      const hearth::kernels::WeightView shape{t, nullptr, kDim, matrix_rows(), *hearth::dtype_row_bytes(t, kDim)};
      if (hearth::kernels::set_cpu_variant_for_testing(best).ok() && hearth::kernels::wants_interleaved(shape)) {
        benchmark::RegisterBenchmark(inter.c_str(), BM_Matmul, t, best, tokens, true)->MinTime(0.2);
      }
    }
  }
  hearth::bench::VariantRatioReporter reporter("GB/s", "weight GB/s relative to memcpy (%.2f GB/s) and to scalar, this run:");
  return hearth::bench::run_benchmarks(argc, argv, "bench_kernels_matmul.json", reporter);
}
