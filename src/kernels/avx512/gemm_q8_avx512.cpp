// AVX-512 VNNI whole-matrix kernels for the weight types that pair with Q8_0 activations: Q4_0,
// Q5_0, Q8_0, IQ4_NL and MXFP4. Weights are packed 16 rows at a time into unsigned bytes (Q4_0:
// q, Q5_0: q, Q8_0: q + 128, IQ4_NL and MXFP4: their level + 128), so one VPDPBUSD adds 4
// products for each of 16 rows; the activation's block sum times the weight's offset (8, 16 or
// 128) is subtracted once per block, which leaves exactly the integer dot product of the
// reference. The float part is the reference's too: per block, sum += (float)isum * (d_w * d_a),
// in block order, so results equal the scalar reference bit for bit (and do not depend on how
// many tokens share a call).
// Each kernel reads either GGUF rows, transposing every block of 16 rows as it goes, or
// interleaved panels (interleaved_layout.h), where the transposed registers are stored ready;
// Q4_0 and Q8_0 have both, Q5_0 only the first.
#include <immintrin.h>

#include <utility>

#include "kernels/avx512/gemm_avx512.h"
#include "kernels/isa_local.h"
#include "kernels/kernel_table.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels {
namespace {

// One token's activations: qs (cols bytes, padded to 64), then one float scale per block (the
// F16-rounded Q8_0 scale), then one int32 per block: the weight type's offset times the sum of
// the block's quants.
struct Q8Act {
  static int64_t qs_bytes(int64_t cols) { return (cols + 63) / 64 * 64; }
  static size_t row_bytes(int64_t cols) {
    return static_cast<size_t>((qs_bytes(cols) + 8 * (cols / kQK) + 63) / 64 * 64);
  }
  static const float* scales(const uint8_t* act, int64_t cols) {
    return reinterpret_cast<const float*>(act + qs_bytes(cols));
  }
  static const int32_t* corrections(const uint8_t* act, int64_t cols) {
    return reinterpret_cast<const int32_t*>(act + qs_bytes(cols) + 4 * (cols / kQK));
  }
};

// Q8_0 quantization of one token exactly as the reference does it (d = amax / 127 rounded to
// F16, q = round-half-even(x * 127 / amax)).
template <int kOffset>
void prepare_act_q8(const float* x, void* dst, int64_t cols) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  float* scales = reinterpret_cast<float*>(out + Q8Act::qs_bytes(cols));
  int32_t* corr = reinterpret_cast<int32_t*>(out + Q8Act::qs_bytes(cols) + 4 * (cols / kQK));
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + b * kQK);
    const __m512 v1 = _mm512_loadu_ps(x + b * kQK + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(v0, abs_mask), _mm512_and_ps(v1, abs_mask)));
    const float d = amax / 127.0f;
    const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id));  // MXCSR rounding: half to even
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + b * kQK), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + b * kQK + 16), _mm512_cvtepi32_epi8(q1));
    scales[b] = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    corr[b] = kOffset * _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  }
}

// Packed block: 8 registers of quants (register c, lane r = elements 4c..4c+3 of row r), then
// the 16 rows' scales as floats.
constexpr int kQ8PackedBlockBytes = 8 * 64 + 64;

