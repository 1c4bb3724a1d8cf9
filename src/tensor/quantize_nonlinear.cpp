// Dequantizers and reference quantizers for the non-linear 4-bit types, whose 4-bit codes index
// a fixed table of levels instead of being linear steps: IQ4_NL (32-element blocks, one F16
// scale), IQ4_XS (256-element super-blocks with 6-bit sub-block scales, same levels) and MXFP4
// (32-element blocks of E2M1 codes under one E8M0 exponent). The IQ4 quantizers follow the
// ecosystem's search without an importance matrix operation for operation (same weights, same
// tries, same rounding), so quantizing an F32 tensor gives the bytes llama-quantize writes;
// the MXFP4 one picks the same exponent and nearest levels as its reference quantizer.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth {
namespace {

constexpr float kGroupMaxEps = 1e-15f;
constexpr int kIQ4Tries = 7;  // scale candidates tried on each side of the first guess

// Round to nearest, ties to even, by the float-addition trick the reference code uses (exact
// for the small values the sub-block scale search produces).
inline int nearest_int(float v) {
  const float shifted = v + 12582912.0f;  // 1.5 * 2^23
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007FFFFF) - 0x00400000;
}

// Index of the IQ4 level closest to v (levels ascending; on a tie between two neighbours the
// upper one, as the reference's bisection resolves it).
inline uint8_t nearest_iq4_level(float v) {
  const int8_t* levels = kIQ4NLValues;
  if (v <= levels[0]) return 0;
  if (v >= levels[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < levels[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return static_cast<uint8_t>(v - static_cast<float>(levels[hi - 1]) < static_cast<float>(levels[hi]) - v ? hi - 1 : hi);
}

// Weighted least-squares fit of one group of 32 values x to the IQ4 levels (weights x^2):
// starts from the scale that maps the largest-magnitude value onto level -127, then tries the
// scales that map it onto -127 + t for t in [-7, 7], keeping the one that explains most of x.
// Returns the scale (0 for a group of zeros).
float fit_iq4_group(const float* x) {
  float weight[kQK];
  for (int j = 0; j < kQK; ++j) weight[j] = x[j] * x[j];
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax < kGroupMaxEps) return 0.0f;
  const float lowest = static_cast<float>(kIQ4NLValues[0]);
  // Weighted sums of q * x and q * q for the levels scale 1/inv picks.
  auto fit = [&](float inv, float* sumqx, float* sumq2) {
    float qx = 0.0f, q2 = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      const float q = static_cast<float>(kIQ4NLValues[nearest_iq4_level(inv * x[j])]);
      qx += weight[j] * q * x[j];
      q2 += weight[j] * q * q;
    }
    *sumqx = qx;
    *sumq2 = q2;
  };
  float sumqx = 0.0f, sumq2 = 0.0f;
  const float d0 = -max / lowest;
  fit(1.0f / d0, &sumqx, &sumq2);
  float d = sumqx / sumq2;
  float best = d * sumqx;
  for (int t = -kIQ4Tries; t <= kIQ4Tries; ++t) {
    fit(static_cast<float>(t + kIQ4NLValues[0]) / max, &sumqx, &sumq2);
    if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// Level indices of 32 values under scale 1/inv, packed two per byte (element j low, j+16 high).
void pack_iq4_group(const float* x, float inv, uint8_t* qs) {
  uint8_t l[kQK];
  for (int j = 0; j < kQK; ++j) l[j] = nearest_iq4_level(inv * x[j]);
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>(l[j] | (l[j + kQK / 2] << 4));
}

inline void unpack_nibbles(const uint8_t* qs, const int8_t* levels, float scale, float* y) {
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = scale * static_cast<float>(levels[qs[j] & 0xF]);
    y[j + kQK / 2] = scale * static_cast<float>(levels[qs[j] >> 4]);
  }
}

// Index of the MXFP4 level closest to v at half-scale d (the first on ties).
inline uint8_t nearest_mxfp4_level(float v, float d) {
  int best = 0;
  float best_err = std::fabs(static_cast<float>(kMXFP4Values[0]) * d - v);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kMXFP4Values[i]) * d - v);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(best);
}

}  // namespace

void dequantize_row_iq4_nl(const BlockIQ4_NL* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) unpack_nibbles(src[i].qs, kIQ4NLValues, fp16_to_fp32(src[i].d), dst + i * kQK);
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = fp16_to_fp32(src[i].d);
    for (int j = 0; j < kQK_K / kQK; ++j) {
      const float dl = d * static_cast<float>(iq4xs_scale(j, src[i]) - 32);
      unpack_nibbles(src[i].qs + 16 * j, kIQ4NLValues, dl, dst + i * kQK_K + kQK * j);
    }
  }
}

void dequantize_row_mxfp4(const BlockMXFP4* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) unpack_nibbles(src[i].qs, kMXFP4Values, mxfp4_half_scale(src[i].e), dst + i * kQK);
}

void quantize_row_iq4_nl(const float* src, BlockIQ4_NL* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    const float d = fit_iq4_group(x);
    dst[i].d = fp32_to_fp16(d);
    pack_iq4_group(x, d != 0.0f ? 1.0f / d : 0.0f, dst[i].qs);
  }
}

void quantize_row_iq4_xs(const float* src, BlockIQ4_XS* dst, int64_t n) {
  constexpr int kGroups = kQK_K / kQK;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    BlockIQ4_XS& b = dst[i];
    float scales[kGroups];
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int j = 0; j < kGroups; ++j) {
      scales[j] = fit_iq4_group(x + kQK * j);
      if (std::fabs(scales[j]) > amax_scale) {
        amax_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    // The sub-block scales become 6-bit multiples of d; the largest maps onto -32.
    const float d = -max_scale / 32.0f;
    b.d = fp32_to_fp16(d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.scales_h = 0;
    std::memset(b.scales_l, 0, sizeof b.scales_l);
    for (int j = 0; j < kGroups; ++j) {
      const int l = std::clamp(nearest_int(id * scales[j]), -32, 31);
      const float dl = d * static_cast<float>(l);
      pack_iq4_group(x + kQK * j, dl != 0.0f ? 1.0f / dl : 0.0f, b.qs + 16 * j);
      const int biased = l + 32;
      b.scales_l[j / 2] = static_cast<uint8_t>(b.scales_l[j / 2] | ((biased & 0xF) << (4 * (j % 2))));
      b.scales_h = static_cast<uint16_t>(b.scales_h | ((biased >> 4) << (2 * j)));
    }
  }
}

void quantize_row_mxfp4(const float* src, BlockMXFP4* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    // The largest level (6 = 12 / 2) then covers amax: e = floor(log2(amax)) - 2 + 127. Inputs
    // outside what an E8M0 exponent can express clamp to its ends.
    uint8_t e = 0;
    if (amax > 0.0f) {
      const float biased = std::floor(std::log2(amax)) - 2.0f + 127.0f;
      e = static_cast<uint8_t>(std::clamp(biased, 0.0f, 255.0f));
    }
    const float d = mxfp4_half_scale(e);
    dst[i].e = e;
    for (int j = 0; j < kQK / 2; ++j) {
      dst[i].qs[j] = static_cast<uint8_t>(nearest_mxfp4_level(x[j], d) | (nearest_mxfp4_level(x[j + kQK / 2], d) << 4));
    }
  }
}

}  // namespace hearth
