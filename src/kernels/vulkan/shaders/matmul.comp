#version 450
// y[t][r] = sum_c W[r][c] * x[t][c] for one weight type (compiled once per TYPE_*), over
// tiles of TILE tokens, so a weight block is decoded once for the whole tile (matrix x vector
// is the one-token case). Weights are the GGUF bytes as they are in the file; activations
// stay F32. Two ways to share a row's work (compiled with and without USE_SUBGROUP):
// - USE_SUBGROUP (devices with subgroup arithmetic): pc.rows_per_group rows per workgroup,
//   one subgroup per row; its lanes walk the row's blocks and subgroupAdd sums them, with no
//   shared memory and no barrier. The host sets rows_per_group to the number of subgroups a
//   workgroup has (64 / subgroup size); where the driver makes other subgroups, each subgroup
//   takes the rows gl_SubgroupID, + gl_NumSubgroups, ..., so every row is still done once.
// - else: one workgroup per row, summed by a shared-memory tree.
#extension GL_GOOGLE_include_directive : enable
layout(local_size_x = 64) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint cols, rows, n_tokens, row_bytes;
  uint x_off, x_stride, y_off, y_stride;
  uint rows_per_group;  // USE_SUBGROUP only
  uint w_off;            // byte offset of row 0 in the weights (a matrix stored beside others)
  uint split1, split2;   // matvec.comp: rows from split1 go to y1, from split2 to y2
} pc;

#define TILE 4

#include "weight_unit.glsl"

// Adds row `row`'s products with the tile's tokens [t0, t0 + TILE) to acc, over the units
// first, first + step, ... (the caller's share of the row).
void row_products(uint row, uint t0, uint first, uint step, inout float acc[TILE]) {
  const uint units = (pc.cols + 31u) / 32u;
  const uint base = pc.w_off + row * pc.row_bytes;
  float v[32];
  for (uint u = first; u < units; u += step) {
    unit(base, u, v);
    const uint c0 = u * 32u;
    // Loops of constant length over v (a row's last unit masks its tail), so v stays in
    // registers: a loop bound that varies makes the compiler keep v in local memory.
    const bool whole = c0 + 32u <= pc.cols;
    for (uint t = 0; t < TILE; ++t) {
      if (t0 + t < pc.n_tokens) {
        const uint xo = pc.x_off + (t0 + t) * pc.x_stride + c0;
        float s = 0.0;
        if (whole) {
          for (uint i = 0; i < 32u; ++i) s += v[i] * x[xo + i];
        } else {
          for (uint i = 0; i < 32u; ++i) s += c0 + i < pc.cols ? v[i] * x[xo + i] : 0.0;
        }
        acc[t] += s;
      }
    }
  }
}

#ifdef USE_SUBGROUP
void main() {
  // Row groups beyond the 65535 workgroups one dimension allows continue in z.
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
  const uint t0 = gl_WorkGroupID.y * TILE;
  const uint tile_tokens = min(TILE, pc.n_tokens - t0);
  // The loop bounds are the same for a whole subgroup, so every lane reaches subgroupAdd. Lanes
  // are counted rather than taken from gl_SubgroupSize, so a subgroup the driver left partly
  // empty still covers the whole row.
  const uint lanes = subgroupAdd(1u);
  const uint lane = subgroupExclusiveAdd(1u);
  for (uint r = gl_SubgroupID; r < pc.rows_per_group; r += gl_NumSubgroups) {
    const uint row = group * pc.rows_per_group + r;
    if (row >= pc.rows) break;
    float acc[TILE];
    for (uint t = 0; t < TILE; ++t) acc[t] = 0.0;
    row_products(row, t0, lane, lanes, acc);
    for (uint t = 0; t < tile_tokens; ++t) {
      const float total = subgroupAdd(acc[t]);
      if (subgroupElect()) y[pc.y_off + (t0 + t) * pc.y_stride + row] = total;
    }
  }
}
#else
void main() {
  // Rows beyond the 65535 workgroups one dimension allows continue in z (an output matrix of a
  // 150k-token vocabulary); the whole workgroup shares the row, so leaving early is uniform.
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
  if (row >= pc.rows) return;
  const uint t0 = gl_WorkGroupID.y * TILE;
  const uint tid = gl_LocalInvocationID.x;
  float acc[TILE];
  for (uint t = 0; t < TILE; ++t) acc[t] = 0.0;
  row_products(row, t0, tid, WG, acc);
  // Only the tile's real tokens are reduced (t0 and n_tokens are the same for the whole
  // workgroup, so the barriers inside wg_sum stay uniform): a decode step's one token costs
  // one reduction, not TILE.
  const uint tile_tokens = min(TILE, pc.n_tokens - t0);
  for (uint t = 0; t < tile_tokens; ++t) {
    const float total = wg_sum(acc[t]);
    if (tid == 0u) y[pc.y_off + (t0 + t) * pc.y_stride + row] = total;
  }
}
#endif
