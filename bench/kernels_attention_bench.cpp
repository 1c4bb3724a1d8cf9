// Attention kernels at long context on a 1B-class shape (32 query heads, 8 KV heads, head size
// 64, F16 paged cache of 16-token blocks, one layer's alone: each block's K rows then its V
// rows, in one huge-page region), single-threaded, active CPU variant: prefill of the
// last `chunk` tokens of an n-token prompt by the per-token path (attention_heads, one token at a
// time, as decode does) and by the flash tile path (attention_tile, 16-token tiles per KV head),
// and one decode step at depth n (per-token kernel, for F16, Q8_0 and Q4_0 caches, and tile kernel). Reports GFLOP/s (4 * head_dim * n_head per visible key); rates
// use CPU time, which stays meaningful on a shared machine. Run with --benchmark_filter to pick.
// BM_DecodePoolLayers times one token's decode over 16 layers held in a real KvBlockPool, so the
// rows lie in memory as the engine's do (the one-layer region above flatters the decode kernel).
//
// Beside them, the two figures prefill attention is judged against, same thread, same run: the
// matrix kernels of one llama-1b layer (Q4_0 weights of its shapes, interleaved as the engine
// runs them, micro-batches of 128 or 512 tokens; GFLOP/s counts 2 * rows * cols per token) and
// the machine's F32 FMA ceiling (independent FMAs on the widest vectors the CPU has), which bounds
// any F32 attention kernel.
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/ops.h"
#include "kv/kv_block_pool.h"
#include "model/forward.h"
#include "tensor/dtype.h"
#include "tensor/quantize.h"
#include "util/anonymous_memory.h"
#include "util/thread_pool.h"

namespace {

using namespace hearth::kernels;

constexpr int kHeads = 32, kKvHeads = 8, kDim = 64, kBlock = 16, kChunk = 256;

struct Fixture {
  hearth::AnonymousMemory arena;  // block b: its K rows, then its V rows (as the engine's pool)
  std::vector<const uint8_t*> k_ptrs, v_ptrs;
  KvSpan span;
  AttentionParams p;
  std::vector<float> q, out, scratch;
  double kv_bytes = 0;  // K and V bytes of n keys