// sums[t] += per block (float)(dot - correction) * (d_w * d_a), for T tokens.
template <int T>
void micro_q8(const uint8_t* packed, int n_blocks, int64_t first_block, const uint8_t* act, size_t stride,
              int64_t cols, float* sums, bool first_run) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = first_run ? _mm512_setzero_ps() : _mm512_load_ps(sums + 16 * t);
  const int8_t* qs[T];
  const float* sc[T];
  const int32_t* corr[T];
  for (int t = 0; t < T; ++t) {
    const uint8_t* a = act + static_cast<size_t>(t) * stride;
    qs[t] = reinterpret_cast<const int8_t*>(a) + first_block * kQK;
    sc[t] = Q8Act::scales(a, cols) + first_block;
    corr[t] = Q8Act::corrections(a, cols) + first_block;
  }
  for (int b = 0; b < n_blocks; ++b) {
    const uint8_t* w = packed + b * kQ8PackedBlockBytes;
    __m512i dot[T];
    if constexpr (T <= 2) {
      // Few tokens: two partial sums per token so the VPDPBUSD chain is half as long.
      __m512i odd[T];
      for (int t = 0; t < T; ++t) dot[t] = odd[t] = _mm512_setzero_si512();
      for (int c = 0; c < 8; c += 2) {
        const __m512i w0 = _mm512_load_si512(w + 64 * c);
        const __m512i w1 = _mm512_load_si512(w + 64 * (c + 1));
        for (int t = 0; t < T; ++t) {
          dot[t] = _mm512_dpbusd_epi32(dot[t], w0, _mm512_set1_epi32(load_i32(qs[t] + b * kQK + 4 * c)));
          odd[t] = _mm512_dpbusd_epi32(odd[t], w1, _mm512_set1_epi32(load_i32(qs[t] + b * kQK + 4 * c + 4)));
        }
      }
      for (int t = 0; t < T; ++t) dot[t] = _mm512_add_epi32(dot[t], odd[t]);
    } else {
      for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
      for (int c = 0; c < 8; ++c) {
        const __m512i wc = _mm512_load_si512(w + 64 * c);
        for (int t = 0; t < T; ++t) {
          dot[t] = _mm512_dpbusd_epi32(dot[t], wc, _mm512_set1_epi32(load_i32(qs[t] + b * kQK + 4 * c)));
        }
      }
    }
    const __m512 dw = _mm512_load_ps(w + 8 * 64);
    for (int t = 0; t < T; ++t) {
      const __m512 isum = _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[t], _mm512_set1_epi32(corr[t][b])));
      const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(sc[t][b]));
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(isum, d));
    }
  }
  for (int t = 0; t < T; ++t) _mm512_store_ps(sums + 16 * t, acc[t]);
}

// One block of 16 rows as the micro-kernel wants it: 8 registers of unsigned quants and the
// rows' scales. Each weight type supplies `load(rows, at, q)`, which fills q from the block at
// byte offset `at` of every row, and the byte offset of its F16 scale in a block.

struct Q8_0Loader {
  static constexpr size_t kBlockBytes = sizeof(BlockQ8_0);
  static void load(const PanelRows& rows, size_t at, __m512i q[8]) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    __m256i in[16];
    for (int r = 0; r < 16; ++r) in[r] = load256u(rows.row[r] + at + 2);
    transpose_16x8_epi32(in, q);
    for (int c = 0; c < 8; ++c) q[c] = _mm512_xor_si512(q[c], flip);  // q + 128
  }
};

struct Q4_0Loader {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0);
  static void load(const PanelRows& rows, size_t at, __m512i q[8]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512i bytes[4];
    transpose_16x4_epi32(rows.row, at + 2, bytes);
    for (int j = 0; j < 4; ++j) {
      // bytes 4j..4j+3 of a row hold elements 4j.. (low nibbles) and 16+4j.. (high nibbles)
      q[j] = _mm512_and_si512(bytes[j], low4);
      q[j + 4] = _mm512_and_si512(_mm512_srli_epi16(bytes[j], 4), low4);
    }
  }
};

struct Q5_0Loader {
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_0);
  static void load(const PanelRows& rows, size_t at, __m512i q[8]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i nib = _mm512_set1_epi32(0xF);
    // 4 high bits -> bit 4 of each of 4 bytes
    const __m512i spread = _mm512_setr_epi32(0x00000000, 0x00000010, 0x00001000, 0x00001010, 0x00100000, 0x00100010,
                                             0x00101000, 0x00101010, 0x10000000, 0x10000010, 0x10001000, 0x10001010,
                                             0x10100000, 0x10100010, 0x10101000, 0x10101010);
    __m512i bytes[4];
    transpose_16x4_epi32(rows.row, at + 6, bytes);
    const __m512i qh = rows.gather_i32(at + 2);
    for (int j = 0; j < 4; ++j) {
      const __m512i hi_lo = _mm512_permutexvar_epi32(_mm512_and_si512(_mm512_srli_epi32(qh, 4 * j), nib), spread);
      const __m512i hi_hi = _mm512_permutexvar_epi32(_mm512_and_si512(_mm512_srli_epi32(qh, 16 + 4 * j), nib), spread);
      q[j] = _mm512_or_si512(_mm512_and_si512(bytes[j], low4), hi_lo);
      q[j + 4] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(bytes[j], 4), low4), hi_hi);
    }
  }
};

