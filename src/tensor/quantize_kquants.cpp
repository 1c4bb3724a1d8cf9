// Reference quantizers for the K-quant super-block types Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and
// Q8_K. They reproduce the ecosystem's reference algorithms (the scale searches known as
// make_qx_quants, make_q3_quants and make_qkx2_quants, then 6- or 4-bit quantization of the
// per-group scales against one fp16 super-scale) with the same float operation order, so
// the bytes match files written by llama-quantize without an importance matrix.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, by the float-addition trick the reference code uses (valid
// for |v| < 2^22; larger inputs only occur for degenerate data and give garbage, not UB).
inline int nearest_int(float v) {
  const float shifted = v + 12582912.0f;  // 1.5 * 2^23
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007FFFFF) - 0x00400000;
}

// Symmetric search: scale for n values with levels -nmax..nmax-1, weights chosen by
// rmse_type (1: x^2). L receives level + nmax. Returns the scale (0 for an all-zero group).
float search_symmetric_scale(int n, int nmax, const float* x, int8_t* L, int rmse_type) {
  float max = 0.0f;
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  auto weight = [&](int i) -> float {
    switch (rmse_type) {
      case 1: return x[i] * x[i];
      case 2: return 1.0f;
      case 3: return std::fabs(x[i]);
      default: return std::sqrt(std::fabs(x[i]));
    }
  };
  auto level = [&](float iscale, int i) {
    const int l = nearest_int(iscale * x[i]);
    return std::max(-nmax, std::min(nmax - 1, l));
  };
  float iscale = -static_cast<float>(nmax) / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(nmax + level(iscale, i));
    return 1.0f / iscale;
  }
  float sumlx = 0.0f;
  float suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, i);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = weight(i);
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = 0.0f;
    suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale, i);
      const float w = weight(i);
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(nmax + level(iscale, i));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Symmetric search for Q3_K: start from the max-based levels, then move single levels while
// that lowers the x^2-weighted error. L receives level + nmax.
float search_q3_scale(int n, int nmax, const float* x, int8_t* L) {
  float max = 0.0f;
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float iscale = -static_cast<float>(nmax) / max;
  float sumlx = 0.0f;
  float suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
      if (slx > 0.0f) {
        float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
        int new_l = nearest_int(x[i] * sl2 / slx);
        new_l = std::max(-nmax, std::min(nmax - 1, new_l));
        if (new_l != L[i]) {
          slx += w * x[i] * static_cast<float>(new_l);
          sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
          if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return sumlx / suml2;
}

// Asymmetric search (scale and min) with levels 0..nmax, minimising the weighted squared
// (or absolute, use_mad) error over nstep+1 candidate scales. Returns the scale; *neg_min
// receives -min (>= 0).
float search_affine_scale(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                          float* neg_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                          bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.0f;
  }
  auto error_of = [use_mad](float diff) { return use_mad ? std::fabs(diff) : diff * diff; };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_error += weights[i] * error_of(diff);
  }
  if (nstep < 1) {
    *neg_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0.0f;
    float sum_l2 = 0.0f;
    float sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0.0f) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0.0f) {
        this_min = 0.0f;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0.0f;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        cur_error += weights[i] * error_of(diff);
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

inline int clamp_int(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// Packs 2-bit levels of one 256-element block: element e to qs[32*(e/128) + e%32], bits
// 2*((e%128)/32). Shared by Q2_K and Q3_K.
void pack_2bit_levels(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
    }
  }
}

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): per-group affine searches, 6-bit packing of
// the group scales and mins, then the final levels against the packed scales.
void quantize_affine_superblock(const float* x, int nmax, float rmin, int nstep, uint16_t* d_out,
                                uint16_t* dmin_out, uint8_t* packed_scales, uint8_t* L) {
  float scales[8];
  float mins[8];
  float weights[32];
  uint8_t Laux[32];
  float max_scale = 0.0f;
  float max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* g = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += g[l] * g[l];
    const float av_x = std::sqrt(sum_x2 / 32.0f);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(g[l]);
    scales[j] = search_affine_scale(32, nmax, g, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f,
                                    nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  std::memset(packed_scales, 0, kQ4KScaleBytes);
  for (int j = 0; j < 8; ++j) {
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed_scales[j] = ls;
      packed_scales[j + 4] = lm;
    } else {
      packed_scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed_scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed_scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = fp32_to_fp16(max_scale / 63.0f);
  *dmin_out = fp32_to_fp16(max_min / 63.0f);
  const float d_all = fp16_to_fp32(*d_out);
  const float dmin_all = fp16_to_fp32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    kquant_scale_min(j, packed_scales, &sc, &m);
    const float d = d_all * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = dmin_all * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      L[32 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

void quantize_row_q2_k(const float* src, BlockQ2_K* dst, int64_t n) {
  const int64_t nb = n / kQK_K;
  constexpr float kScaleLevels = 15.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    BlockQ2_K& y = dst[i];
    uint8_t L[kQK_K];
    uint8_t Laux[16];
    float weights[16];
    float scales[16];
    float mins[16];
    float max_scale = 0.0f;
    float max_min = 0.0f;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = search_affine_scale(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                      0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0.0f) {
      const float iscale = kScaleLevels / max_scale;
      for (int j = 0; j < 16; ++j) y.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y.d = fp32_to_fp16(max_scale / kScaleLevels);
    } else {
      for (int j = 0; j < 16; ++j) y.scales[j] = 0;
      y.d = fp32_to_fp16(0.0f);
    }
    if (max_min > 0.0f) {
      const float iscale = kScaleLevels / max_min;
      for (int j = 0; j < 16; ++j) {
        y.scales[j] = static_cast<uint8_t>(y.scales[j] | (nearest_int(iscale * mins[j]) << 4));
      }
      y.dmin = fp32_to_fp16(max_min / kScaleLevels);
    } else {
      y.dmin = fp32_to_fp16(0.0f);
    }
    const float d_all = fp16_to_fp32(y.d);
    const float dmin_all = fp16_to_fp32(y.dmin);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(y.scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = dmin_all * static_cast<float>(y.scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[16 * j + ii] + dm) / d), 0, 3));
      }
    }
    pack_2bit_levels(L, y.qs);
  }
}

