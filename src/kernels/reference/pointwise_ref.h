// The scalar reference versions of the pointwise ops (norms, softmax, activations, element-wise
// arithmetic, rope) behind the dispatch table's scalar variant, and the pieces the SIMD
// variants share with them so that they compute the same numbers: the GELU table and the
// per-pair rope cos/sin.
#pragma once

#include <cstdint>

#include "kernels/ops.h"

namespace hearth::kernels::reference {

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);
void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t n, float eps);
void softmax(float* x, int64_t n);
void silu(float* x, int64_t n);
void gelu(float* x, int64_t n);
void add(float* y, const float* x, int64_t n);
void mul(float* y, const float* x, int64_t n);
void scale(float* y, float s, int64_t n);
void rope(float* x, int32_t n_heads, int32_t head_dim, int32_t pos, const RopeParams& p);

// GELU (tanh approximation) of every F16 value, as F16 bits, indexed by the F16 bits of the
// input; 65536 entries plus one zero entry of padding, so a SIMD gather that reads 32 bits at
// index 65535 stays inside the table. Built on first use (thread-safe).
const uint16_t* gelu_f16_table();
// Inputs at or below this give 0 and at or above kGeluPassThrough give the input itself.
inline constexpr float kGeluZeroBelow = -10.0f;
inline constexpr float kGeluPassThrough = 10.0f;

// The number of leading dimensions of each head that rope rotates (rope_dims, or head_dim when
// rope_dims is 0 or larger than head_dim).
int32_t rope_rotated_dims(int32_t head_dim, const RopeParams& p);
// cos_sin[2k], cos_sin[2k+1] = cos and sin of pair k's angle at position pos, each multiplied by
// the attention factor (and YaRN's magnitude correction), for k < n_dims / 2.
void rope_cos_sin(int32_t pos, int32_t n_dims, const RopeParams& p, float* cos_sin);

}  // namespace hearth::kernels::reference