// IQ4_NL and MXFP4: nibbles as Q4_0 (codes at byte offset kCodesAt of a block), looked up.
template <const int8_t* kLevels, size_t kBlockSize, size_t kCodesAt>
struct LevelsLoader {
  static constexpr size_t kBlockBytes = kBlockSize;
  static void load(const PanelRows& rows, size_t at, __m512i q[8]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i table = offset_level_table(kLevels);
    __m512i bytes[4];
    transpose_16x4_epi32(rows.row, at + kCodesAt, bytes);
    for (int j = 0; j < 4; ++j) {
      q[j] = _mm512_shuffle_epi8(table, _mm512_and_si512(bytes[j], low4));
      q[j + 4] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(bytes[j], 4), low4));
    }
  }
};
using IQ4_NLLoader = LevelsLoader<kIQ4NLValues, sizeof(BlockIQ4_NL), 2>;

// MXFP4's scale is the E8M0 byte in front of the codes, 2^(e - 128).
struct MXFP4Loader : LevelsLoader<kMXFP4Values, sizeof(BlockMXFP4), 1> {
  static __m512 scales(const PanelRows& rows, size_t at) {
    alignas(64) float s[16];
    for (int r = 0; r < 16; ++r) s[r] = isa_local::mxfp4_half_scale(rows.row[r][at]);
    return _mm512_load_ps(s);
  }
};

// Where a legacy kernel reads its blocks: quants(panel, b, q) fills q with block b of the
// panel's 16 rows as the micro-kernel wants it, and scales(panel, b) gives the rows' scales.

// GGUF rows, transposed block by block.
template <class Loader>
struct RowBlocks {
  static constexpr size_t kBlockBytes = Loader::kBlockBytes;
  static PanelRows panel(const GemmArgs& a, int64_t p) { return PanelRows(a, p); }
  static void quants(const PanelRows& rows, int64_t b, __m512i q[8]) {
    Loader::load(rows, static_cast<size_t>(b) * kBlockBytes, q);
  }
  static __m512 scales(const PanelRows& rows, int64_t b) {
    const size_t at = static_cast<size_t>(b) * kBlockBytes;
    if constexpr (requires { Loader::scales(rows, at); }) {
      return Loader::scales(rows, at);
    } else {
      return rows.gather_f16(at);  // the other blocks start with their F16 scale
    }
  }
};

// Interleaved panels (interleaved_layout.h): blocks in pairs, their registers then their scales.
template <int kRegisters>
struct InterleavedBlocks {
  static constexpr size_t kRegisterBytes = 64 * kRegisters;
  static InterleavedPanel panel(const GemmArgs& a, int64_t p) { return InterleavedPanel(a, p, kQK); }
  static GroupedBlock place(const InterleavedPanel& p, int64_t b) {
    return GroupedBlock(p.n_blocks, b, 2, kRegisterBytes, 2 * kGemmPanelRows);
  }
  static __m512 scales(const InterleavedPanel& p, int64_t b) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.at(place(p, b).fields))));
  }
};

struct InterleavedQ4_0 : InterleavedBlocks<4> {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0);
  static void quants(const InterleavedPanel& p, int64_t b, __m512i q[8]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const uint8_t* r = p.at(place(p, b).registers);
    for (int j = 0; j < 4; ++j) {
      const __m512i bytes = _mm512_loadu_si512(r + 64 * j);
      q[j] = _mm512_and_si512(bytes, low4);
      q[j + 4] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low4);
    }
  }
};

