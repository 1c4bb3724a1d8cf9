// AVX-512 VNNI whole-matrix kernels for Q4_K, Q6_K and IQ4_XS weights with Q8_K activations. Packing
// turns each super-block of 16 rows into unsigned quants (Q4_K: 0..15, Q6_K: 0..63) laid out
// for VPDPBUSD (lane r = row r) plus the rows' integer group scales, so each group's dot product
// is multiplied by its scale in 32-bit integers, exactly as the reference sums them; the group
// minimums (Q4_K) and Q6_K's -32 offset come from the activation's group sums through
// VPDPWSSD. One float step per super-block follows the reference's expression, so results are
// bit-identical to the scalar reference whatever the number of tokens.
// Both types read either GGUF rows (transposed as they are read) or interleaved panels
// (interleaved_layout.h); Q4_K has one direct decode path for both, Q6_K one per layout (its
// GGUF-row path works a row at a time, its interleaved one 16 rows at a time). IQ4_XS packs its
// levels + 128 as unsigned bytes and its signed sub-block scales; 128 times each group's
// activation sum times its scale (VPDPWSSD) is taken off, which leaves the reference's integer
// sum; it reads GGUF rows only, multiplying them directly for 1-2 tokens.
#include <immintrin.h>

#include <utility>

#include "kernels/avx512/gemm_avx512.h"
#include "kernels/kernel_table.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels {
namespace {

// One token's activations: qs (cols bytes, padded to 64), then per super-block a 64-byte record:
// d (float) at 0, the 16 per-16 sums (int16) at 16, the 8 per-32 sums (int16) at 48.
struct Q8KAct {
  static int64_t qs_bytes(int64_t cols) { return (cols + 63) / 64 * 64; }
  static size_t row_bytes(int64_t cols) { return static_cast<size_t>(qs_bytes(cols) + 64 * (cols / kQK_K)); }
  static const uint8_t* record(const uint8_t* act, int64_t cols, int64_t sb) { return act + qs_bytes(cols) + 64 * sb; }
};

// Q8_K quantization of one token exactly as the reference quantizer does it: the scale comes
// from the first element of largest magnitude (-127 / that element), quants round half to even
// and are clamped at 127.
void prepare_act_q8k(const float* x, void* dst, int64_t cols) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t sb = 0; sb < cols / kQK_K; ++sb) {
    const float* v = x + sb * kQK_K;
    int8_t* qs = reinterpret_cast<int8_t*>(out) + sb * kQK_K;
    uint8_t* rec = out + Q8KAct::qs_bytes(cols) + 64 * sb;
    __m512 amax_v = _mm512_setzero_ps();
    for (int j = 0; j < kQK_K; j += 16) amax_v = _mm512_max_ps(amax_v, _mm512_and_ps(_mm512_loadu_ps(v + j), abs_mask));
    const float amax = _mm512_reduce_max_ps(amax_v);
    std::memset(rec, 0, 64);
    if (!(amax > 0.0f)) {
      std::memset(qs, 0, kQK_K);
      continue;
    }
    float max = 0.0f;
    const __m512 target = _mm512_set1_ps(amax);
    for (int j = 0; j < kQK_K; j += 16) {
      const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(v + j), abs_mask), target, _CMP_EQ_OQ);
      if (hit != 0) {
        max = v[j + __builtin_ctz(hit)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 is = _mm512_set1_ps(iscale);
    const __m512i top = _mm512_set1_epi32(127);
    int16_t bsums[16];
    for (int g = 0; g < 16; ++g) {
      const __m512i q = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(v + 16 * g), is)), top);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16 * g), _mm512_cvtepi32_epi8(q));
      bsums[g] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    const float d = 1.0f / iscale;
    std::memcpy(rec, &d, sizeof d);
    std::memcpy(rec + 16, bsums, sizeof bsums);
    int16_t sums32[8];
    for (int j = 0; j < 8; ++j) sums32[j] = static_cast<int16_t>(bsums[2 * j] + bsums[2 * j + 1]);
    std::memcpy(rec + 48, sums32, sizeof sums32);
  }
}

size_t q8k_act_row_bytes(int64_t cols) { return Q8KAct::row_bytes(cols); }

// Token t's quants and super-block record for super-block sb.
template <int T>
inline void token_rows(const uint8_t* act, size_t stride, int64_t cols, int64_t sb, const int8_t* qs[T],
                       const uint8_t* rec[T]) {
  for (int t = 0; t < T; ++t) {
    const uint8_t* a = act + static_cast<size_t>(t) * stride;
    qs[t] = reinterpret_cast<const int8_t*>(a) + sb * kQK_K;
    rec[t] = Q8KAct::record(a, cols, sb);
  }
}

// sumi[t] += over the kGroups groups of a packed super-block (kRegs quant registers each, from
// w): the group's dot product with token t's quants times the group's scale (int32 registers
// from `scales`), in 32-bit integers.
template <int T, int kGroups, int kRegs>
inline void add_scaled_group_dots(const uint8_t* w, const uint8_t* scales, const int8_t* const qs[T], __m512i sumi[T]) {
  for (int g = 0; g < kGroups; ++g) {
    __m512i dot[T];
    for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
    for (int c = 0; c < kRegs; ++c) {
      const __m512i wc = _mm512_load_si512(w + 64 * (kRegs * g + c));
      for (int t = 0; t < T; ++t) {
        dot[t] = _mm512_dpbusd_epi32(dot[t], wc, _mm512_set1_epi32(load_i32(qs[t] + 4 * (kRegs * g + c))));
      }
    }
    const __m512i sc = _mm512_load_si512(scales + 64 * g);
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot[t], sc));
  }
}

