// Row versions of the half-precision conversions in fp16.h (kept out of line so callers that
// convert whole tensors share one copy). fp16 -> fp32 rows read a 65536-entry table built
// once from the scalar conversion, which avoids its branches on subnormals.
#include "tensor/fp16.h"

#include <vector>

namespace hearth {
namespace {

const float* fp16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = fp16_to_fp32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

}  // namespace

void fp16_to_fp32_row(const uint16_t* src, float* dst, int64_t n) {
  const float* table = fp16_table();
  for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
}

void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

void bf16_to_fp32_row(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
}

void fp32_to_bf16_row(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_bf16(src[i]);
}

}  // namespace hearth
