// AVX-512 whole-matrix kernel for F16 weights. Activations are rounded to F16 (as the reference
// converts them) and kept as floats. F16 rows need no per-block scales, so the kernel works on
// rows as stored: a tile of 4 rows x up to 6 tokens keeps one 16-lane accumulator per (row,
// token), each FMA adding 16 columns; at the end of every run of 512 columns the lanes are
// summed (in a fixed order) into the (row, token) total. The operations for one (row, token)
// do not depend on the tile, so batches give the numbers single tokens give.
#include <immintrin.h>

#include <algorithm>

#include "kernels/kernel_table.h"

namespace hearth::kernels {
namespace {

constexpr int64_t kColsPerStep = 16;
constexpr int64_t kRunCols = 512;  // columns per run: a panel's run of weights stays in L1
constexpr int kTileRows = 4;
constexpr int kTileTokens = 6;

size_t f16_act_row_bytes(int64_t cols) { return static_cast<size_t>((4 * cols + 63) / 64 * 64); }

void prepare_act_f16(const float* x, void* dst, int64_t cols) {
  float* out = static_cast<float*>(dst);
  int64_t i = 0;
  for (; i + 16 <= cols; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(h));
  }
  for (; i < cols; ++i) out[i] = _cvtsh_ss(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT));
}

// sums[t * 16 + r] += dot(row r, token t) over columns [c0, c0 + n) for R rows and T tokens.
template <int R, int T>
void tile_f16(const uint8_t* const* rows, const float* const* x, int64_t c0, int64_t n, int row0, float* sums) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t c = c0; c < c0 + n; c += kColsPerStep) {
    __m512 w[R];
    for (int r = 0; r < R; ++r) {
      w[r] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + 2 * c)));
    }
    for (int t = 0; t < T; ++t) {
      const __m512 a = _mm512_loadu_ps(x[t] + c);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(w[r], a, acc[r][t]);
    }
  }
  // Written out first and summed from memory: reducing straight from acc makes GCC keep acc in
  // memory inside the loop above.
  alignas(64) float lanes[R * T * 16];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) _mm512_store_ps(lanes + 16 * (T * r + t), acc[r][t]);
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) sums[16 * t + row0 + r] += _mm512_reduce_add_ps(_mm512_load_ps(lanes + 16 * (T * r + t)));
  }
}

template <int T>
void tile_rows(const uint8_t* const* rows, const float* const* x, int64_t c0, int64_t n, float* sums) {
  for (int r0 = 0; r0 < 16; r0 += kTileRows) tile_f16<kTileRows, T>(rows + r0, x, c0, n, r0, sums);
}

void run_f16(const GemmArgs& a) {
  alignas(64) float sums[256 * 16];
  int64_t chunk = static_cast<int64_t>((size_t{1} << 19) / static_cast<size_t>(4 * std::min(a.cols, kRunCols)));
  chunk = std::clamp<int64_t>(chunk, 1, 256);
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += chunk) {
    const int64_t nt = std::min(chunk, a.n_tokens - t0);
    for (int64_t p = a.panel_begin; p < a.panel_end; ++p) {
      const int64_t r0 = p * kGemmPanelRows;
      const int valid = static_cast<int>(std::min<int64_t>(kGemmPanelRows, a.rows - r0));
      const uint8_t* rows[16];
      for (int r = 0; r < 16; ++r) {
        rows[r] = a.w + static_cast<size_t>(r0 + std::min(r, valid - 1)) * a.w_row_bytes;
      }
      std::fill(sums, sums + nt * 16, 0.0f);
      for (int64_t c0 = 0; c0 < a.cols; c0 += kRunCols) {
        const int64_t n = std::min(kRunCols, a.cols - c0);
        int64_t t = 0;
        for (; t < nt; t += kTileTokens) {
          const float* x[kTileTokens];
          const int tt = static_cast<int>(std::min<int64_t>(kTileTokens, nt - t));
          for (int i = 0; i < tt; ++i) {
            x[i] = reinterpret_cast<const float*>(a.act + static_cast<size_t>(t0 + t + i) * a.act_stride);
          }
          float* s = sums + 16 * t;
          switch (tt) {
            case 6: tile_rows<6>(rows, x, c0, n, s); break;
            case 5: tile_rows<5>(rows, x, c0, n, s); break;
            case 4: tile_rows<4>(rows, x, c0, n, s); break;
            case 3: tile_rows<3>(rows, x, c0, n, s); break;
            case 2: tile_rows<2>(rows, x, c0, n, s); break;
            default: tile_rows<1>(rows, x, c0, n, s); break;
          }
        }
      }
      const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1);
      float* out = a.y + static_cast<size_t>(t0) * static_cast<size_t>(a.y_stride) + r0;
      for (int64_t t = 0; t < nt; ++t) _mm512_mask_storeu_ps(out + t * a.y_stride, keep, _mm512_load_ps(sums + 16 * t));
    }
  }
}

}  // namespace

void fill_avx512_gemm_f16_kernels(KernelTable& t) {
  t.gemm[static_cast<int>(DType::kF16)] = {f16_act_row_bytes, prepare_act_f16, run_f16, kColsPerStep};
}

}  // namespace hearth::kernels