// Byte k (0..11) of each lane's 12 scale bytes, held as three dwords.
inline __m512i scale_byte(const __m512i s[3], int k) {
  return _mm512_and_si512(_mm512_srli_epi32(s[k / 4], 8 * (k % 4)), _mm512_set1_epi32(0xFF));
}

// ---- Q4_K ----
// Packed super-block: 64 quant registers (register 8g + c: group g, elements 4c..4c+3), 8
// registers of group scales (int32), 4 of group-minimum pairs (int16 m[2p], m[2p+1]), d, dmin.
struct Q4KLayout {
  static constexpr int kScales = 64 * 64;
  static constexpr int kMins = kScales + 8 * 64;
  static constexpr int kD = kMins + 4 * 64;
  static constexpr int kDmin = kD + 64;
  static constexpr int kBytes = kDmin + 64;
};

// Where the Q4_K kernel reads a super-block sb of 16 rows: scale_words gives each row's 12 scale
// bytes as 3 dwords, quants(j) its qs bytes 32j..32j+31 as 8 registers (register c = bytes
// 4c..4c+3), and d_dmin the rows' d and dmin.

// GGUF rows, transposed as they are read.
struct Q4KRows {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_K);
  static PanelRows panel(const GemmArgs& a, int64_t p) { return PanelRows(a, p); }
  static size_t at(int64_t sb) { return static_cast<size_t>(sb) * kBlockBytes; }
  static void scale_words(const PanelRows& rows, int64_t sb, __m512i s[3]) {
    for (int k = 0; k < 3; ++k) s[k] = rows.gather_i32(at(sb) + 4 + 4 * k);
  }
  static void quants(const PanelRows& rows, int64_t sb, int j, __m512i q[8]) {
    __m256i in[16];
    for (int r = 0; r < 16; ++r) in[r] = load256u(rows.row[r] + at(sb) + 16 + 32 * j);
    transpose_16x8_epi32(in, q);
  }
  static void d_dmin(const PanelRows& rows, int64_t sb, __m512& d, __m512& dmin) {
    const __m512i dd = rows.gather_i32(at(sb));  // d (low half), dmin (high half)
    d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
    dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
  }
};

// Interleaved panels: per super-block 32 registers of qs, 3 of scale bytes, then d and dmin.
struct Q4KInterleaved {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_K);
  static InterleavedPanel panel(const GemmArgs& a, int64_t p) { return InterleavedPanel(a, p, kQK_K); }
  static const uint8_t* at(const InterleavedPanel& p, int64_t sb) { return p.at(static_cast<size_t>(sb) * 16 * kBlockBytes); }
  static void scale_words(const InterleavedPanel& p, int64_t sb, __m512i s[3]) {
    for (int k = 0; k < 3; ++k) s[k] = _mm512_loadu_si512(at(p, sb) + 32 * 64 + 64 * k);
  }
  static void quants(const InterleavedPanel& p, int64_t sb, int j, __m512i q[8]) {
    for (int c = 0; c < 8; ++c) q[c] = _mm512_loadu_si512(at(p, sb) + 64 * (8 * j + c));
  }
  static void d_dmin(const InterleavedPanel& p, int64_t sb, __m512& d, __m512& dmin) {
    const uint8_t* f = at(p, sb) + 35 * 64;
    d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(f)));
    dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(f + 32)));
  }
};

template <class Source>
struct Q4_KKernel {
  using Panel = decltype(Source::panel(std::declval<const GemmArgs&>(), 0));
  static Panel panel(const GemmArgs& a, int64_t p) { return Source::panel(a, p); }
  static constexpr int kBlockCols = kQK_K;
  static constexpr int kPackedBlockBytes = Q4KLayout::kBytes;
  static constexpr int kRunBlocks = 2;
  static constexpr int kTile = 8;
  static constexpr int kDirectTokens = 2;

  // The 8 group scales (int32) and the group minimums as int16 pairs (m[2p], m[2p+1]) of
  // super-block sb of each row.
  static void load_scales(const Panel& rows, int64_t sb, __m512i sc[8], __m512i mins[4]) {
    const __m512i six = _mm512_set1_epi32(63);
    __m512i s[3];
    Source::scale_words(rows, sb, s);
    __m512i m[8];
    for (int g = 0; g < 4; ++g) {
      sc[g] = _mm512_and_si512(scale_byte(s, g), six);
      m[g] = _mm512_and_si512(scale_byte(s, g + 4), six);
    }
    for (int g = 4; g < 8; ++g) {
      const __m512i hi = scale_byte(s, g + 4);
      sc[g] = _mm512_or_si512(_mm512_and_si512(hi, _mm512_set1_epi32(0xF)),
                              _mm512_slli_epi32(_mm512_srli_epi32(scale_byte(s, g - 4), 6), 4));
      m[g] = _mm512_or_si512(_mm512_srli_epi32(hi, 4), _mm512_slli_epi32(_mm512_srli_epi32(scale_byte(s, g), 6), 4));
    }
    for (int p = 0; p < 4; ++p) mins[p] = _mm512_or_si512(m[2 * p], _mm512_slli_epi32(m[2 * p + 1], 16));
  }

  // 1..2 tokens: each 32-byte slice of the 16 rows is transposed and multiplied right away (the
  // packed path's operations without the round trip through memory).
  static void direct(const Panel& rows, int n_blocks, const uint8_t* act, size_t stride, int64_t cols,
                     int n_tokens, float* sums, StreamAhead& ahead) {
    if (n_tokens == 1) {
      direct_tokens<1>(rows, n_blocks, act, stride, cols, sums, ahead);
    } else {
      direct_tokens<2>(rows, n_blocks, act, stride, cols, sums, ahead);
    }
  }

