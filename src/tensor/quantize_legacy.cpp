// Reference quantizers for the legacy 32-element block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and
// Q8_1. Each follows the ecosystem's reference algorithm step for step (same scale choice,
// same rounding, same float operation order) so the output is byte-identical to files that
// llama-quantize writes from the same F32 data.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth {
namespace {

// C's float-to-integer conversion (truncation toward zero) for values known to be small;
// NaN (only from NaN input) maps to 0 instead of being undefined behaviour.
inline int truncate_to_int(float v) {
  if (!(v > -1e9f && v < 1e9f)) return 0;
  return static_cast<int>(v);
}

// Value with the largest magnitude in the block (the first one on ties), keeping its sign.
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float v = x[j];
    if (amax < std::fabs(v)) {
      amax = std::fabs(v);
      max = v;
    }
  }
  return max;
}

inline void min_max(const float* x, int n, float* min_out, float* max_out) {
  float min = 3.402823466e+38f;
  float max = -3.402823466e+38f;
  for (int j = 0; j < n; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  *min_out = min;
  *max_out = max;
}

inline float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

inline int8_t round_to_int8(float v) {
  const float r = std::round(v);
  if (!(r >= -128.0f && r <= 127.0f)) return 0;
  return static_cast<int8_t>(r);
}

}  // namespace

void quantize_row_q4_0(const float* src, BlockQ4_0* dst, int64_t n) {
  const int64_t nb = n / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    const float d = signed_absmax(x, kQK) / -8.0f;
    const float id = inverse_or_zero(d);
    dst[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[kQK / 2 + j] * id;
      const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(truncate_to_int(x0 + 8.5f))));
      const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(truncate_to_int(x1 + 8.5f))));
      dst[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_row_q4_1(const float* src, BlockQ4_1* dst, int64_t n) {
  const int64_t nb = n / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    float min, max;
    min_max(x, kQK, &min, &max);
    const float d = (max - min) / 15.0f;
    const float id = inverse_or_zero(d);
    dst[i].d = fp32_to_fp16(d);
    dst[i].m = fp32_to_fp16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = (x[j] - min) * id;
      const float x1 = (x[kQK / 2 + j] - min) * id;
      const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(truncate_to_int(x0 + 0.5f))));
      const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(truncate_to_int(x1 + 0.5f))));
      dst[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_row_q5_0(const float* src, BlockQ5_0* dst, int64_t n) {
  const int64_t nb = n / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    const float d = signed_absmax(x, kQK) / -16.0f;
    const float id = inverse_or_zero(d);
    dst[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[kQK / 2 + j] * id;
      const uint32_t q0 = static_cast<uint8_t>(
          std::min(31, static_cast<int>(static_cast<int8_t>(truncate_to_int(x0 + 16.5f)))));
      const uint32_t q1 = static_cast<uint8_t>(
          std::min(31, static_cast<int>(static_cast<int8_t>(truncate_to_int(x1 + 16.5f)))));
      dst[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= ((q0 & 0x10u) >> 4) << j;
      qh |= ((q1 & 0x10u) >> 4) << (j + kQK / 2);
    }
    for (int b = 0; b < 4; ++b) dst[i].qh[b] = static_cast<uint8_t>(qh >> (8 * b));
  }
}

void quantize_row_q5_1(const float* src, BlockQ5_1* dst, int64_t n) {
  const int64_t nb = n / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    float min, max;
    min_max(x, kQK, &min, &max);
    const float d = (max - min) / 31.0f;
    const float id = inverse_or_zero(d);
    dst[i].d = fp32_to_fp16(d);
    dst[i].m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = (x[j] - min) * id;
      const float x1 = (x[kQK / 2 + j] - min) * id;
      const uint32_t q0 = static_cast<uint8_t>(truncate_to_int(x0 + 0.5f));
      const uint32_t q1 = static_cast<uint8_t>(truncate_to_int(x1 + 0.5f));
      dst[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= ((q0 & 0x10u) >> 4) << j;
      qh |= ((q1 & 0x10u) >> 4) << (j + kQK / 2);
    }
    for (int b = 0; b < 4; ++b) dst[i].qh[b] = static_cast<uint8_t>(qh >> (8 * b));
  }
}

void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t n) {
  const int64_t nb = n / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = inverse_or_zero(d);
    dst[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) dst[i].qs[j] = round_to_int8(x[j] * id);
  }
}

void quantize_row_q8_1(const float* src, BlockQ8_1* dst, int64_t n) {
  const int64_t nb = n / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = inverse_or_zero(d);
    dst[i].d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      dst[i].qs[j] = round_to_int8(x[j] * id);
      sum += dst[i].qs[j];
    }
    dst[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

}  // namespace hearth
