// AVX-512 whole-matrix kernel for F16 weights. Activations are rounded to F16 (as the reference
// converts them) and stored as F16, half the bytes a tile reads from cache; decode widens its
// few rows to floats once per call. F16 rows need no per-block scales, so the kernel works on
// rows as stored: a tile of 4 rows x up to 6 tokens keeps one 16-lane accumulator per (row,
// token), each FMA adding 16 columns. Columns go in runs; a tile's accumulators start a run
// from the lanes the previous run left (16 per (row, token)) and leave them there at its end,
// so every lane is one chain of FMAs from the first column to the last whatever the run length.
// Decode reads runs of 2048 columns; batches runs of 512, whose activations for a token tile
// and weights for a row tile stay in L1 (3B-shaped F16 GEMM, 2 threads, AMD EPYC: 512-column
// runs +9% over 2048, F16 activations +5% more). After the last run the lanes are summed, 16
// rows at once by a reduction tree.
// On GGUF rows with enough tokens to share it, a panel's run is first converted to F32 once (on
// Intel the conversion competed with the FMAs for the same port). Interleaved panels
// (interleaved_layout.h: 16 rows x 16 columns per 512-byte step) are read as F16 in every case:
// on the AMD EPYC that was faster than converting. Converting is exact and the sums are formed
// in the same order either way, so the operations for one (row, token) do not depend on the
// layout, the tile or the token count: batches give the numbers single tokens give. Decode (at
// most one tile of tokens) is bound by memory, so it prefetches the next panel as it goes, as
// many lines per step as the step reads; on interleaved panels it works on 16 rows (8 for two
// tokens) at a time, so that each step reads whole cache lines in order.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/avx512/gemm_avx512.h"
#include "kernels/avx512/vector_math_avx512.h"
#include "kernels/kernel_table.h"