  template <int T>
  static void direct_tokens(const Panel& rows, int n_blocks, const uint8_t* act, size_t stride, int64_t cols,
                            float* sums, StreamAhead& ahead) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < n_blocks; ++sb) {
      const int8_t* qs[T];
      const uint8_t* rec[T];
      token_rows<T>(act, stride, cols, sb, qs, rec);
      __m512i sc[8], mins[4];
      load_scales(rows, sb, sc, mins);
      __m512i sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
      for (int j = 0; j < 4; ++j) {
        ahead.read(16 * sizeof(BlockQ4_K) / 4);
        __m512i q[8];
        Source::quants(rows, sb, j, q);
        for (int t = 0; t < T; ++t) {
          __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
          for (int c = 0; c < 8; ++c) {
            lo = _mm512_dpbusd_epi32(lo, _mm512_and_si512(q[c], low4),
                                     _mm512_set1_epi32(load_i32(qs[t] + 32 * (2 * j) + 4 * c)));
            hi = _mm512_dpbusd_epi32(hi, _mm512_and_si512(_mm512_srli_epi16(q[c], 4), low4),
                                     _mm512_set1_epi32(load_i32(qs[t] + 32 * (2 * j + 1) + 4 * c)));
          }
          sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(lo, sc[2 * j]));
          sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(hi, sc[2 * j + 1]));
        }
      }
      __m512 dw, dmw;
      Source::d_dmin(rows, sb, dw, dmw);
      for (int t = 0; t < T; ++t) {
        __m512i msum = _mm512_setzero_si512();
        for (int p = 0; p < 4; ++p) msum = _mm512_dpwssd_epi32(msum, mins[p], _mm512_set1_epi32(load_i32(rec[t] + 48 + 4 * p)));
        float da;
        std::memcpy(&da, rec[t], sizeof da);
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(da));
        const __m512 dmin = _mm512_mul_ps(dmw, _mm512_set1_ps(da));
        const __m512 v = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(sumi[t])),
                                       _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(msum)));
        acc[t] = _mm512_add_ps(acc[t], v);
      }
    }
    for (int t = 0; t < T; ++t) _mm512_store_ps(sums + 16 * t, acc[t]);
  }

  static void pack(const Panel& rows, int64_t first_block, int n_blocks, uint8_t* out) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (int b = 0; b < n_blocks; ++b) {
      const int64_t sb = first_block + b;
      uint8_t* dst = out + b * kPackedBlockBytes;
      for (int j = 0; j < 4; ++j) {  // qs bytes 32j..32j+31: group 2j (low nibbles), 2j+1 (high)
        __m512i q[8];
        Source::quants(rows, sb, j, q);
        for (int c = 0; c < 8; ++c) {
          _mm512_store_si512(dst + 64 * (8 * (2 * j) + c), _mm512_and_si512(q[c], low4));
          _mm512_store_si512(dst + 64 * (8 * (2 * j + 1) + c), _mm512_and_si512(_mm512_srli_epi16(q[c], 4), low4));
        }
      }
      __m512i sc[8], mins[4];
      load_scales(rows, sb, sc, mins);
      for (int g = 0; g < 8; ++g) _mm512_store_si512(dst + Q4KLayout::kScales + 64 * g, sc[g]);
      for (int p = 0; p < 4; ++p) _mm512_store_si512(dst + Q4KLayout::kMins + 64 * p, mins[p]);
      __m512 dw, dmw;
      Source::d_dmin(rows, sb, dw, dmw);
      _mm512_store_ps(dst + Q4KLayout::kD, dw);
      _mm512_store_ps(dst + Q4KLayout::kDmin, dmw);
    }
  }

  template <int T>
  static void micro(const uint8_t* packed, int n_blocks, int64_t first_block, const uint8_t* act, size_t stride,
                    int64_t cols, float* sums, bool first_run) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first_run ? _mm512_setzero_ps() : _mm512_load_ps(sums + 16 * t);
    for (int b = 0; b < n_blocks; ++b) {
      const uint8_t* w = packed + b * kPackedBlockBytes;
      const int64_t sb = first_block + b;
      const int8_t* qs[T];
      const uint8_t* rec[T];
      token_rows<T>(act, stride, cols, sb, qs, rec);
      __m512i sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
      add_scaled_group_dots<T, 8, 8>(w, w + Q4KLayout::kScales, qs, sumi);
      const __m512 dw = _mm512_load_ps(w + Q4KLayout::kD);
      const __m512 dmw = _mm512_load_ps(w + Q4KLayout::kDmin);
      for (int t = 0; t < T; ++t) {
        __m512i msum = _mm512_setzero_si512();
        for (int p = 0; p < 4; ++p) {
          msum = _mm512_dpwssd_epi32(msum, _mm512_load_si512(w + Q4KLayout::kMins + 64 * p),
                                     _mm512_set1_epi32(load_i32(rec[t] + 48 + 4 * p)));
        }
        float da;
        std::memcpy(&da, rec[t], sizeof da);
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(da));
        const __m512 dmin = _mm512_mul_ps(dmw, _mm512_set1_ps(da));
        const __m512 v = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(sumi[t])),
                                       _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(msum)));
        acc[t] = _mm512_add_ps(acc[t], v);
      }
    }
    for (int t = 0; t < T; ++t) _mm512_store_ps(sums + 16 * t, acc[t]);
  }
};

