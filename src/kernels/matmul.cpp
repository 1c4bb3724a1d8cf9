// matmul and get_row: weight rows straight from the mmapped file, activations converted once
// per call into the scratch buffer. Where the active variant has a whole-matrix kernel for the
// weight type (GemmKernel), it runs over 16-row panels split across the pool; otherwise the
// activations become F16/BF16/Q8_0/Q8_1/Q8_K as the weight type asks and one vec_dot runs per
// (row, token) through the dispatch table (vec_dot_x4 for groups of 4 tokens where the variant
// has one), split over the pool by rows.
#include <algorithm>
#include <atomic>
#include <span>
#include <string>

#include "kernels/interleaved_layout.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "tensor/quantize.h"

namespace hearth::kernels {
namespace {

Status check_weight(const WeightView& w) {
  if (w.data == nullptr) return make_error(ErrorKind::kInvalidArgument, "weight has no data");
  if (w.cols <= 0 || w.rows < 0) {
    return make_error(ErrorKind::kInvalidArgument,
                      "weight shape " + std::to_string(w.cols) + "x" + std::to_string(w.rows) + " is invalid");
  }
  auto bytes = dtype_row_bytes(w.type, static_cast<uint64_t>(w.cols));
  if (!bytes.ok()) return bytes.error().with_context("weight row");
  if (*bytes != w.row_bytes) {
    return make_error(ErrorKind::kInvalidArgument, "weight row_bytes " + std::to_string(w.row_bytes) + " but a " +
                                                       std::string(dtype_name(w.type)) + " row of " +
                                                       std::to_string(w.cols) + " takes " + std::to_string(*bytes));
  }
  return ok_status();
}

// Rows handled together so that each token's activation row is reused from cache for several
// weight rows while a weight row stays in L1 across tokens.
constexpr int64_t kRowTile = 16;

// Batches this small are multiplied as decode steps: bound by memory, not by arithmetic.
constexpr int64_t kDecodeTokens = 2;
// Activation conversions of up to this many elements in all run on the calling thread.
constexpr int64_t kSerialConvertElements = 16384;
// A decode pass hands each thread ranges of 1 / (kDecodeShareDivisor * threads) of the panels
// left, but no fewer panels than 1 / (kDecodeMinRangesPerThread * threads) of the pass.
constexpr size_t kDecodeShareDivisor = 2;
constexpr size_t kDecodeMinRangesPerThread = 16;

// The whole-matrix path for several matrices, each over its own input: one activation
// conversion per distinct (input, activation layout), then one pass over the pool for the
// panels of all matrices. scratch.plan holds, per job, its activation buffer's offset and
// stride and whether it converts it (-1: a previous job with the same input did), then the
// jobs' first panels (one more entry: the total).
Status gemm_grouped(std::span<const GroupedMatmulJob> jobs, ThreadPool& pool, MatmulScratch& scratch) {
  const KernelTable& k = active_kernels();
  const size_t n_jobs = jobs.size();
  std::vector<int64_t>& plan = scratch.plan;
  plan.assign(4 * n_jobs + 1, 0);
  int64_t* act_offset = plan.data();
  int64_t* act_stride = act_offset + n_jobs;
  int64_t* converts = act_stride + n_jobs;
  int64_t* panel_start = converts + n_jobs;
  auto kern = [&](size_t j) -> const GemmKernel& { return k.gemm[static_cast<int>(jobs[j].w->type)]; };
  size_t total = 0;
  int64_t convert_rows = 0, max_tokens = 0;
  for (size_t j = 0; j < n_jobs; ++j) {
    const GemmKernel& g = kern(j);
    size_t same = 0;
    while (same < j && !(jobs[same].x == jobs[j].x && jobs[same].n_tokens == jobs[j].n_tokens &&
                         jobs[same].w->cols == jobs[j].w->cols && kern(same).prepare_act == g.prepare_act &&
                         kern(same).act_row_bytes == g.act_row_bytes)) {
      ++same;
    }
    if (same < j) {
      act_offset[j] = act_offset[same];
      act_stride[j] = act_stride[same];
      converts[j] = 0;
    } else {
      act_stride[j] = static_cast<int64_t>(g.act_row_bytes(jobs[j].w->cols));
      act_offset[j] = static_cast<int64_t>(total);
      total += static_cast<size_t>(act_stride[j]) * static_cast<size_t>(jobs[j].n_tokens);
      converts[j] = 1;
      convert_rows += jobs[j].n_tokens;
    }
    max_tokens = std::max(max_tokens, jobs[j].n_tokens);
    panel_start[j + 1] = panel_start[j] + (jobs[j].w->rows + kGemmPanelRows - 1) / kGemmPanelRows;
  }
  if (scratch.activations.size() < total + 64) scratch.activations.resize(total + 64);
  uint8_t* base = scratch.activations.data();
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  // Activation rows to convert, numbered across the converting jobs.
  auto convert = [&](size_t begin, size_t end) {
    size_t row0 = 0;
    for (size_t j = 0; j < n_jobs && row0 < end; ++j) {
      if (converts[j] == 0) continue;
      const auto n = static_cast<size_t>(jobs[j].n_tokens);
      const int64_t cols = jobs[j].w->cols;
      for (size_t t = std::max(begin, row0); t < std::min(end, row0 + n); ++t) {
        const size_t r = t - row0;
        kern(j).prepare_act(jobs[j].x + r * static_cast<size_t>(cols),
                            base + act_offset[j] + r * static_cast<size_t>(act_stride[j]), cols);
      }
      row0 += n;
    }
  };
  // Conversions run on the caller while they are small (a decode step's: one row, or the
  // rows of its chosen experts); handing them to the pool costs the threads a meeting.
  int64_t convert_elements = 0;
  for (size_t j = 0; j < n_jobs; ++j) convert_elements += converts[j] != 0 ? jobs[j].n_tokens * jobs[j].w->cols : 0;
  if (convert_rows <= kDecodeTokens || convert_elements <= kSerialConvertElements) {
    convert(0, static_cast<size_t>(convert_rows));
  } else {
    pool.parallel_for(static_cast<size_t>(convert_rows), [&](size_t begin, size_t end, int) { convert(begin, end); });
  }
  const auto total_panels = static_cast<size_t>(panel_start[n_jobs]);
  const bool decode = max_tokens <= kDecodeTokens;
  // Panels [begin, end) of the pass. At decode each job's last panel of the range prefetches,
  // as it reads, the panel this thread runs next: the next job's first panel within the range,
  // or `follow` after the range's last job (total_panels: none). warm: the panel at begin was
  // prefetched so by the call before.
  auto run_range = [&](size_t begin, size_t end, size_t follow, bool warm) {
    for (size_t j = 0; j < n_jobs; ++j) {
      const int64_t lo = std::max<int64_t>(static_cast<int64_t>(begin), panel_start[j]);
      const int64_t hi = std::min<int64_t>(static_cast<int64_t>(end), panel_start[j + 1]);
      if (lo >= hi) continue;
      const WeightView& w = *jobs[j].w;
      GemmArgs a;
      a.w = w.data;
      a.w_row_bytes = w.row_bytes;
      a.cols = w.cols;
      a.rows = w.rows;
      a.act = base + act_offset[j];
      a.act_stride = static_cast<size_t>(act_stride[j]);
      a.n_tokens = jobs[j].n_tokens;
      a.y = jobs[j].y;
      a.y_stride = w.rows;
      a.panel_begin = lo - panel_start[j];
      a.panel_end = hi - panel_start[j];
      const int64_t next = hi < static_cast<int64_t>(end) ? hi : static_cast<int64_t>(follow);
      if (decode && next < panel_start[n_jobs]) {
        size_t jn = j;
        while (panel_start[jn + 1] <= next) ++jn;
        const WeightView& nw = *jobs[jn].w;
        const int64_t first_row = (next - panel_start[jn]) * kGemmPanelRows;
        a.follow = nw.data + static_cast<size_t>(first_row) * nw.row_bytes;
        a.follow_bytes = static_cast<size_t>(std::min<int64_t>(kGemmPanelRows, nw.rows - first_row)) * nw.row_bytes;
      }
      a.first_prefetched = decode && (lo > static_cast<int64_t>(begin) || warm);
      (w.interleaved ? kern(j).run_interleaved : kern(j).run)(a);
    }
  };
  if (!decode) {
    // Prefill: panels handed out in chunks of about an eighth of a thread's share as threads
    // become free.
    const size_t grain = std::max<size_t>(1, total_panels / (8 * static_cast<size_t>(pool.size())));
    pool.parallel_for_dynamic(total_panels, grain,
                              [&](size_t begin, size_t end, int) { run_range(begin, end, total_panels, false); });
    return ok_status();
  }
  // Decode is bound by memory, so a thread should never wait for its next bytes, nor for the
  // other thread at the end of a pass. A thread claims its next range just before the last panel
  // of its current one, which then prefetches the next range's first panel as it reads (a cold
  // range start waits for memory before the kernel's prefetching gets ahead: with 8 fixed chunks
  // per thread that cost 10-40% of a 2048- or 512-row matrix, 2 threads on an AMD EPYC), and a
  // thread that another process keeps off its core holds back little besides its own range.
  // Ranges are a share of what is left, large at first and small at the end, so the threads
  // finish close together.
  std::atomic<size_t> next_panel{0};
  const size_t threads = static_cast<size_t>(pool.size());
  const size_t min_grain = std::max<size_t>(1, total_panels / (kDecodeMinRangesPerThread * threads));
  auto claim = [&](size_t& begin, size_t& end) {
    size_t at = next_panel.load(std::memory_order_relaxed);
    size_t take = 0;
    do {
      if (at >= total_panels) {
        begin = end = total_panels;
        return;
      }
      take = std::max(min_grain, (total_panels - at) / (kDecodeShareDivisor * threads));
    } while (!next_panel.compare_exchange_weak(at, at + take, std::memory_order_relaxed));
    begin = at;
    end = std::min(total_panels, at + take);
  };
  pool.parallel_for_dynamic(threads, 1, [&](size_t, size_t, int) {
    size_t begin = 0, end = 0;
    claim(begin, end);
    bool warm = false;
    while (begin < end) {
      const size_t last = end - 1;
      if (begin < last) run_range(begin, last, last, warm);
      size_t next_begin = 0, next_end = 0;
      claim(next_begin, next_end);
      run_range(last, end, next_begin, warm || begin < last);
      warm = next_begin < next_end;
      begin = next_begin;
      end = next_end;
    }
  });
  return ok_status();
}

bool has_gemm(const KernelTable& k, const WeightView& w) {
  const GemmKernel& g = k.gemm[static_cast<int>(w.type)];
  if (w.interleaved) return g.run_interleaved != nullptr;
  return g.run != nullptr && w.cols % g.cols_multiple == 0;
}

}  // namespace

Status matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
              MatmulScratch& scratch) {
  HEARTH_TRY(check_weight(w));
  if (n_tokens < 0) return make_error(ErrorKind::kInvalidArgument, "matmul: negative token count");
  const KernelTable& k = active_kernels();
  const VecDotFn dot = k.vec_dot[static_cast<int>(w.type)];
  const VecDot4Fn dot4 = k.vec_dot_x4[static_cast<int>(w.type)];
  if (dot == nullptr) {
    return make_error(ErrorKind::kUnsupported,
                      "matmul: weights of type " + std::string(dtype_name(w.type)) + " are not supported");
  }
  if (n_tokens == 0 || w.rows == 0) return ok_status();
  if (x == nullptr || y == nullptr) return make_error(ErrorKind::kInvalidArgument, "matmul: null input or output");
  if (has_gemm(k, w)) {
    const GroupedMatmulJob job{&w, x, n_tokens, y};
    return gemm_grouped(std::span<const GroupedMatmulJob>(&job, 1), pool, scratch);
  }
  if (w.interleaved) {
    return make_error(ErrorKind::kUnsupported, "matmul: the active kernels have no interleaved " +
                                                   std::string(dtype_name(w.type)) + " kernel");
  }
  const DType act_type = activation_type(w.type);
  const uint8_t* act = reinterpret_cast<const uint8_t*>(x);
  size_t act_row_bytes = static_cast<size_t>(w.cols) * sizeof(float);
  if (w.type != DType::kF32) {
    auto bytes = dtype_row_bytes(act_type, static_cast<uint64_t>(w.cols));
    if (!bytes.ok()) return bytes.error().with_context("matmul activations");
    act_row_bytes = *bytes;
    const size_t need = act_row_bytes * static_cast<size_t>(n_tokens);
    if (scratch.activations.size() < need) scratch.activations.resize(need);
    const QuantizeActFn convert = k.quantize_act[static_cast<int>(act_type)];
    uint8_t* dst = scratch.activations.data();
    const int64_t cols = w.cols;
    auto convert_rows = [&](size_t begin, size_t end, int) {
      for (size_t t = begin; t < end; ++t) convert(x + t * cols, dst + t * act_row_bytes, cols);
    };
    if (n_tokens == 1) {
      convert_rows(0, 1, 0);
    } else {
      pool.parallel_for(static_cast<size_t>(n_tokens), convert_rows);
    }
    act = dst;
  }
  const int64_t rows = w.rows;
  const int64_t cols = w.cols;
  pool.parallel_for(static_cast<size_t>(rows), [&](size_t begin, size_t end, int) {
    for (int64_t r0 = static_cast<int64_t>(begin); r0 < static_cast<int64_t>(end); r0 += kRowTile) {
      const int64_t r1 = std::min<int64_t>(r0 + kRowTile, static_cast<int64_t>(end));
      int64_t t = 0;
      if (dot4 != nullptr) {
        float out4[4];
        for (; t + 4 <= n_tokens; t += 4) {
          const uint8_t* a = act + t * act_row_bytes;
          for (int64_t r = r0; r < r1; ++r) {
            dot4(cols, w.data + r * w.row_bytes, a, act_row_bytes, out4);
            for (int k = 0; k < 4; ++k) y[(t + k) * rows + r] = out4[k];
          }
        }
      }
      for (; t < n_tokens; ++t) {
        const uint8_t* a = act + t * act_row_bytes;
        float* out = y + t * rows;
        for (int64_t r = r0; r < r1; ++r) out[r] = dot(cols, w.data + r * w.row_bytes, a);
      }
    }
  });
  return ok_status();
}

