// AVX-512 whole-matrix kernel for F16 weights. Activations are rounded to F16 (as the reference
// converts them) and kept as floats; packing converts 16 rows x 16 columns of weights to floats
// and transposes them so one register holds column k of all 16 rows, and each token adds
// weight column x activation with one FMA per column. Each token keeps two partial sums (even
// and odd columns) per run of columns, folded into its total at the end of the run, the same
// way for any number of tokens.
#include <immintrin.h>

#include "kernels/avx512/gemm_avx512.h"
#include "kernels/kernel_table.h"

namespace hearth::kernels {
namespace {

constexpr int kF16BlockCols = 16;

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

struct F16Kernel {
  static constexpr int kBlockCols = kF16BlockCols;
  static constexpr int kPackedBlockBytes = 16 * 64;  // column k of the 16 rows, k < 16
  static constexpr int kRunBlocks = 16;
  static constexpr int kTile = 8;

  static void pack(const PanelRows& rows, int64_t first_block, int n_blocks, uint8_t* out) {
    for (int b = 0; b < n_blocks; ++b) {
      const size_t at = static_cast<size_t>(first_block + b) * kF16BlockCols * 2;
      __m256i in[16];
      for (int r = 0; r < 16; ++r) in[r] = load256u(rows.row[r] + at);
      __m512i pairs[8];  // pairs[c] lane r: columns 2c (low half) and 2c+1 (high half) of row r
      transpose_16x8_epi32(in, pairs);
      uint8_t* dst = out + b * kPackedBlockBytes;
      for (int c = 0; c < 8; ++c) {
        _mm512_store_ps(dst + 64 * (2 * c), _mm512_cvtph_ps(_mm512_cvtepi32_epi16(pairs[c])));
        _mm512_store_ps(dst + 64 * (2 * c + 1), _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(pairs[c], 16))));
      }
    }
  }

  template <int T>
  static void micro(const uint8_t* packed, int n_blocks, int64_t first_block, const uint8_t* act, size_t stride,
                    int64_t cols, float* sums, bool first_run) {
    __m512 even[T], odd[T];
    const float* x[T];
    for (int t = 0; t < T; ++t) {
      even[t] = odd[t] = _mm512_setzero_ps();
      x[t] = reinterpret_cast<const float*>(act + static_cast<size_t>(t) * stride) + first_block * kF16BlockCols;
    }
    for (int b = 0; b < n_blocks; ++b) {
      const float* w = reinterpret_cast<const float*>(packed + b * kPackedBlockBytes);
      for (int k = 0; k < kF16BlockCols; k += 2) {
        const __m512 w0 = _mm512_load_ps(w + 16 * k);
        const __m512 w1 = _mm512_load_ps(w + 16 * (k + 1));
        for (int t = 0; t < T; ++t) {
          even[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(x[t][b * kF16BlockCols + k]), even[t]);
          odd[t] = _mm512_fmadd_ps(w1, _mm512_set1_ps(x[t][b * kF16BlockCols + k + 1]), odd[t]);
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      const __m512 run = _mm512_add_ps(even[t], odd[t]);
      _mm512_store_ps(sums + 16 * t, first_run ? run : _mm512_add_ps(_mm512_load_ps(sums + 16 * t), run));
    }
  }
};

}  // namespace

void fill_avx512_gemm_f16_kernels(KernelTable& t) {
  t.gemm[static_cast<int>(DType::kF16)] = {f16_act_row_bytes, prepare_act_f16, gemm_drive<F16Kernel>, kF16BlockCols};
}

}  // namespace hearth::kernels