// interleave_panel for Q4_K: the transposes Q4KRows does, stored once.
void interleave_q4k_panel(const uint8_t* src, size_t row_bytes, int64_t cols, int64_t panel, uint8_t* dst) {
  const PanelRows rows = PanelRows::whole(src, row_bytes, panel);
  for (int64_t sb = 0; sb < cols / kQK_K; ++sb) {
    uint8_t* out = dst + static_cast<size_t>(sb) * 16 * sizeof(BlockQ4_K);
    for (int j = 0; j < 4; ++j) {
      __m512i q[8];
      Q4KRows::quants(rows, sb, j, q);
      for (int c = 0; c < 8; ++c) _mm512_storeu_si512(out + 64 * (8 * j + c), q[c]);
    }
    __m512i s[3];
    Q4KRows::scale_words(rows, sb, s);
    for (int k = 0; k < 3; ++k) _mm512_storeu_si512(out + 64 * (32 + k), s[k]);
    const __m512i dd = rows.gather_i32(Q4KRows::at(sb));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 35 * 64), _mm512_cvtepi32_epi16(dd));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 35 * 64 + 32), _mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
  }
}

// ---- Q6_K ----
// Packed super-block: 64 quant registers (register c: elements 4c..4c+3, quants 0..63), 16 of
// group scales (int32), 8 of scale pairs (int16 sc[2p], sc[2p+1]) for the -32 offset, d.
struct Q6KLayout {
  static constexpr int kScales = 64 * 64;
  static constexpr int kPairs = kScales + 16 * 64;
  static constexpr int kD = kPairs + 8 * 64;
  static constexpr int kBytes = kD + 64;
};

// Where the Q6_K kernel reads super-block sb of 16 rows: ql_qh gives each row's ql and qh
// bytes as registers (register c = bytes 4c..4c+3), scale_words its 16 scale bytes as 4
// dwords, d the rows' d.

// GGUF rows, transposed as they are read.
struct Q6KRows {
  static PanelRows panel(const GemmArgs& a, int64_t p) { return PanelRows(a, p); }
  static size_t at(int64_t sb) { return static_cast<size_t>(sb) * sizeof(BlockQ6_K); }
  static void ql_qh(const PanelRows& rows, int64_t sb, __m512i ql[32], __m512i qh[16]) {
    for (int j = 0; j < 4; ++j) {
      __m256i in[16];
      for (int r = 0; r < 16; ++r) in[r] = load256u(rows.row[r] + at(sb) + 32 * j);
      transpose_16x8_epi32(in, ql + 8 * j);
    }
    for (int j = 0; j < 2; ++j) {
      __m256i in[16];
      for (int r = 0; r < 16; ++r) in[r] = load256u(rows.row[r] + at(sb) + 128 + 32 * j);
      transpose_16x8_epi32(in, qh + 8 * j);
    }
  }
  static void scale_words(const PanelRows& rows, int64_t sb, __m512i s[4]) {
    for (int k = 0; k < 4; ++k) s[k] = rows.gather_i32(at(sb) + 192 + 4 * k);
  }
  // d is the block's last 2 bytes: gather the dword ending there, keep its high half
  static __m512 d(const PanelRows& rows, int64_t sb) {
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(rows.gather_i32(at(sb) + 206), 16)));
  }
};

// Interleaved panels: super-blocks in pairs, each 32 registers of ql, 16 of qh and 4 of scales,
// then the pair's d fields.
struct Q6KInterleaved {
  static constexpr size_t kRegisterBytes = 52 * 64;
  static InterleavedPanel panel(const GemmArgs& a, int64_t p) { return InterleavedPanel(a, p, kQK_K); }
  static GroupedBlock place(const InterleavedPanel& p, int64_t sb) {
    return GroupedBlock(p.n_blocks, sb, 2, kRegisterBytes, 2 * kGemmPanelRows);
  }
  static void ql_qh(const InterleavedPanel& p, int64_t sb, __m512i ql[32], __m512i qh[16]) {
    const uint8_t* r = p.at(place(p, sb).registers);
    for (int c = 0; c < 32; ++c) ql[c] = _mm512_loadu_si512(r + 64 * c);
    for (int c = 0; c < 16; ++c) qh[c] = _mm512_loadu_si512(r + 64 * (32 + c));
  }
  static void scale_words(const InterleavedPanel& p, int64_t sb, __m512i s[4]) {
    const uint8_t* r = p.at(place(p, sb).registers);
    for (int k = 0; k < 4; ++k) s[k] = _mm512_loadu_si512(r + 64 * (48 + k));
  }
  static __m512 d(const InterleavedPanel& p, int64_t sb) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.at(place(p, sb).fields))));
  }
};

// Packing and the micro-kernel, for either source.
template <class Source>
struct Q6_KPacked {
  using Panel = decltype(Source::panel(std::declval<const GemmArgs&>(), 0));
  static Panel panel(const GemmArgs& a, int64_t p) { return Source::panel(a, p); }
  static constexpr int kBlockCols = kQK_K;
  static constexpr int kPackedBlockBytes = Q6KLayout::kBytes;
  static constexpr int kRunBlocks = 2;
  static constexpr int kTile = 8;