struct InterleavedQ8_0 : InterleavedBlocks<8> {
  static constexpr size_t kBlockBytes = sizeof(BlockQ8_0);
  static void quants(const InterleavedPanel& p, int64_t b, __m512i q[8]) {
    const uint8_t* r = p.at(place(p, b).registers);
    for (int c = 0; c < 8; ++c) q[c] = _mm512_loadu_si512(r + 64 * c);  // stored as q + 128
  }
};

// The GEMM-driver kernel for a legacy type read from Source: pack() stores loaded blocks for
// micro_q8; direct() multiplies loaded blocks with 1..2 tokens right away (the same operations,
// without the round trip through memory).
template <class Source>
struct LegacyKernel {
  static constexpr int kBlockCols = kQK;
  static constexpr int kPackedBlockBytes = kQ8PackedBlockBytes;
  static constexpr int kRunBlocks = 16;
  static constexpr int kTile = 8;
  static constexpr int kDirectTokens = 2;
  using Panel = decltype(Source::panel(std::declval<const GemmArgs&>(), 0));

  static Panel panel(const GemmArgs& a, int64_t p) { return Source::panel(a, p); }

  static void pack(const Panel& rows, int64_t first_block, int n_blocks, uint8_t* out) {
    for (int b = 0; b < n_blocks; ++b) {
      __m512i q[8];
      Source::quants(rows, first_block + b, q);
      uint8_t* dst = out + b * kPackedBlockBytes;
      for (int c = 0; c < 8; ++c) _mm512_store_si512(dst + 64 * c, q[c]);
      _mm512_store_ps(dst + 8 * 64, Source::scales(rows, first_block + b));
    }
  }

  template <int T>
  static void micro(const uint8_t* packed, int nb, int64_t b0, const uint8_t* act, size_t stride, int64_t cols,
                    float* sums, bool first) {
    micro_q8<T>(packed, nb, b0, act, stride, cols, sums, first);
  }

  static void direct(const Panel& rows, int n_blocks, const uint8_t* act, size_t stride, int64_t cols,
                     int n_tokens, float* sums, StreamAhead& ahead) {
    // The next panel's prefetches go between steps of 2 blocks: asked for inside the block loop,
    // the Q8_0 GEMV decoded 4-5% slower.
    constexpr int kStep = 2;
    for (int s = 0; s < n_blocks; s += kStep) {
      const int ns = std::min(kStep, n_blocks - s);
      ahead.read(static_cast<size_t>(16 * ns) * Source::kBlockBytes);
      if (n_tokens == 1) {
        direct_tokens<1>(rows, s, ns, act, stride, cols, sums, s == 0);
      } else {
        direct_tokens<2>(rows, s, ns, act, stride, cols, sums, s == 0);
      }
    }
  }

  template <int T>
  static void direct_tokens(const Panel& rows, int64_t first_block, int n_blocks, const uint8_t* act,
                            size_t stride, int64_t cols, float* sums, bool first_run) {
    __m512 acc[T];
    const int8_t* qs[T];
    const float* sc[T];
    const int32_t* corr[T];
    for (int t = 0; t < T; ++t) {
      acc[t] = first_run ? _mm512_setzero_ps() : _mm512_load_ps(sums + 16 * t);
      const uint8_t* a = act + static_cast<size_t>(t) * stride;
      qs[t] = reinterpret_cast<const int8_t*>(a) + first_block * kQK;
      sc[t] = Q8Act::scales(a, cols) + first_block;
      corr[t] = Q8Act::corrections(a, cols) + first_block;
    }
    for (int b = 0; b < n_blocks; ++b) {
      __m512i q[8];
      Source::quants(rows, first_block + b, q);
      const __m512 dw = Source::scales(rows, first_block + b);
      for (int t = 0; t < T; ++t) {
        __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
        for (int c = 0; c < 8; c += 2) {
          even = _mm512_dpbusd_epi32(even, q[c], _mm512_set1_epi32(load_i32(qs[t] + b * kQK + 4 * c)));
          odd = _mm512_dpbusd_epi32(odd, q[c + 1], _mm512_set1_epi32(load_i32(qs[t] + b * kQK + 4 * c + 4)));
        }
        const __m512i dot = _mm512_add_epi32(even, odd);
        const __m512 isum = _mm512_cvtepi32_ps(_mm512_sub_epi32(dot, _mm512_set1_epi32(corr[t][b])));
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(sc[t][b]));
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(isum, d));
      }
    }
    for (int t = 0; t < T; ++t) _mm512_store_ps(sums + 16 * t, acc[t]);
  }
};

