// What every attention decode step (the portable path and each SIMD variant) does before it
// reads a key: which heads it covers, their outputs and part statistics reset, and which keys the
// query sees; and where a quantized KV row keeps a block's scale. Kept in one place so the
// variants cannot disagree on a step's bounds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/ops.h"
#include "tensor/dtype.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels {

// Heads [head_begin, head_end) of one step and the keys [lo, hi] it reads.
struct DecodeStepSpan {
  int32_t head_begin = 0, head_end = 0;
  int32_t lo = 0, hi = -1;
  bool has_work() const { return head_end > head_begin && hi >= lo; }
};

// Clamps the heads to [0, n_head), zeroes their outputs (head_dim_v floats each) and, for a part,
// their {max, sum} statistics; then bounds the keys by causality, the sliding window and the
// part's range. No keys when the cache or the model's head counts are empty.
inline DecodeStepSpan begin_decode_step(int32_t q_pos, int32_t n_kv, const AttentionParams& p, int32_t head_begin,
                                        int32_t head_end, const KeyPart* part, float* out) {
  DecodeStepSpan s;
  s.head_begin = std::max(head_begin, 0);
  s.head_end = std::min(head_end, p.n_head);
  if (s.head_end <= s.head_begin) return s;
  const int dv = p.head_dim_v;
  std::fill(out + static_cast<int64_t>(s.head_begin) * dv, out + static_cast<int64_t>(s.head_end) * dv, 0.0f);
  if (part != nullptr && part->stats != nullptr) {
    for (int h = s.head_begin; h < s.head_end; ++h) {
      part->stats[2 * h] = -INFINITY;
      part->stats[2 * h + 1] = 0.0f;
    }
  }
  if (n_kv <= 0 || p.n_head <= 0 || p.n_head_kv <= 0) return s;
  s.hi = p.causal ? std::min(q_pos, n_kv - 1) : n_kv - 1;
  s.lo = p.window > 0 ? std::max(0, q_pos - p.window + 1) : 0;
  if (part != nullptr) {
    s.lo = std::max(s.lo, part->begin);
    s.hi = std::min(s.hi, part->end - 1);
  }
  return s;
}

// The F16 bits of the scale of block b of a Q8_0 or Q4_0 KV head that starts at head (T is
// either; kernels templated on every cache type only call it for those two).
template <DType T>
inline uint16_t kv_block_scale_bits(const uint8_t* head, int b) {
  if constexpr (T == DType::kQ8_0) {
    return reinterpret_cast<const BlockQ8_0*>(head)[b].d;
  } else {
    return reinterpret_cast<const BlockQ4_0*>(head)[b].d;
  }
}

}  // namespace hearth::kernels