  explicit Fixture(int n, hearth::DType type = hearth::DType::kF16, bool by_head = false) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const size_t row = *hearth::dtype_row_bytes(type, kKvHeads * kDim);
    std::vector<float> x(kKvHeads * kDim);
    const int n_blocks = (n + kBlock - 1) / kBlock;
    auto region = hearth::AnonymousMemory::allocate(2 * row * kBlock * static_cast<size_t>(n_blocks));
    if (!region.ok()) std::abort();
    arena = std::move(*region);
    for (int b = 0; b < n_blocks; ++b) {
      uint8_t* k = arena.data() + 2 * row * kBlock * static_cast<size_t>(b);
      k_ptrs.push_back(k);
      v_ptrs.push_back(k + row * kBlock);
      for (int j = 0; j < kBlock; ++j) {
        for (auto& v : x) v = dist(rng);
        if (type == hearth::DType::kBF16) {  // pairs (ops.h)
          kv_store_key_paired(x.data(), k, kBlock, j, kKvHeads * kDim);
        } else if (by_head) {
          kv_store_key_transposed(x.data(), k, kBlock, j, kKvHeads * kDim);
        } else {
          (void)kv_store_row(type, x.data(), k + j * row, kKvHeads * kDim);
        }
        for (auto& v : x) v = dist(rng);
        if (type == hearth::DType::kBF16) {
          kv_store_value_paired(x.data(), k + row * kBlock, kBlock, kDim, j, kKvHeads * kDim);
        } else if (by_head) {
          kv_store_value_by_head(x.data(), k + row * kBlock, kBlock, kDim, j, kKvHeads * kDim);
        } else {
          (void)kv_store_row(type, x.data(), k + (kBlock + j) * row, kKvHeads * kDim);
        }
      }
    }
    span = KvSpan{k_ptrs.data(), v_ptrs.data(), kBlock, row, row, type, by_head};
    kv_bytes = 2.0 * static_cast<double>(row) * n;
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

// The 16-bit caches range 1 of BM_PrefillTile and BM_DecodePoolLayers picks: F16 with K in rows
// (0) or transposed (1, as the engine keeps an F16 cache), BF16 in pairs (2).
struct Cache16 {
  hearth::DType type;
  bool by_head;
  const char* label;
};
Cache16 cache16(benchmark::State& state) {
  static constexpr Cache16 kinds[] = {{hearth::DType::kF16, false, "F16 K rows"},
                                      {hearth::DType::kF16, true, "F16 by head"},
                                      {hearth::DType::kBF16, false, "BF16 pairs"}};
  const Cache16 c = kinds[state.range(1)];
  state.SetLabel(c.label);
  return c;
}

void BM_PrefillTile(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Cache16 c = cache16(state);
  Fixture f(n, c.type, c.by_head);
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

// The cache kinds range 1 of the decode benchmarks picks: F16, Q8_0, Q4_0, F16 with K stored
// transposed (KvSpan::by_head, as the engine keeps an F16 cache), and BF16 (pairs).
Fixture cache_kind_fixture(benchmark::State& state, int n) {
  const hearth::DType types[] = {hearth::DType::kF16, hearth::DType::kQ8_0, hearth::DType::kQ4_0, hearth::DType::kF16,
                                 hearth::DType::kBF16};
  const auto kind = static_cast<size_t>(state.range(1));
  state.SetLabel(std::string(hearth::dtype_name(types[kind])) + (kind == 3 ? " by head" : ""));
  return Fixture(n, types[kind], kind == 3);
}

// One decode step at depth n (range 0) over a cache of kind range 1 (cache_kind_fixture);
// GB/s counts the K and V bytes the step reads.
void BM_DecodeStep(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Fixture f = cache_kind_fixture(state, n);
  for (auto _ : state) {
    attention(f.q.data(), n - 1, n, f.span, f.p, f.out.data(), f.scratch);
    benchmark::DoNotOptimize(f.out.data());
  }
  state.counters["GB/s"] = benchmark::Counter(f.kv_bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// One decode step at depth n as the engine runs it there: parts of kAttentionKeyPart keys (one
// thread here), then the merge of the partial softmaxes, head by head.
class PartedStep {
 public:
  explicit PartedStep(int n)
      : n_(n), n_parts_((n + kPart - 1) / kPart), outs_(static_cast<size_t>(n_parts_) * kHeads * kDim),
        stats_(static_cast<size_t>(n_parts_) * 2 * kHeads), parts_(n_parts_), part_stats_(n_parts_) {}
  void run(const float* q, const KvSpan& span, const AttentionParams& p, std::vector<float>& scratch, float* out) {
    for (int i = 0; i < n_parts_; ++i) run_part(i, q, span, p, scratch);
    merge(out);
  }
  // The parts spread over a pool's threads as the engine spreads them (claimed one at a time,
  // the last keys first), each thread with its own scratch; then the merge on the caller.
  void run(const float* q, const KvSpan& span, const AttentionParams& p, std::vector<std::vector<float>>& scratch,
           hearth::ThreadPool& pool, float* out) {
    pool.parallel_for_dynamic(static_cast<size_t>(n_parts_), 1, [&](size_t begin, size_t end, int thread) {
      for (size_t i = begin; i < end; ++i) run_part(n_parts_ - 1 - static_cast<int>(i), q, span, p, scratch[thread]);
    });
    merge(out);
  }

 private:
  void run_part(int i, const float* q, const KvSpan& span, const AttentionParams& p, std::vector<float>& scratch) {
    const KeyPart part{i * kPart, (i + 1) * kPart, stats_.data() + static_cast<size_t>(i) * 2 * kHeads};
    attention_heads_part(q, n_ - 1, n_, span, p, 0, kHeads, part, outs_.data() + static_cast<size_t>(i) * kHeads * kDim,
                         scratch);
  }
  void merge(float* out) {
    for (int h = 0; h < kHeads; ++h) {
      for (int i = 0; i < n_parts_; ++i) {
        parts_[i] = outs_.data() + (static_cast<size_t>(i) * kHeads + h) * kDim;
        part_stats_[i] = stats_.data() + static_cast<size_t>(i) * 2 * kHeads + 2 * h;
      }
      attention_merge(n_parts_, parts_.data(), part_stats_.data(), kDim, out + h * kDim);
    }
  }

  static constexpr int kPart = hearth::model::kAttentionKeyPart;
  int n_, n_parts_;
  std::vector<float> outs_, stats_;
  std::vector<const float*> parts_, part_stats_;
};

// The step as the engine runs it at depth (PartedStep); the cache type as BM_DecodeStep.
void BM_DecodeParts(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Fixture f = cache_kind_fixture(state, n);
  PartedStep step(n);
  for (auto _ : state) {
    step.run(f.q.data(), f.span, f.p, f.scratch, f.out.data());
    benchmark::DoNotOptimize(f.out.data());
  }
  state.counters["GB/s"] = benchmark::Counter(f.kv_bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// One token's decode attention over every layer of a llama-1b-shaped cache (16 layers, F16)
// held in the engine's own KV block pool, so the rows sit in memory as decode meets them (each
// layer's among the other layers' in every chunk; Fixture gives one layer a region of its own),
// and each layer's step runs as the engine runs it at depth (parts of kAttentionKeyPart keys,
// then the merge). The 16 layers' KV (8 MiB each at 4k keys) comes from memory, not cache, as
// in a real decode step. GB/s counts the K and V bytes of all 16 layers. range 1: the cache
// (Cache16: F16 with K in rows or transposed, BF16 pairs). range 2: threads (1, or 2
// as the engine at depth: the parts of each layer claimed by both, then the merge), so CPU time
// is not the step's time: rates here use real time.
void BM_DecodePoolLayers(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Cache16 c = cache16(state);
  constexpr int kLayers = 16;
  hearth::kv::KvLayout layout;
  layout.n_layers = kLayers;
  layout.k_row_elems = layout.v_row_elems = kKvHeads * kDim;
  layout.block_tokens = kBlock;
  layout.type = c.type;
  layout.by_head = c.by_head;
  hearth::kv::KvPoolOptions opts;
  opts.background_commit = false;
  const int n_blocks = (n + kBlock - 1) / kBlock;
  auto pool = hearth::kv::KvBlockPool::create(layout, n_blocks, opts);
  if (!pool.ok()) std::abort();
  Fixture one(kBlock, c.type, c.by_head);  // one block of random rows, copied into every block
  const size_t run = pool->k_row_bytes() * kBlock;
  std::vector<std::vector<const uint8_t*>> k_ptrs(kLayers), v_ptrs(kLayers);
  for (int b = 0; b < n_blocks; ++b) {
    const int32_t block = pool->kv_block_alloc().value();
    for (int l = 0; l < kLayers; ++l) {
      std::memcpy(pool->k_block(l, block), one.k_ptrs[0], run);
      std::memcpy(pool->v_block(l, block), one.v_ptrs[0], run);
      k_ptrs[l].push_back(pool->k_block(l, block));
      v_ptrs[l].push_back(pool->v_block(l, block));
    }
  }
  PartedStep step(n);
  const int threads = static_cast<int>(state.range(2));
  hearth::ThreadPool threads_pool(threads);
  std::vector<std::vector<float>> scratch(threads);
  for (auto _ : state) {
    for (int l = 0; l < kLayers; ++l) {
      const KvSpan span{k_ptrs[l].data(), v_ptrs[l].data(), kBlock, pool->k_row_bytes(), pool->v_row_bytes(),
                        c.type, c.by_head};
      if (threads == 1) {
        step.run(one.q.data(), span, one.p, one.scratch, one.out.data());
      } else {
        step.run(one.q.data(), span, one.p, scratch, threads_pool, one.out.data());
      }
    }
    benchmark::DoNotOptimize(one.out.data());
  }
  const double kv_bytes = static_cast<double>(n) * kLayers * 2.0 * static_cast<double>(pool->k_row_bytes());
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

// The matrices of one llama-1b layer (n_embd 2048, 8 KV heads of 64, n_ff 8192) as Q4_0 with
// random weights, interleaved when the active kernels want it (as the engine loads them), run
// as the engine's prefill runs them on a micro-batch of range(0) tokens: Q, K and V in one
// matmul_multi, the output projection, gate and up in one matmul_multi, down. One thread.
void BM_PrefillMatmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  constexpr int64_t kEmbd = 2048, kKv = 512, kFf = 8192;
  struct Shape {
    int64_t rows, cols;
  };
  const Shape shapes[] = {{kEmbd, kEmbd}, {kKv, kEmbd}, {kKv, kEmbd}, {kEmbd, kEmbd}, {kFf, kEmbd}, {kFf, kEmbd}, {kEmbd, kFf}};
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<WeightView> w;
  double flops_per_token = 0;
  for (const Shape& s : shapes) {
    const size_t row_bytes = *hearth::dtype_row_bytes(hearth::DType::kQ4_0, s.cols);
    std::vector<uint8_t> gguf(row_bytes * static_cast<size_t>(s.rows));
    std::vector<float> row(static_cast<size_t>(s.cols));
    for (int64_t r = 0; r < s.rows; ++r) {
      for (auto& x : row) x = dist(rng);
      (void)hearth::quantize_row(hearth::DType::kQ4_0, row.data(), gguf.data() + r * row_bytes, s.cols);
    }
    WeightView v{hearth::DType::kQ4_0, gguf.data(), s.cols, s.rows, row_bytes};
    if (wants_interleaved(v)) {
      std::vector<uint8_t> inter(gguf.size());
      interleave_weight(v, 0, s.rows / 16, inter.data());
      gguf = std::move(inter);
      v.interleaved = true;
    }
    bytes.push_back(std::move(gguf));
    v.data = bytes.back().data();
    w.push_back(v);
    flops_per_token += 2.0 * static_cast<double>(s.rows) * static_cast<double>(s.cols);
  }
  std::uniform_real_distribution<float> act(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * kFf)), q(static_cast<size_t>(n * kEmbd)), k(static_cast<size_t>(n * kKv)),
      v(static_cast<size_t>(n * kKv)), o(static_cast<size_t>(n * kEmbd)), gate(static_cast<size_t>(n * kFf)),
      up(static_cast<size_t>(n * kFf));
  for (auto& e : x) e = act(rng);
  hearth::ThreadPool pool(1);
  MatmulScratch scratch;
  const MatmulJob qkv[] = {{&w[0], q.data()}, {&w[1], k.data()}, {&w[2], v.data()}};
  const MatmulJob gate_up[] = {{&w[4], gate.data()}, {&w[5], up.data()}};
  for (auto _ : state) {
    (void)matmul_multi(qkv, x.data(), n, pool, scratch);
    (void)matmul(w[3], x.data(), n, o.data(), pool, scratch);
    (void)matmul_multi(gate_up, x.data(), n, pool, scratch);
    (void)matmul(w[6], x.data(), n, o.data(), pool, scratch);
    benchmark::DoNotOptimize(o.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_token * static_cast<double>(n) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// The F32 FMA ceiling of one core: 16 (AVX2: 12) independent FMA chains on the widest vectors
// (enough to cover the FMA latency on x86 cores with two FMA pipes); returns the FLOPs done (2
// per lane per FMA).
__attribute__((target("avx512f"))) double fma_peak_avx512(int64_t iters) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  for (int i = 1; i < 16; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  alignas(64) float lanes[16];  // summed here: GCC 12 warns inside _mm512_reduce_add_ps (-Wuninitialized)
  _mm512_store_ps(lanes, acc[0]);
  float out = 0.0f;
  for (float x : lanes) out += x;
  benchmark::DoNotOptimize(out);
  return 2.0 * 16 * 16 * static_cast<double>(iters);
}
__attribute__((target("avx2,fma"))) double fma_peak_avx2(int64_t iters) {
  __m256 acc[12];  // 12 chains: 16 ymm registers hold them and the two operands
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  for (int i = 1; i < 12; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  float out[8];
  _mm256_storeu_ps(out, acc[0]);
  benchmark::DoNotOptimize(out[0]);
  return 2.0 * 8 * 12 * static_cast<double>(iters);
}

void BM_F32FmaPeak(benchmark::State& state) {
  const bool wide = hearth::kernels::cpu_variant_supported(hearth::kernels::CpuVariant::kAvx512);
  if (!wide && !hearth::kernels::cpu_variant_supported(hearth::kernels::CpuVariant::kAvx2)) {
    state.SkipWithError("no FMA on this CPU");
    return;
  }
  state.SetLabel(wide ? "avx512" : "avx2");
  constexpr int64_t kIters = 1 << 20;
  double flops = 0;
  for (auto _ : state) flops = wide ? fma_peak_avx512(kIters) : fma_peak_avx2(kIters);
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_PrefillPerToken)->Arg(1024)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefillTile)->ArgsProduct({{1024, 4096, 16384}, {0, 1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeStep)->ArgsProduct({{256, 512, 4096, 16384, 32768}, {0, 1, 2, 3, 4}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeParts)->ArgsProduct({{4096, 16384, 32768}, {0, 1, 2, 3, 4}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodePoolLayers)
    ->ArgsProduct({{4096, 16384, 32768}, {0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DecodeTile)->Arg(4096)->Arg(16384)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrefillMatmul)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_F32FmaPeak)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