using Q8_0Kernel = LegacyKernel<RowBlocks<Q8_0Loader>>;
using Q4_0Kernel = LegacyKernel<RowBlocks<Q4_0Loader>>;
using Q5_0Kernel = LegacyKernel<RowBlocks<Q5_0Loader>>;
using IQ4_NLKernel = LegacyKernel<RowBlocks<IQ4_NLLoader>>;
using MXFP4Kernel = LegacyKernel<RowBlocks<MXFP4Loader>>;
using InterleavedQ8_0Kernel = LegacyKernel<InterleavedQ8_0>;
using InterleavedQ4_0Kernel = LegacyKernel<InterleavedQ4_0>;

size_t q8_act_row_bytes(int64_t cols) { return Q8Act::row_bytes(cols); }

// interleave_panel for Q4_0 (kRegisters 4) and Q8_0 (8): the same register transposes the
// GGUF-row kernels do per block, stored once.
template <int kRegisters>
void interleave_legacy_panel(const uint8_t* src, size_t row_bytes, int64_t cols, int64_t panel, uint8_t* dst) {
  const PanelRows rows = PanelRows::whole(src, row_bytes, panel);
  const int64_t n_blocks = cols / kQK;
  constexpr size_t kBlockBytes = kRegisters == 4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const size_t at = static_cast<size_t>(b) * kBlockBytes;
    const GroupedBlock place(n_blocks, b, 2, 64 * kRegisters, 2 * kGemmPanelRows);
    __m512i q[8];
    if constexpr (kRegisters == 4) {
      transpose_16x4_epi32(rows.row, at + 2, q);
    } else {
      __m256i in[16];
      for (int r = 0; r < 16; ++r) in[r] = load256u(rows.row[r] + at + 2);
      transpose_16x8_epi32(in, q);
      for (int c = 0; c < 8; ++c) q[c] = _mm512_xor_si512(q[c], _mm512_set1_epi8(static_cast<char>(0x80)));
    }
    for (int c = 0; c < kRegisters; ++c) _mm512_storeu_si512(dst + place.registers + 64 * c, q[c]);
    alignas(32) uint16_t d[16];
    for (int r = 0; r < 16; ++r) std::memcpy(&d[r], rows.row[r] + at, 2);
    std::memcpy(dst + place.fields, d, sizeof d);
  }
}

}  // namespace

void fill_avx512_gemm_q8_kernels(KernelTable& t) {
  auto& q4 = t.gemm[static_cast<int>(DType::kQ4_0)];
  q4 = {q8_act_row_bytes, prepare_act_q8<8>, gemm_drive<Q4_0Kernel>};
  q4.run_interleaved = gemm_drive<InterleavedQ4_0Kernel>;
  q4.interleave_panel = interleave_legacy_panel<4>;
  auto& q5 = t.gemm[static_cast<int>(DType::kQ5_0)];
  q5 = {q8_act_row_bytes, prepare_act_q8<16>, gemm_drive<Q5_0Kernel>};
  auto& q8 = t.gemm[static_cast<int>(DType::kQ8_0)];
  q8 = {q8_act_row_bytes, prepare_act_q8<128>, gemm_drive<Q8_0Kernel>};
  q8.run_interleaved = gemm_drive<InterleavedQ8_0Kernel>;
  q8.interleave_panel = interleave_legacy_panel<8>;
  t.gemm[static_cast<int>(DType::kIQ4_NL)] = {q8_act_row_bytes, prepare_act_q8<128>, gemm_drive<IQ4_NLKernel>};
  t.gemm[static_cast<int>(DType::kMXFP4)] = {q8_act_row_bytes, prepare_act_q8<128>, gemm_drive<MXFP4Kernel>};
}

}  // namespace hearth::kernels
