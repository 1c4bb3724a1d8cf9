// Byte layouts of the quantized block formats, exactly as GGUF files store them (the ggml
// ecosystem's layouts): a file written by another tool is read by casting its tensor data to
// an array of these structs. Half-precision fields are raw binary16 bits (see fp16.h).
// The static_asserts pin each size; a change here breaks compatibility with every file.
#pragma once

#include <cstdint>

namespace hearth {

inline constexpr int kQK = 32;     // elements per legacy block (Q4_0 .. Q8_1)
inline constexpr int kQK_K = 256;  // elements per K-quant super-block
inline constexpr int kQ4KScaleBytes = 12;

// x = d * (q - 8), q in 0..15. qs[j] holds element j (low nibble) and j+16 (high nibble).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// x = d * q + m, q in 0..15. Nibbles as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// x = d * (q - 16), q in 0..31: low 4 bits in qs (as Q4_0), bit 4 of element j in bit j of
// the little-endian 32-bit word qh.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// x = d * q + m, q in 0..31, bits as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// x = d * q, q in -127..127.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q8_0 plus s = d * sum(qs), used for activations multiplied with Q4_1/Q5_1 weights.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_1) == 36);

// 16 groups of 16: x = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4), q in 0..3.
// Element e: byte qs[32 * (e / 128) + e % 32], bits 2 * ((e % 128) / 32).
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// 16 groups of 16: x = d * (s[g] - 32) * (q - 4), q in 0..7. Low 2 bits of q as in Q2_K; the
// high bit of element e is bit e / 32 of hmask[e % 32]. The 16 6-bit scales: low 4 bits in
// the nibbles of scales[0..7] (g < 8 low nibble of scales[g], else high nibble of
// scales[g - 8]), high 2 bits in scales[8 + g % 4] at bit 2 * (g / 4).
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// 8 groups of 32: x = d * sc[g] * q - dmin * m[g], q in 0..15, 6-bit sc/m packed in 12 bytes
// (see kquant_scale_min). Element e: byte qs[32 * (e / 64) + e % 32], high nibble when
// (e % 64) >= 32.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kQ4KScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// As Q4_K with q in 0..31; bit 4 of element e is bit 2 * (e / 64) + ((e % 64) >= 32) of
// qh[e % 32].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kQ4KScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// 16 groups of 16: x = d * scales[g] * (q - 32), q in 0..63. For element e with h = e / 128,
// r = e % 128: low nibble in ql[64 h + r % 64] (high nibble when r >= 64), top 2 bits in
// qh[32 h + r % 32] at bit 2 * (r / 32).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// Activations for K-quant dot products: x = d * q; bsums[g] = sum of the 16 q of group g.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// ---- non-linear 4-bit types: a 4-bit index selects one of 16 fixed levels ----

// The 16 levels of IQ4_NL and IQ4_XS (int8, spaced more closely near zero).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// The 16 levels of MXFP4: the E2M1 values {0, 0.5, 1, 1.5, 2, 3, 4, 6} and their negatives,
// doubled so that they are integers (the block scale is halved to match).
inline constexpr int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// x = d * kIQ4NLValues[q]. qs[j] holds element j (low nibble) and j+16 (high nibble), as Q4_0.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// 8 sub-blocks of 32: x = d * (ls[j] - 32) * kIQ4NLValues[q] with the 6-bit ls[j] of
// sub-block j (see iq4xs_scale); sub-block j's quants are qs[16 j .. 16 j + 15], nibbles as
// IQ4_NL.
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;              // bits 2j..2j+1: the high 2 bits of ls[j]
  uint8_t scales_l[kQK_K / 64];   // nibble j % 2 of byte j / 2: the low 4 bits of ls[j]
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// x = 2^(e - 128) * kMXFP4Values[q] (e: an E8M0 exponent; 2^(e - 127) for the undoubled
// levels). Nibbles as IQ4_NL. 17 bytes: blocks are only byte-aligned.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockMXFP4) == 17);

// The 6-bit scale (0..63, stored with +32 bias) of sub-block j (0..7) of an IQ4_XS block.
inline int iq4xs_scale(int j, const BlockIQ4_XS& b) {
  return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4);
}

// 2^(e - 128) as a float, exactly (e = 0 and 1 give the subnormals 2^-128 and 2^-127).
inline float mxfp4_half_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e) - 1u) << 23;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

// Unpacks the 6-bit scale and min of group j (0..7) of a Q4_K/Q5_K block.
inline void kquant_scale_min(int j, const uint8_t* scales, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// The 6-bit scale (0..63, stored with +32 bias) of group g (0..15) of a Q3_K block.
inline int q3k_scale(int g, const uint8_t* scales) {
  const int low = g < 8 ? (scales[g] & 0xF) : (scales[g - 8] >> 4);
  const int high = (scales[8 + g % 4] >> (2 * (g / 4))) & 3;
  return low | (high << 4);
}

}  // namespace hearth