void quantize_row_q3_k(const float* src, BlockQ3_K* dst, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    BlockQ3_K& y = dst[i];
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
      scales[j] = search_q3_scale(16, 4, x + 16 * j, L + 16 * j);
      const float a = std::fabs(scales[j]);
      if (a > amax) {
        amax = a;
        max_scale = scales[j];
      }
    }
    std::memset(y.scales, 0, sizeof y.scales);
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = clamp_int(static_cast<int8_t>(nearest_int(iscale * scales[j])), -32, 31) + 32;
        if (j < 8) {
          y.scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          y.scales[j - 8] = static_cast<uint8_t>(y.scales[j - 8] | ((l & 0xF) << 4));
        }
        y.scales[8 + j % 4] = static_cast<uint8_t>(y.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      y.d = fp32_to_fp16(1.0f / iscale);
    } else {
      y.d = fp32_to_fp16(0.0f);
    }
    const float d_all = fp16_to_fp32(y.d);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(q3k_scale(j, y.scales) - 32);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
      }
    }
    std::memset(y.hmask, 0, sizeof y.hmask);
    uint8_t levels[kQK_K];
    for (int j = 0; j < kQK_K; ++j) {
      int l = L[j];
      if (l > 3) {
        y.hmask[j % 32] = static_cast<uint8_t>(y.hmask[j % 32] | (1u << (j / 32)));
        l -= 4;
      }
      levels[j] = static_cast<uint8_t>(l);
    }
    pack_2bit_levels(levels, y.qs);
  }
}

void quantize_row_q4_k(const float* src, BlockQ4_K* dst, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    uint8_t L[kQK_K];
    quantize_affine_superblock(x, 15, -1.0f, 20, &dst[i].d, &dst[i].dmin, dst[i].scales, L);
    uint8_t* q = dst[i].qs;
    for (int j = 0; j < kQK_K; j += 64) {
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
      q += 32;
    }
  }
}

void quantize_row_q5_k(const float* src, BlockQ5_K* dst, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    uint8_t L[kQK_K];
    quantize_affine_superblock(x, 31, -0.5f, 15, &dst[i].d, &dst[i].dmin, dst[i].scales, L);
    uint8_t* qh = dst[i].qh;
    uint8_t* ql = dst[i].qs;
    std::memset(qh, 0, sizeof dst[i].qh);
    uint8_t m1 = 1;
    uint8_t m2 = 2;
    for (int base = 0; base < kQK_K; base += 64) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[base + j];
        if (l1 > 15) {
          l1 -= 16;
          qh[j] |= m1;
        }
        int l2 = L[base + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          qh[j] |= m2;
        }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
      ql += 32;
    }
  }
}

void quantize_row_q6_k(const float* src, BlockQ6_K* dst, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    BlockQ6_K& y = dst[i];
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0.0f;
    float max_abs_scale = 0.0f;
    for (int ib = 0; ib < 16; ++ib) {
      scales[ib] = search_symmetric_scale(16, 32, x + 16 * ib, L + 16 * ib, 1);
      const float a = std::fabs(scales[ib]);
      if (a > max_abs_scale) {
        max_abs_scale = a;
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y, 0, sizeof y);
      continue;
    }
    const float iscale = -128.0f / max_scale;
    y.d = fp32_to_fp16(1.0f / iscale);
    for (int ib = 0; ib < 16; ++ib) {
      y.scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    }
    const float d_all = fp16_to_fp32(y.d);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(y.scales[j]);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
      }
    }
    uint8_t* ql = y.ql;
    uint8_t* qh = y.qh;
    for (int j = 0; j < kQK_K; j += 128) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l] & 0xF;
        const int q2 = L[j + l + 32] & 0xF;
        const int q3 = L[j + l + 64] & 0xF;
        const int q4 = L[j + l + 96] & 0xF;
        ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
        ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
        qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                     ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
      }
      ql += 64;
      qh += 32;
    }
  }
}

void quantize_row_q8_k(const float* src, BlockQ8_K* dst, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    BlockQ8_K& y = dst[i];
    float max = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y, 0, sizeof y);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      y.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    }
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y.qs[16 * g + l];
      y.bsums[g] = static_cast<int16_t>(sum);
    }
    y.d = 1.0f / iscale;
  }
}

}  // namespace hearth