  static void pack(const Panel& rows, int64_t first_block, int n_blocks, uint8_t* out) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i low2 = _mm512_set1_epi8(0x03);
    for (int b = 0; b < n_blocks; ++b) {
      const int64_t sb = first_block + b;
      uint8_t* dst = out + b * kPackedBlockBytes;
      __m512i ql[32], qh[16];
      Source::ql_qh(rows, sb, ql, qh);
      for (int c = 0; c < 64; ++c) {
        // elements 4c..4c+3: half h = c / 32; within it, ql byte (c % 16) * 4 (high nibbles
        // for the second 64), qh byte (c % 8) * 4 shifted by 2 * ((c % 32) / 8)
        const int h = c / 32;
        const int in_half = c % 32;
        __m512i lo = ql[16 * h + (c % 16)];
        if (in_half >= 16) lo = _mm512_srli_epi16(lo, 4);
        lo = _mm512_and_si512(lo, low4);
        const int shift = 2 * (in_half / 8);
        __m512i hi = qh[8 * h + (c % 8)];
        if (shift > 0) hi = _mm512_srli_epi16(hi, shift);
        hi = _mm512_slli_epi16(_mm512_and_si512(hi, low2), 4);
        _mm512_store_si512(dst + 64 * c, _mm512_or_si512(lo, hi));
      }
      __m512i s[4];
      Source::scale_words(rows, sb, s);
      __m512i sc[16];
      for (int g = 0; g < 16; ++g) {
        sc[g] = _mm512_srai_epi32(_mm512_slli_epi32(s[g / 4], 24 - 8 * (g % 4)), 24);  // signed byte g
        _mm512_store_si512(dst + Q6KLayout::kScales + 64 * g, sc[g]);
      }
      for (int p = 0; p < 8; ++p) {
        const __m512i pair = _mm512_or_si512(_mm512_and_si512(sc[2 * p], _mm512_set1_epi32(0xFFFF)),
                                             _mm512_slli_epi32(sc[2 * p + 1], 16));
        _mm512_store_si512(dst + Q6KLayout::kPairs + 64 * p, pair);
      }
      _mm512_store_ps(dst + Q6KLayout::kD, Source::d(rows, sb));
    }
  }

  template <int T>
  static void micro(const uint8_t* packed, int n_blocks, int64_t first_block, const uint8_t* act, size_t stride,
                    int64_t cols, float* sums, bool first_run) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first_run ? _mm512_setzero_ps() : _mm512_load_ps(sums + 16 * t);
    for (int b = 0; b < n_blocks; ++b) {
      const uint8_t* w = packed + b * kPackedBlockBytes;
      const int64_t sb = first_block + b;
      const int8_t* qs[T];
      const uint8_t* rec[T];
      token_rows<T>(act, stride, cols, sb, qs, rec);
      __m512i sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
      add_scaled_group_dots<T, 16, 4>(w, w + Q6KLayout::kScales, qs, sumi);
      const __m512 dw = _mm512_load_ps(w + Q6KLayout::kD);
      for (int t = 0; t < T; ++t) {
        __m512i off = _mm512_setzero_si512();
        for (int p = 0; p < 8; ++p) {
          off = _mm512_dpwssd_epi32(off, _mm512_load_si512(w + Q6KLayout::kPairs + 64 * p),
                                    _mm512_set1_epi32(load_i32(rec[t] + 16 + 4 * p)));
        }
        const __m512i isum = _mm512_sub_epi32(sumi[t], _mm512_slli_epi32(off, 5));
        float da;
        std::memcpy(&da, rec[t], sizeof da);
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(da)), _mm512_cvtepi32_ps(isum)));
      }
    }
    for (int t = 0; t < T; ++t) _mm512_store_ps(sums + 16 * t, acc[t]);
  }
};

// GGUF rows add a direct path for up to 4 tokens.
struct Q6_KKernel : Q6_KPacked<Q6KRows> {
  static constexpr int kDirectTokens = 4;

  // Up to 4 tokens straight from the stored rows: each row's super-block becomes 4 registers of
  // 64 quants in element order (the group scales broadcast over each group's 4 lanes), one
  // register of scaled partial sums per row, and reduce_rows_16 turns the 16 of them into one
  // lane per row. The integer sums are the packed path's, so results are identical.
  static void direct(const PanelRows& rows, int n_blocks, const uint8_t* act, size_t stride, int64_t cols,
                     int n_tokens, float* sums, StreamAhead& ahead) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i low2 = _mm512_set1_epi8(0x03);
    // qh bytes feed two 32-element halves with different shifts: 0 | 2 and 4 | 6 (per 16-bit lane)
    const __m512i shift_a = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i shift_b = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
    __m512i group_idx[4];
    for (int k = 0; k < 4; ++k) {
      alignas(64) int32_t idx[16];
      for (int l = 0; l < 16; ++l) idx[l] = 4 * k + l / 4;
      group_idx[k] = _mm512_load_si512(idx);
    }
    for (int t = 0; t < n_tokens; ++t) _mm512_store_ps(sums + 16 * t, _mm512_setzero_ps());
    alignas(64) int32_t part[4][16][16];
    for (int64_t sb = 0; sb < n_blocks; ++sb) {
      const size_t at = static_cast<size_t>(sb) * sizeof(BlockQ6_K);
      for (int r = 0; r < 16; ++r) {
        ahead.read(sizeof(BlockQ6_K));
        const uint8_t* p = rows.row[r] + at;
        const __m512i ql0 = _mm512_loadu_si512(p);
        const __m512i ql1 = _mm512_loadu_si512(p + 64);
        const __m512i qh0 = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128)));
        const __m512i qh1 = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 160)));
        auto high = [&](__m512i qh, __m512i shift) {
          return _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift), low2), 4);
        };
        const __m512i q[4] = {
            _mm512_or_si512(_mm512_and_si512(ql0, low4), high(qh0, shift_a)),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql0, 4), low4), high(qh0, shift_b)),
            _mm512_or_si512(_mm512_and_si512(ql1, low4), high(qh1, shift_a)),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql1, 4), low4), high(qh1, shift_b)),
        };
        const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192)));
        __m512i scg[4];
        for (int k = 0; k < 4; ++k) scg[k] = _mm512_permutexvar_epi32(group_idx[k], sc);
        for (int t = 0; t < n_tokens; ++t) {
          const uint8_t* a = act + static_cast<size_t>(t) * stride;
          const uint8_t* x = a + sb * kQK_K;
          const __m512i bsums = _mm512_cvtepi16_epi32(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(Q8KAct::record(a, cols, sb) + 16)));
          __m512i s = _mm512_slli_epi32(_mm512_mullo_epi32(sc, bsums), 5);  // the -32 offset, negated below
          s = _mm512_sub_epi32(_mm512_setzero_si512(), s);
          for (int k = 0; k < 4; ++k) {
            const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[k], _mm512_loadu_si512(x + 64 * k));
            s = _mm512_add_epi32(s, _mm512_mullo_epi32(dot, scg[k]));
          }
          _mm512_store_si512(part[t][r], s);
        }
      }
      const __m512 dwv = Q6KRows::d(rows, sb);
      for (int t = 0; t < n_tokens; ++t) {
        __m512i parts[16];
        for (int r = 0; r < 16; ++r) parts[r] = _mm512_load_si512(part[t][r]);
        const __m512i isum = reduce_rows_16(parts);
        float da;
        std::memcpy(&da, Q8KAct::record(act + static_cast<size_t>(t) * stride, cols, sb), sizeof da);
        const __m512 v = _mm512_mul_ps(_mm512_mul_ps(dwv, _mm512_set1_ps(da)), _mm512_cvtepi32_ps(isum));
        _mm512_store_ps(sums + 16 * t, _mm512_add_ps(_mm512_load_ps(sums + 16 * t), v));
      }
    }
  }
};