Status matmul_multi(std::span<const MatmulJob> jobs, const float* x, int64_t n_tokens, ThreadPool& pool,
                    MatmulScratch& scratch) {
  if (jobs.empty()) return ok_status();
  const KernelTable& k = active_kernels();
  bool together = jobs.size() <= 8 && n_tokens > 0;
  for (const auto& j : jobs) {
    if (j.w == nullptr) return make_error(ErrorKind::kInvalidArgument, "matmul_multi: job without weights");
    HEARTH_TRY(check_weight(*j.w));
    if (j.w->cols != jobs[0].w->cols) {
      return make_error(ErrorKind::kInvalidArgument, "matmul_multi: matrices of different widths share an input");
    }
    together = together && has_gemm(k, *j.w) && j.w->rows > 0 && j.y != nullptr;
  }
  if (n_tokens < 0) return make_error(ErrorKind::kInvalidArgument, "matmul: negative token count");
  if (together && x != nullptr) {
    GroupedMatmulJob grouped[8];
    for (size_t j = 0; j < jobs.size(); ++j) grouped[j] = {jobs[j].w, x, n_tokens, jobs[j].y};
    return gemm_grouped(std::span<const GroupedMatmulJob>(grouped, jobs.size()), pool, scratch);
  }
  for (const auto& j : jobs) HEARTH_TRY(matmul(*j.w, x, n_tokens, j.y, pool, scratch));
  return ok_status();
}

