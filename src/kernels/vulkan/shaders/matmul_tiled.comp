#version 450
// y[t][r] = sum_c W[r][c] * x[t][c] for a batch of tokens (prompt processing), one weight type
// per compile (TYPE_*). matmul.comp decodes a weight unit for 4 tokens; a prompt of 512
// tokens would decode every weight 128 times. Here a workgroup of 128 invocations owns a tile
// of BM = 128 rows x BN = 32 tokens and walks the row length one 32-weight unit at a time:
// each invocation decodes one row's unit into shared memory, the tile's tokens' 32 inputs go
// beside it, then every invocation multiplies its 8 rows x 4 tokens from shared memory. So a
// weight is decoded once per 32 tokens. An invocation's rows are two runs of 4 (tr * 4 and
// 64 + tr * 4) and its tokens one run (tt * 4), so each step reads them as three vec4 loads
// for 32 multiply-adds: with 8 + 4 scalar reads (rows 16 apart) shared memory bound the kernel
// (a prompt's gate matrix ran at ~18 TFLOP/s on an H200).
// Dispatch: x = row tiles, y = token tiles. Rows, tokens and row lengths need not be
// multiples of the tile (the tails read zeros and store nothing).
#extension GL_GOOGLE_include_directive : enable
layout(local_size_x = 128) in;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint cols, rows, n_tokens, row_bytes;
  uint x_off, x_stride, y_off, y_stride;
  uint rows_per_group;  // BM (matmul.comp's layout; unused here)
  uint w_off;            // byte offset of row 0 in the weights (a matrix stored beside others)
  uint split1, split2;   // matvec.comp: rows from split1 go to y1, from split2 to y2
} pc;

#include "weight_unit.glsl"

#define BM 128  // rows per tile: one per invocation when decoding
#define BN 32   // tokens per tile
#define TM 8    // rows per invocation when multiplying: tr * 4 + 0..3, 64 + tr * 4 + 0..3
#define TN 4    // tokens per invocation: tt * 4 + 0..3

shared vec4 sw[32 * BM / 4];  // [k][row], four rows a vector
shared vec4 sx[32 * BN / 4];  // [k][token], four tokens a vector

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint r0 = gl_WorkGroupID.x * BM;
  const uint t0 = gl_WorkGroupID.y * BN;
  const uint tr = tid % 16u;
  const uint tt = tid / 16u;
  const uint units = (pc.cols + 31u) / 32u;
  const uint my_row = r0 + tid;
  const uint base = pc.w_off + my_row * pc.row_bytes;
  // The token and the 8 inputs this invocation loads each step: token tid / 4, inputs 8 (tid % 4).
  const uint lt = tid / 4u;
  const uint lk = (tid % 4u) * 8u;
  const bool token_ok = t0 + lt < pc.n_tokens;
  const uint x_row = pc.x_off + (t0 + lt) * pc.x_stride;

  float acc[TM][TN];
  for (uint i = 0; i < TM; ++i) {
    for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;
  }
  float v[32];
  for (uint u = 0; u < units; ++u) {
    if (my_row < pc.rows) {
      unit(base, u, v);
    } else {
      for (uint k = 0; k < 32u; ++k) v[k] = 0.0;
    }
    for (uint k = 0; k < 32u; ++k) sw[(k * BM + tid) >> 2][tid & 3u] = v[k];
    for (uint k = 0; k < 8u; ++k) {
      const uint c = u * 32u + lk + k;
      sx[((lk + k) * BN + lt) >> 2][lt & 3u] = token_ok && c < pc.cols ? x[x_row + c] : 0.0;
    }
    barrier();
    for (uint k = 0; k < 32u; ++k) {
      const vec4 a0 = sw[(k * BM) / 4u + tr];
      const vec4 a1 = sw[(k * BM + 64u) / 4u + tr];
      const vec4 b = sx[(k * BN) / 4u + tt];
      const float a[TM] = float[TM](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    barrier();
  }
  for (uint j = 0; j < TN; ++j) {
    const uint t = t0 + tt * 4u + j;
    if (t >= pc.n_tokens) continue;
    for (uint i = 0; i < TM; ++i) {
      const uint r = r0 + (i < 4u ? tr * 4u + i : 64u + tr * 4u + (i - 4u));
      if (r < pc.rows) y[pc.y_off + t * pc.y_stride + r] = acc[i][j];
    }
  }
}
