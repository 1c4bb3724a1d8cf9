// Half-precision conversions used by every quantized format: IEEE binary16 (the "d"/"m"
// scales of the blocks and F16 tensors) and bfloat16 (BF16 tensors). Rounding is
// round-to-nearest-even, as the GGUF ecosystem's converters do, so that converting an F32
// tensor here yields the same bytes as the files other tools write.
#pragma once

#include <cstdint>
#include <cstring>

namespace hearth {

inline uint32_t fp32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float fp32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Exact: every binary16 value (subnormals, infinities, NaNs) has an fp32 equivalent.
inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return fp32_from_bits(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return fp32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return fp32_from_bits(sign);  // signed zero
  // Subnormal: normalise the mantissa.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return fp32_from_bits(sign | ((112u - static_cast<uint32_t>(e)) << 23) | ((mant & 0x3FFu) << 13));
}

// Round-to-nearest-even; overflow gives infinity, NaN stays NaN (quiet, sign kept).
inline uint16_t fp32_to_fp16(float f) {
  const uint32_t u = fp32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (abs >= 0x38800000u) {  // normal binary16 range (>= 2^-14)
    const uint32_t lsb = (abs >> 13) & 1u;
    const uint32_t rounded = abs + 0xFFFu + lsb;
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (abs < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
  // Subnormal result: value = mant * 2^-24 with the implicit bit restored.
  const uint32_t exp = abs >> 23;                      // 102..112
  const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;  // 24 bits
  const uint32_t shift = 126u - exp;                   // 14..24
  const uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  const uint32_t out = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
  return static_cast<uint16_t>(sign | out);
}

inline float bf16_to_fp32(uint16_t h) { return fp32_from_bits(static_cast<uint32_t>(h) << 16); }

// Round-to-nearest-even; NaN keeps its sign and top payload bits and is made quiet.
inline uint16_t fp32_to_bf16(float f) {
  const uint32_t u = fp32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

void fp16_to_fp32_row(const uint16_t* src, float* dst, int64_t n);
void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n);
void bf16_to_fp32_row(const uint16_t* src, float* dst, int64_t n);
void fp32_to_bf16_row(const float* src, uint16_t* dst, int64_t n);

}  // namespace hearth
