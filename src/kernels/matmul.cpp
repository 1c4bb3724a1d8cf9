// matmul and get_row: weight rows straight from the mmapped file, activations converted once
// per call into the scratch buffer. Where the active variant has a whole-matrix kernel for the
// weight type (GemmKernel), it runs over 16-row panels split across the pool; otherwise the
// activations become F16/BF16/Q8_0/Q8_1/Q8_K as the weight type asks and one vec_dot runs per
// (row, token) through the dispatch table (vec_dot_x4 for groups of 4 tokens where the variant
// has one), split over the pool by rows.
#include <algorithm>
#include <string>

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

Status gemm_matmul(const GemmKernel& g, const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
                   MatmulScratch& scratch) {
  const size_t stride = g.act_row_bytes(w.cols);
  const size_t need = stride * static_cast<size_t>(n_tokens) + 64;
  if (scratch.activations.size() < need) scratch.activations.resize(need);
  uint8_t* act = scratch.activations.data();
  act += (64 - reinterpret_cast<uintptr_t>(act) % 64) % 64;
  const int64_t cols = w.cols;
  if (n_tokens == 1) {
    g.prepare_act(x, act, cols);
  } else {
    pool.parallel_for(static_cast<size_t>(n_tokens), [&](size_t begin, size_t end, int) {
      for (size_t t = begin; t < end; ++t) g.prepare_act(x + t * cols, act + t * stride, cols);
    });
  }
  GemmArgs a;
  a.w = w.data;
  a.w_row_bytes = w.row_bytes;
  a.cols = w.cols;
  a.rows = w.rows;
  a.act = act;
  a.act_stride = stride;
  a.n_tokens = n_tokens;
  a.y = y;
  a.y_stride = w.rows;
  const int64_t panels = (w.rows + kGemmPanelRows - 1) / kGemmPanelRows;
  pool.parallel_for(static_cast<size_t>(panels), [&](size_t begin, size_t end, int) {
    GemmArgs part = a;
    part.panel_begin = static_cast<int64_t>(begin);
    part.panel_end = static_cast<int64_t>(end);
    g.run(part);
  });
  return ok_status();
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
  if (const GemmKernel& g = k.gemm[static_cast<int>(w.type)]; g.run != nullptr && w.cols % g.cols_multiple == 0) {
    return gemm_matmul(g, w, x, n_tokens, y, pool, scratch);
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

Status get_row(const WeightView& w, int64_t row, float* out) {
  HEARTH_TRY(check_weight(w));
  if (row < 0 || row >= w.rows) {
    return make_error(ErrorKind::kOutOfRange,
                      "row " + std::to_string(row) + " outside a table of " + std::to_string(w.rows) + " rows");
  }
  return dequantize_row(w.type, w.data + static_cast<size_t>(row) * w.row_bytes, out, w.cols);
}

}  // namespace hearth::kernels