// Interleaved panels add a direct path for 1..2 tokens: quant registers are built from the ql and
// qh registers as pack() builds them and multiplied right away, with the micro-kernel's integer
// sums and float steps (so results are identical).
struct InterleavedQ6_KKernel : Q6_KPacked<Q6KInterleaved> {
  static constexpr int kDirectTokens = 2;

  static void direct(const InterleavedPanel& p, int n_blocks, const uint8_t* act, size_t stride, int64_t cols,
                     int n_tokens, float* sums, StreamAhead& ahead) {
    if (n_tokens == 1) {
      direct_tokens<1>(p, n_blocks, act, stride, cols, sums, ahead);
    } else {
      direct_tokens<2>(p, n_blocks, act, stride, cols, sums, ahead);
    }
  }

  template <int T>
  static void direct_tokens(const InterleavedPanel& p, int n_blocks, const uint8_t* act, size_t stride, int64_t cols,
                            float* sums, StreamAhead& ahead) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i bits45 = _mm512_set1_epi8(0x30);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < n_blocks; ++sb) {
      const uint8_t* regs = p.at(Q6KInterleaved::place(p, sb).registers);
      const int8_t* qs[T];
      const uint8_t* rec[T];
      token_rows<T>(act, stride, cols, sb, qs, rec);
      __m512i sc[16];
      for (int g = 0; g < 16; ++g) {
        const __m512i word = _mm512_loadu_si512(regs + 64 * (48 + g / 4));
        sc[g] = _mm512_srai_epi32(_mm512_slli_epi32(word, 24 - 8 * (g % 4)), 24);  // signed byte g
      }
      __m512i sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
      // Half h holds elements 128h..128h+127: ql registers 16h..16h+15 (low nibbles: quant
      // registers 32h+k, high: 32h+16+k) and qh registers 8h..8h+7 (2 bits each at shifts 0, 2,
      // 4, 6 for quant registers 32h+k, +8, +16, +24). Step j finishes groups 8h+j and 8h+4+j.
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 4; ++j) {
          ahead.read(16 * sizeof(BlockQ6_K) / 8);
          __m512i dot_a[T], dot_b[T];
          for (int t = 0; t < T; ++t) dot_a[t] = dot_b[t] = _mm512_setzero_si512();
          for (int i = 0; i < 4; ++i) {
            const int k = 4 * j + i;
            const __m512i ql = _mm512_loadu_si512(regs + 64 * (16 * h + k));
            const __m512i qh = _mm512_loadu_si512(regs + 64 * (32 + 8 * h + k % 8));
            // High bits (0-1 or 2-3 for a, 4-5 or 6-7 for b) shifted to 4-5 (16-bit shifts of at most 4
            // stay in their byte), masked, and merged by one ternary op: (nibble & 0x0F) | high.
            const bool upper = k >= 8;
            const __m512i hi_a = _mm512_and_si512(upper ? _mm512_slli_epi16(qh, 2) : _mm512_slli_epi16(qh, 4), bits45);
            const __m512i hi_b = _mm512_and_si512(upper ? _mm512_srli_epi16(qh, 2) : qh, bits45);
            const __m512i qa = _mm512_ternarylogic_epi32(ql, hi_a, low4, 0xEC);                        // register 32h+k
            const __m512i qb = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), hi_b, low4, 0xEC);  // 32h+16+k
            for (int t = 0; t < T; ++t) {
              dot_a[t] = _mm512_dpbusd_epi32(dot_a[t], qa, _mm512_set1_epi32(load_i32(qs[t] + 4 * (32 * h + k))));
              dot_b[t] = _mm512_dpbusd_epi32(dot_b[t], qb, _mm512_set1_epi32(load_i32(qs[t] + 4 * (32 * h + 16 + k))));
            }
          }
          for (int t = 0; t < T; ++t) {
            sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot_a[t], sc[8 * h + j]));
            sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot_b[t], sc[8 * h + 4 + j]));
          }
        }
      }
      const __m512 dw = Q6KInterleaved::d(p, sb);
      for (int t = 0; t < T; ++t) {
        __m512i off = _mm512_setzero_si512();
        for (int q = 0; q < 8; ++q) {
          const __m512i pair = _mm512_or_si512(_mm512_and_si512(sc[2 * q], _mm512_set1_epi32(0xFFFF)),
                                               _mm512_slli_epi32(sc[2 * q + 1], 16));
          off = _mm512_dpwssd_epi32(off, pair, _mm512_set1_epi32(load_i32(rec[t] + 16 + 4 * q)));
        }
        const __m512i isum = _mm512_sub_epi32(sumi[t], _mm512_slli_epi32(off, 5));
        float da;
        std::memcpy(&da, rec[t], sizeof da);
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(da)), _mm512_cvtepi32_ps(isum)));
      }
    }
    for (int t = 0; t < T; ++t) _mm512_store_ps(sums + 16 * t, acc[t]);
  }
};