Status matmul_grouped(std::span<const GroupedMatmulJob> jobs, ThreadPool& pool, MatmulScratch& scratch) {
  const KernelTable& k = active_kernels();
  bool together = !jobs.empty();
  for (const auto& j : jobs) {
    if (j.w == nullptr) return make_error(ErrorKind::kInvalidArgument, "matmul_grouped: job without weights");
    HEARTH_TRY(check_weight(*j.w));
    if (j.n_tokens < 0) return make_error(ErrorKind::kInvalidArgument, "matmul: negative token count");
    together = together && has_gemm(k, *j.w) && j.w->rows > 0 && j.n_tokens > 0 && j.x != nullptr && j.y != nullptr;
  }
  if (together) return gemm_grouped(jobs, pool, scratch);
  for (const auto& j : jobs) HEARTH_TRY(matmul(*j.w, j.x, j.n_tokens, j.y, pool, scratch));
  return ok_status();
}

Status get_row(const WeightView& w, int64_t row, float* out) {
  HEARTH_TRY(check_weight(w));
  if (row < 0 || row >= w.rows) {
    return make_error(ErrorKind::kOutOfRange,
                      "row " + std::to_string(row) + " outside a table of " + std::to_string(w.rows) + " rows");
  }
  if (w.interleaved) {
    thread_local std::vector<uint8_t> gguf_row;
    if (gguf_row.size() < w.row_bytes) gguf_row.resize(w.row_bytes);
    deinterleave_row(w.type, w.data, w.row_bytes, w.cols, row, gguf_row.data());
    return dequantize_row(w.type, gguf_row.data(), out, w.cols);
  }
  return dequantize_row(w.type, w.data + static_cast<size_t>(row) * w.row_bytes, out, w.cols);
}

bool wants_interleaved(const WeightView& w) {
  return !w.interleaved && active_kernels().gemm[static_cast<int>(w.type)].run_interleaved != nullptr &&
         interleaved_layout_supports(w.type, w.cols, w.rows);
}

void interleave_weight(const WeightView& w, int64_t panel_begin, int64_t panel_end, uint8_t* dst) {
  const auto fast = active_kernels().gemm[static_cast<int>(w.type)].interleave_panel;
  const size_t panel_bytes = static_cast<size_t>(kInterleavedPanelRows) * w.row_bytes;
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    uint8_t* out = dst + static_cast<size_t>(p) * panel_bytes;
    if (fast != nullptr) {
      fast(w.data, w.row_bytes, w.cols, p, out);
    } else {
      interleave_panel(w.type, w.data, w.row_bytes, w.cols, p, out);
    }
  }
}

}  // namespace hearth::kernels