namespace hearth::kernels {
namespace {

constexpr int64_t kColsPerStep = 16;
constexpr int64_t kRunCols = 2048;      // decode (at most one token tile)
constexpr int64_t kBatchRunCols = 512;  // batches, including their converted runs
constexpr int kTileRows = 4;
constexpr int kTileTokens = 6;
constexpr int64_t kConvertMinTokens = 2 * kTileTokens;  // fewer tokens read the F16 rows directly
constexpr int64_t kMaxChunkTokens = 256;

// Rows whose length is a multiple of 4 KB would all start in the same L1 set, and a prefill
// tile reads 4 weight rows and 6 activation rows at the same column each step: 10 lines for 8
// ways. One spare cache line per row spreads them over sets. (llama-1b-f16 prefill varied
// between 77 and 95 tok/s from process to process with unpadded rows, by where the buffers
// landed; 89-93 padded. In-process A/B: +1-2%.)
constexpr int64_t kRowPadFloats = 16;

size_t f16_act_row_bytes(int64_t cols) { return static_cast<size_t>((2 * cols + 63) / 64 * 64 + 4 * kRowPadFloats); }

void prepare_act_f16(const float* x, void* dst, int64_t cols) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 16 <= cols; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  for (; i < cols; ++i) out[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

// 16 weights or activations as floats, from F16 or from floats already widened.
inline __m512 load16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }

// What a tile asks of memory ahead of each step: nothing (batches reuse each run from L1), or
// the next panel at the rate the tile reads this one (decode; see NextPanelStream).
struct NoPrefetch {
  void step() {}
};

// Each step of an R-row tile consumes R x 32 bytes of this panel and asks for as many bytes of
// the next panel, so memory keeps streaming at the rate the multiply reads, with no burst waiting
// for fill buffers. next advances past what was asked; nothing at or past end is asked for.
template <int R>
struct NextPanelStream {
  const uint8_t* next = nullptr;
  const uint8_t* end = nullptr;
  void step() {
    if (next < end) {
      for (int l = 0; l < R * 32; l += 64) _mm_prefetch(reinterpret_cast<const char*>(next + l), _MM_HINT_T1);
      next += R * 32;
    }
  }
};

// Where column c of a row is: K = 1 for GGUF rows (row + c); K = 16 for interleaved panels, whose
// 16-column steps hold all 16 rows (row + 16 c, the row pointer at the row's place in the first
// step).
template <int K, typename W>
inline const W* column(const W* row, int64_t c) {
  return row + c * K;
}

// lanes[(16 t + row0 + r) * 16 ..] += the 16 column-lane partial sums of row r . token t over
// columns [0, n) of the run (rows and x point at the run's first column): the accumulators
// start from the lanes (from zero on a panel's first run: no buffer to clear per panel) and
// are stored back at the end. X: F16 activations (batches) or widened floats (decode).
template <int R, int T, int K, typename W, typename X, typename Prefetch>
void tile_f16(const W* const* rows, const X* const* x, int64_t n, int row0, float* lanes, Prefetch& ahead,
              bool first) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = first ? _mm512_setzero_ps() : _mm512_load_ps(lanes + 16 * (16 * t + row0 + r));
  }
  for (int64_t c = 0; c < n; c += kColsPerStep) {
    ahead.step();
    __m512 w[R];
    for (int r = 0; r < R; ++r) w[r] = load16(column<K>(rows[r], c));
    for (int t = 0; t < T; ++t) {
      const __m512 a = load16(x[t] + c);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(w[r], a, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) _mm512_store_ps(lanes + 16 * (16 * t + row0 + r), acc[r][t]);
  }
}

// One run of columns for a chunk of at most one token tile, streaming the next panel in: tiles
// of R rows (4 for GGUF rows; for interleaved panels as many as the registers allow, so that a
// step reads whole cache lines of the panel in order).
template <int R, int T, int K>
void run_streaming(const uint16_t* const* rows, const float* const* x, int64_t n, float* lanes,
                   NextPanelStream<R>& ahead, bool first) {
  for (int r0 = 0; r0 < 16; r0 += R) tile_f16<R, T, K>(rows + r0, x, n, r0, lanes, ahead, first);
}

template <int T, int K, typename W>
void tile_rows(const W* const* rows, const uint16_t* const* x, int64_t n, float* lanes, bool first) {
  NoPrefetch none;
  for (int r0 = 0; r0 < 16; r0 += kTileRows) tile_f16<kTileRows, T, K>(rows + r0, x, n, r0, lanes, none, first);
}

// One run of columns for every token of the chunk, in tiles of up to 6 tokens. Each tile asks
// for its share of the next panel's run (ahead), which the next panel's conversion would
// otherwise wait for (a tenth of llama-1b-f16's prefill time).
template <int K, typename W>
void run_tokens(const W* const* rows, const GemmArgs& a, int64_t t0, int64_t nt, int64_t c0, int64_t n, float* lanes,
                bool first, StreamAhead& ahead, size_t ahead_bytes) {
  const int64_t tiles = (nt + kTileTokens - 1) / kTileTokens;
  const size_t per_tile = (ahead_bytes / static_cast<size_t>(tiles) + 63) / 64 * 64;
  for (int64_t t = 0; t < nt; t += kTileTokens) {
    ahead.read(per_tile);
    const uint16_t* x[kTileTokens];
    const int tt = static_cast<int>(std::min<int64_t>(kTileTokens, nt - t));
    for (int i = 0; i < tt; ++i) {
      x[i] = reinterpret_cast<const uint16_t*>(a.act + static_cast<size_t>(t0 + t + i) * a.act_stride) + c0;
    }
    float* l = lanes + 256 * t;
    switch (tt) {
      case 6: tile_rows<6, K>(rows, x, n, l, first); break;
      case 5: tile_rows<5, K>(rows, x, n, l, first); break;
      case 4: tile_rows<4, K>(rows, x, n, l, first); break;
      case 3: tile_rows<3, K>(rows, x, n, l, first); break;
      case 2: tile_rows<2, K>(rows, x, n, l, first); break;
      default: tile_rows<1, K>(rows, x, n, l, first); break;
    }
  }
}

// A decode chunk's run: GGUF rows in 4-row tiles; interleaved panels in 16-row tiles for one
// token and 8-row tiles for two (all the accumulators registers hold), 4-row tiles beyond.
template <int T, int K>
void run_decode(const uint16_t* const* rows, const float* const* x, int64_t n, float* lanes, const uint8_t* next,
                const uint8_t* end, bool first) {
  constexpr int R = K == 1 ? kTileRows : (T == 1 ? 16 : (T == 2 ? 8 : kTileRows));
  NextPanelStream<R> ahead{next, end};
  run_streaming<R, T, K>(rows, x, n, lanes, ahead, first);
}

// Per-thread buffers (on the heap, sized by use): the 16 x 16 lane sums of every token of a
// chunk, one converted run (batches only, so at most kBatchRunCols columns: 32 KB), and a
// decode chunk's activations widened to floats.
struct F16Scratch {
  std::vector<float> lanes;
  std::vector<float> converted;
  std::vector<float> wide;
  static float* align64(std::vector<float>& v, size_t n) {
    if (v.size() < n + 16) v.resize(n + 16);
    auto p = reinterpret_cast<uintptr_t>(v.data());
    return reinterpret_cast<float*>((p + 63) & ~uintptr_t{63});
  }
  float* lanes64(size_t n) { return align64(lanes, n); }
  // Row r of the converted run (16 rows of kBatchRunCols floats, each followed by a spare line).
  static constexpr size_t kConvertedStride = kBatchRunCols + kRowPadFloats;
  float* converted_row(int r) {
    return align64(converted, 16 * kConvertedStride) + static_cast<size_t>(r) * kConvertedStride;
  }
  // Tokens [t0, t0 + nt) of a's F16 activations as floats, `stride` floats apart. Decode reads
  // them once per panel, and widening each time cost 2-3% of decode speed.
  float* widen(const GemmArgs& a, int64_t t0, int64_t nt, int64_t stride) {
    float* out = align64(wide, static_cast<size_t>(nt * stride));
    for (int64_t t = 0; t < nt; ++t) {
      const auto* h = reinterpret_cast<const uint16_t*>(a.act + static_cast<size_t>(t0 + t) * a.act_stride);
      for (int64_t c = 0; c < a.cols; c += kColsPerStep) _mm512_store_ps(out + t * stride + c, load16(h + c));
    }
    return out;
  }
};

// K: 1 for GGUF rows, 16 for interleaved panels (see column()).
template <int K>
void run_f16(const GemmArgs& a) {
  thread_local F16Scratch scratch;
  const int64_t chunk = std::min<int64_t>(kMaxChunkTokens, a.n_tokens);
  float* lanes = scratch.lanes64(static_cast<size_t>(chunk) * 256);
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += chunk) {
    const int64_t nt = std::min(chunk, a.n_tokens - t0);
    // Interleaved panels are read as F16 (16 rows x 16 columns in one 512-byte step): converting
    // them first was slower with 2 threads (f16 GEMM 224 vs 260 GFLOPS in an A/B on the AMD EPYC).
    const bool convert = K == 1 && nt >= kConvertMinTokens;
    const bool decode = nt <= kTileTokens;
    const int64_t wide_stride = (a.cols + 15) / 16 * 16 + kRowPadFloats;
    const float* wide = decode ? scratch.widen(a, t0, nt, wide_stride) : nullptr;
    const int64_t run_cols = decode ? kRunCols : kBatchRunCols;
    for (int64_t p = a.panel_begin; p < a.panel_end; ++p) {
      const int64_t r0 = p * kGemmPanelRows;
      const int valid = static_cast<int>(std::min<int64_t>(kGemmPanelRows, a.rows - r0));
      const uint8_t* panel = a.w + static_cast<size_t>(r0) * a.w_row_bytes;
      const uint16_t* rows[16];
      for (int r = 0; r < 16; ++r) {
        rows[r] = K == 1 ? reinterpret_cast<const uint16_t*>(panel + static_cast<size_t>(std::min(r, valid - 1)) * a.w_row_bytes)
                         : reinterpret_cast<const uint16_t*>(panel) + 16 * r;
      }
      // The next panel's rows follow this panel's in memory; the last panel handed to this call
      // prefetches nothing, and the matrix's end bounds a short final panel.
      const size_t panel_bytes = static_cast<size_t>(kGemmPanelRows) * a.w_row_bytes;
      // A call's first panel had no one to prefetch it (see gemm_avx512.h).
      if (decode && p == a.panel_begin) {
        prefetch_l2(panel, static_cast<size_t>(valid) * a.w_row_bytes);
      }
      const uint8_t* next = panel + panel_bytes;
      const uint8_t* end = p + 1 < a.panel_end
                               ? std::min(next + panel_bytes, a.w + static_cast<size_t>(a.rows) * a.w_row_bytes)
                               : next;
      for (int64_t c0 = 0; c0 < a.cols; c0 += run_cols) {
        const int64_t n = std::min(run_cols, a.cols - c0);
        const bool first = c0 == 0;
        const uint16_t* run_rows[16];
        for (int r = 0; r < 16; ++r) run_rows[r] = column<K>(rows[r], c0);
        // Each run streams its share of the next panel (for interleaved panels, exactly the
        // bytes the same run of the next panel reads).
        const size_t share = static_cast<size_t>(n) * 2 * kGemmPanelRows;
        const uint8_t* run_next = std::min(end, next + static_cast<size_t>(c0) * 2 * kGemmPanelRows);
        const uint8_t* run_end = std::min(end, run_next + share);
        if (decode) {
          const float* x[kTileTokens];
          for (int t = 0; t < nt; ++t) x[t] = wide + t * wide_stride + c0;
          switch (nt) {
            case 6: run_decode<6, K>(run_rows, x, n, lanes, run_next, run_end, first); break;
            case 5: run_decode<5, K>(run_rows, x, n, lanes, run_next, run_end, first); break;
            case 4: run_decode<4, K>(run_rows, x, n, lanes, run_next, run_end, first); break;
            case 3: run_decode<3, K>(run_rows, x, n, lanes, run_next, run_end, first); break;
            case 2: run_decode<2, K>(run_rows, x, n, lanes, run_next, run_end, first); break;
            default: run_decode<1, K>(run_rows, x, n, lanes, run_next, run_end, first); break;
          }
        } else if (convert) {
          const float* conv[16];
          for (int r = 0; r < 16; ++r) {
            float* dst = scratch.converted_row(r);
            for (int64_t c = 0; c < n; c += kColsPerStep) _mm512_store_ps(dst + c, load16(column<K>(run_rows[r], c)));
            conv[r] = dst;
          }
          StreamAhead ahead{run_next, run_end};
          run_tokens<1>(conv, a, t0, nt, c0, n, lanes, first, ahead, share);
        } else {
          StreamAhead ahead{run_next, run_end};
          run_tokens<K>(run_rows, a, t0, nt, c0, n, lanes, first, ahead, share);
        }
      }
      const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1);
      float* out = a.y + static_cast<size_t>(t0) * static_cast<size_t>(a.y_stride) + r0;
      for (int64_t t = 0; t < nt; ++t) {
        __m512 part[16];
        for (int r = 0; r < 16; ++r) part[r] = _mm512_load_ps(lanes + 16 * (16 * t + r));
        _mm512_mask_storeu_ps(out + t * a.y_stride, keep, reduce_rows_16(part));
      }
    }
  }
}

// interleave_panel for F16: 16 columns of the 16 rows at a time.
void interleave_f16_panel(const uint8_t* src, size_t row_bytes, int64_t cols, int64_t panel, uint8_t* dst) {
  const uint8_t* rows = src + static_cast<size_t>(panel * kGemmPanelRows) * row_bytes;
  for (int64_t c = 0; c < cols; c += kColsPerStep) {
    for (int r = 0; r < 16; ++r) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 32 * (c + r)),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + r * row_bytes + 2 * c)));
    }
  }
}

}  // namespace

void fill_avx512_gemm_f16_kernels(KernelTable& t) {
  auto& f16 = t.gemm[static_cast<int>(DType::kF16)];
  f16 = {f16_act_row_bytes, prepare_act_f16, run_f16<1>, kColsPerStep};
  f16.run_interleaved = run_f16<16>;
  f16.interleave_panel = interleave_f16_panel;
}

}  // namespace hearth::kernels