// interleave_panel for Q6_K: the transposes Q6KRows does, stored once.
void interleave_q6k_panel(const uint8_t* src, size_t row_bytes, int64_t cols, int64_t panel, uint8_t* dst) {
  const PanelRows rows = PanelRows::whole(src, row_bytes, panel);
  const int64_t n_blocks = cols / kQK_K;
  for (int64_t sb = 0; sb < n_blocks; ++sb) {
    const GroupedBlock place(n_blocks, sb, 2, Q6KInterleaved::kRegisterBytes, 2 * kGemmPanelRows);
    __m512i ql[32], qh[16], s[4];
    Q6KRows::ql_qh(rows, sb, ql, qh);
    Q6KRows::scale_words(rows, sb, s);
    uint8_t* out = dst + place.registers;
    for (int c = 0; c < 32; ++c) _mm512_storeu_si512(out + 64 * c, ql[c]);
    for (int c = 0; c < 16; ++c) _mm512_storeu_si512(out + 64 * (32 + c), qh[c]);
    for (int k = 0; k < 4; ++k) _mm512_storeu_si512(out + 64 * (48 + k), s[k]);
    alignas(32) uint16_t d[16];
    for (int r = 0; r < 16; ++r) std::memcpy(&d[r], rows.row[r] + Q6KRows::at(sb) + 208, 2);
    std::memcpy(dst + place.fields, d, sizeof d);
  }
}

// ---- IQ4_XS ----
// Packed super-block: 64 quant registers (register 8g + c: sub-block g, elements 4c..4c+3, as
// level + 128), 8 registers of sub-block scales (int32, -32..31), 4 of scale pairs (int16
// s[2p], s[2p+1]) for the offset correction, then d.
struct IQ4XSLayout {
  static constexpr int kScales = 64 * 64;
  static constexpr int kPairs = kScales + 8 * 64;
  static constexpr int kD = kPairs + 4 * 64;
  static constexpr int kBytes = kD + 64;
};

struct IQ4_XSKernel {
  static constexpr int kBlockCols = kQK_K;
  static constexpr int kPackedBlockBytes = IQ4XSLayout::kBytes;
  static constexpr int kRunBlocks = 2;
  static constexpr int kTile = 8;
  static constexpr int kDirectTokens = 2;

