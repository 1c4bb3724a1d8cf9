// Attention kernels at long context on a 1B-class shape (32 query heads, 8 KV heads, head size
// 64, F16 paged cache of 16-token blocks), single-threaded, active CPU variant: prefill of the
// last `chunk` tokens of an n-token prompt by the per-token path (attention_heads, one token at a
// time, as decode does) and by the flash tile path (attention_tile, 16-token tiles per KV head),
// and one decode step at depth n (per-token kernel and tile kernel). Reports GFLOP/s (4 * head_dim * n_head per visible key); rates
// use CPU time, which stays meaningful on a shared machine. Run with --benchmark_filter to pick.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/ops.h"
#include "tensor/dtype.h"

namespace {

using namespace hearth::kernels;

constexpr int kHeads = 32, kKvHeads = 8, kDim = 64, kBlock = 16, kChunk = 256;

struct Fixture {
  std::vector<std::vector<uint8_t>> k_blocks, v_blocks;
  std::vector<const uint8_t*> k_ptrs, v_ptrs;
  KvSpan span;
  AttentionParams p;
  std::vector<float> q, out, scratch;

  explicit Fixture(int n) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const size_t row = kKvHeads * kDim * 2;
    std::vector<float> x(kKvHeads * kDim);
    for (int b = 0; b < (n + kBlock - 1) / kBlock; ++b) {
      k_blocks.emplace_back(row * kBlock);
      v_blocks.emplace_back(row * kBlock);
      for (int j = 0; j < kBlock; ++j) {
        for (auto& v : x) v = dist(rng);
        (void)kv_store_row(hearth::DType::kF16, x.data(), k_blocks.back().data() + j * row, kKvHeads * kDim);
        for (auto& v : x) v = dist(rng);
        (void)kv_store_row(hearth::DType::kF16, x.data(), v_blocks.back().data() + j * row, kKvHeads * kDim);
      }
    }
    for (auto& b : k_blocks) k_ptrs.push_back(b.data());
    for (auto& b : v_blocks) v_ptrs.push_back(b.data());
    span = KvSpan{k_ptrs.data(), v_ptrs.data(), kBlock, row, row, hearth::DType::kF16};
    p.n_head = kHeads;
    p.n_head_kv = kKvHeads;
    p.head_dim_k = p.head_dim_v = kDim;
    p.scale = 0.125f;
    q.resize(static_cast<size_t>(kChunk) * kHeads * kDim);
    for (auto& v : q) v = dist(rng);
    out.resize(q.size());
  }
};

double chunk_flops(int n) {
  double keys = 0;
  for (int t = n - kChunk; t < n; ++t) keys += t + 1;
  return keys * 4.0 * kDim * kHeads;
}

void BM_PrefillPerToken(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Fixture f(n);
  for (auto _ : state) {
    for (int t = 0; t < kChunk; ++t) {
      attention(f.q.data() + t * kHeads * kDim, n - kChunk + t, n - kChunk + t + 1, f.span, f.p,
                f.out.data() + t * kHeads * kDim, f.scratch);
    }
    benchmark::DoNotOptimize(f.out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(chunk_flops(n) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_PrefillTile(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Fixture f(n);
  for (auto _ : state) {
    for (int t0 = 0; t0 < kChunk; t0 += 16) {
      for (int kvh = 0; kvh < kKvHeads; ++kvh) {
        AttentionTile tile{f.q.data() + t0 * kHeads * kDim, kHeads * kDim, f.out.data() + t0 * kHeads * kDim,
                           kHeads * kDim, n - kChunk + t0, 16, n - kChunk + t0 + 16, kvh};
        attention_tile(tile, f.span, f.p, f.scratch);
      }
    }
    benchmark::DoNotOptimize(f.out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(chunk_flops(n) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DecodeStep(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Fixture f(n);
  for (auto _ : state) {
    attention(f.q.data(), n - 1, n, f.span, f.p, f.out.data(), f.scratch);
    benchmark::DoNotOptimize(f.out.data());
  }
  const double kv_bytes = static_cast<double>(n) * kKvHeads * kDim * 2 * 2;
  state.counters["GB/s"] = benchmark::Counter(kv_bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// The same step through the tile kernel (one query token, 4 of a vector's rows used).
void BM_DecodeTile(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Fixture f(n);
  for (auto _ : state) {
    for (int kvh = 0; kvh < kKvHeads; ++kvh) {
      AttentionTile tile{f.q.data(), kHeads * kDim, f.out.data(), kHeads * kDim, n - 1, 1, n, kvh};
      attention_tile(tile, f.span, f.p, f.scratch);
    }
    benchmark::DoNotOptimize(f.out.data());
  }
  const double kv_bytes = static_cast<double>(n) * kKvHeads * kDim * 2 * 2;
  state.counters["GB/s"] = benchmark::Counter(kv_bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_PrefillPerToken)->Arg(1024)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefillTile)->Arg(1024)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeStep)->Arg(4096)->Arg(16384)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeTile)->Arg(4096)->Arg(16384)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