  // Super-block sb of each row: the 8 sub-block scales (int32, -32..31), the same as int16
  // pairs (s[2p], s[2p+1]) for the offset correction, and d.
  static void load_scales(const PanelRows& rows, int64_t sb, __m512i sc[8], __m512i pairs[4], __m512& d) {
    const size_t at = static_cast<size_t>(sb) * sizeof(BlockIQ4_XS);
    const __m512i head = rows.gather_i32(at);     // d (low half), scales_h (high half)
    const __m512i low = rows.gather_i32(at + 4);  // scales_l: nibble g = low 4 bits of scale g
    const __m512i high = _mm512_srli_epi32(head, 16);
    for (int g = 0; g < 8; ++g) {
      const __m512i l = _mm512_and_si512(_mm512_srli_epi32(low, 4 * g), _mm512_set1_epi32(0xF));
      const __m512i h = _mm512_and_si512(_mm512_srli_epi32(high, 2 * g), _mm512_set1_epi32(3));
      sc[g] = _mm512_sub_epi32(_mm512_or_si512(l, _mm512_slli_epi32(h, 4)), _mm512_set1_epi32(32));
    }
    for (int p = 0; p < 4; ++p) {
      pairs[p] = _mm512_or_si512(_mm512_and_si512(sc[2 * p], _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(sc[2 * p + 1], 16));
    }
    d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head));
  }

  // Sub-block g of super-block sb of each row as 8 registers of level + 128 (register c:
  // elements 4c..4c+3).
  static void quants(const PanelRows& rows, int64_t sb, int g, __m512i q[8]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i table = offset_level_table(kIQ4NLValues);
    __m512i bytes[4];  // qs bytes 16g..16g+15: elements 0..15 low nibbles, 16..31 high
    transpose_16x4_epi32(rows.row, static_cast<size_t>(sb) * sizeof(BlockIQ4_XS) + 8 + 16 * g, bytes);
    for (int c = 0; c < 4; ++c) {
      q[c] = _mm512_shuffle_epi8(table, _mm512_and_si512(bytes[c], low4));
      q[c + 4] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(bytes[c], 4), low4));
    }
  }

  // The float step of one super-block for token t: acc += (d_w * d_a) * (sumi - 128 * offset).
  static __m512 finish(__m512 acc, __m512i sumi, const __m512i pairs[4], __m512 dw, const uint8_t* rec) {
    __m512i offset = _mm512_setzero_si512();  // sum over sub-blocks of scale * activation sum
    for (int p = 0; p < 4; ++p) offset = _mm512_dpwssd_epi32(offset, pairs[p], _mm512_set1_epi32(load_i32(rec + 48 + 4 * p)));
    const __m512i isum = _mm512_sub_epi32(sumi, _mm512_slli_epi32(offset, 7));
    float da;
    std::memcpy(&da, rec, sizeof da);
    return _mm512_add_ps(acc, _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(da)), _mm512_cvtepi32_ps(isum)));
  }

  static void pack(const PanelRows& rows, int64_t first_block, int n_blocks, uint8_t* out) {
    for (int b = 0; b < n_blocks; ++b) {
      uint8_t* dst = out + b * kPackedBlockBytes;
      for (int g = 0; g < 8; ++g) {
        __m512i q[8];
        quants(rows, first_block + b, g, q);
        for (int c = 0; c < 8; ++c) _mm512_store_si512(dst + 64 * (8 * g + c), q[c]);
      }
      __m512i sc[8], pairs[4];
      __m512 d;
      load_scales(rows, first_block + b, sc, pairs, d);
      for (int g = 0; g < 8; ++g) _mm512_store_si512(dst + IQ4XSLayout::kScales + 64 * g, sc[g]);
      for (int p = 0; p < 4; ++p) _mm512_store_si512(dst + IQ4XSLayout::kPairs + 64 * p, pairs[p]);
      _mm512_store_ps(dst + IQ4XSLayout::kD, d);
    }
  }

  // 1..2 tokens: each sub-block of the 16 rows is transposed and multiplied right away.
  static void direct(const PanelRows& rows, int n_blocks, const uint8_t* act, size_t stride, int64_t cols,
                     int n_tokens, float* sums, StreamAhead& ahead) {
    if (n_tokens == 1) {
      direct_tokens<1>(rows, n_blocks, act, stride, cols, sums, ahead);
    } else {
      direct_tokens<2>(rows, n_blocks, act, stride, cols, sums, ahead);
    }
  }

  template <int T>
  static void direct_tokens(const PanelRows& rows, int n_blocks, const uint8_t* act, size_t stride, int64_t cols,
                            float* sums, StreamAhead& ahead) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < n_blocks; ++sb) {
      const int8_t* qs[T];
      const uint8_t* rec[T];
      token_rows<T>(act, stride, cols, sb, qs, rec);
      __m512i sc[8], pairs[4];
      __m512 dw;
      load_scales(rows, sb, sc, pairs, dw);
      __m512i sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
      for (int g = 0; g < 8; ++g) {
        if (g % 2 == 0) ahead.read(16 * sizeof(BlockIQ4_XS) / 4);
        __m512i q[8];
        quants(rows, sb, g, q);
        for (int t = 0; t < T; ++t) {
          __m512i dot = _mm512_setzero_si512();
          for (int c = 0; c < 8; ++c) {
            dot = _mm512_dpbusd_epi32(dot, q[c], _mm512_set1_epi32(load_i32(qs[t] + 32 * g + 4 * c)));
          }
          sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot, sc[g]));
        }
      }
      for (int t = 0; t < T; ++t) acc[t] = finish(acc[t], sumi[t], pairs, dw, rec[t]);
    }
    for (int t = 0; t < T; ++t) _mm512_store_ps(sums + 16 * t, acc[t]);
  }

  template <int T>
  static void micro(const uint8_t* packed, int n_blocks, int64_t first_block, const uint8_t* act, size_t stride,
                    int64_t cols, float* sums, bool first_run) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first_run ? _mm512_setzero_ps() : _mm512_load_ps(sums + 16 * t);
    for (int b = 0; b < n_blocks; ++b) {
      const uint8_t* w = packed + b * kPackedBlockBytes;
      const int8_t* qs[T];
      const uint8_t* rec[T];
      token_rows<T>(act, stride, cols, first_block + b, qs, rec);
      __m512i sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
      add_scaled_group_dots<T, 8, 8>(w, w + IQ4XSLayout::kScales, qs, sumi);
      const __m512 dw = _mm512_load_ps(w + IQ4XSLayout::kD);
      __m512i pairs[4];
      for (int p = 0; p < 4; ++p) pairs[p] = _mm512_load_si512(w + IQ4XSLayout::kPairs + 64 * p);
      for (int t = 0; t < T; ++t) acc[t] = finish(acc[t], sumi[t], pairs, dw, rec[t]);
    }
    for (int t = 0; t < T; ++t) _mm512_store_ps(sums + 16 * t, acc[t]);
  }
};

}  // namespace

void fill_avx512_gemm_kquant_kernels(KernelTable& t) {
  t.gemm[static_cast<int>(DType::kIQ4_XS)] = {q8k_act_row_bytes, prepare_act_q8k, gemm_drive<IQ4_XSKernel>};
  auto& q4k = t.gemm[static_cast<int>(DType::kQ4_K)];
  q4k = {q8k_act_row_bytes, prepare_act_q8k, gemm_drive<Q4_KKernel<Q4KRows>>};
  q4k.run_interleaved = gemm_drive<Q4_KKernel<Q4KInterleaved>>;
  q4k.interleave_panel = interleave_q4k_panel;
  auto& q6k = t.gemm[static_cast<int>(DType::kQ6_K)];
  q6k = {q8k_act_row_bytes, prepare_act_q8k, gemm_drive<Q6_KKernel>};
  q6k.run_interleaved = gemm_drive<InterleavedQ6_KKernel>;
  q6k.interleave_panel = interleave_q6k_panel;
}

}  // namespace hearth::kernels
