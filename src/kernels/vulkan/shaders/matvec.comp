#version 450
// y[r] = sum_c W[r][c] * x[c] for one token (a decode step), on devices with subgroup
// arithmetic; one weight type per compile (TYPE_*). A workgroup's subgroups form teams of
// pc.team subgroups; a team takes ROWS consecutive rows: its lanes walk the rows' 32-weight
// units, a lane loads a unit's 32 inputs once (eight vec4 loads) for all ROWS rows, whose
// weight loads are independent of each other and so in flight together; subgroupAdd sums each
// subgroup's share and shared memory the team's. The host sizes teams so a lane walks about one
// unit: with one subgroup per 4 rows, as before, an H200 ran the 8,192-wide rows of a 1B
// model's down matrix at ~430 GB/s, its 2,048 rows being only 512 subgroups that each walked 8
// units in turn (the whole device holds 8,000+ subgroups). Matrices stored one after another (a
// layer's Q, K and V; gate and up) run as one: rows from split1 go to y1 and from split2 to y2,
// each from its element 0, so one dispatch fills all three with enough rows to occupy the
// device.
// Two fusions save a decode step's small dispatches (each ~4 us of launch and barrier on an
// H200, and a one-workgroup RMSNorm 9.5). NORM_X: the norm before Q/K/V and before gate/up.
// sum_c W[r][c] x[c] / rms * n[c] is (sum_c W[r][c] x[c] n[c]) / rms, so the inputs are only
// multiplied by the norm's weight as they load, and the row's sum of squares rides along: a
// team's lanes load every input once between them, so their squares summed with the row sums
// give mean(x^2) at no extra latency (reducing x first, in every workgroup, took longer than
// the norm dispatch it replaced). ADD_Y: the sums are added to y instead of stored (the
// attention output and down projections adding into the residual stream; each row is read and
// written by the one invocation that owns it).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };  // the same inputs, 4 at a time
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) writeonly buffer Y1 { float y1[]; };
layout(std430, binding = 4) writeonly buffer Y2 { float y2[]; };
layout(std430, binding = 5) readonly buffer NormWeight4 { vec4 nw4[]; };  // NORM_X: the norm's weight
layout(std430, binding = 5) readonly buffer NormWeight { float nw[]; };
layout(push_constant) uniform Push {
  uint cols, rows, n_tokens, row_bytes;
  uint x_off, x_stride, y_off, y_stride;
  uint rows_per_group;  // ROWS x the teams of a workgroup
  uint w_off;            // byte offset of row 0 in the weights (a matrix stored beside others)
  uint split1, split2;   // rows from split1 go to y1, from split2 to y2
  uint team;             // subgroups that share a row group (a power of two)
  uint flags;            // NORM_X | ADD_Y
  float eps;             // NORM_X: the norm's epsilon
} pc;
#define NORM_X 1u
#define ADD_Y 2u

#include "weight_unit.glsl"

#define ROWS 4
#define MAX_SUBGROUPS 64  // 256 invocations in subgroups of 4 or more
#define SLOTS (ROWS + 1)  // each subgroup's row sums, then (NORM_X) its inputs' sum of squares
shared float team_part[MAX_SUBGROUPS * SLOTS];

void main() {
  // Row groups beyond the 65535 workgroups one dimension allows continue in z.
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
  // Counted rather than taken from gl_SubgroupSize, so a partly empty subgroup still covers
  // every unit (as in matmul.comp).
  const uint lanes = subgroupAdd(1u);
  const uint lane = subgroupExclusiveAdd(1u);
  const uint team_size = clamp(pc.team, 1u, gl_NumSubgroups);
  const uint teams = gl_NumSubgroups / team_size;  // subgroups past teams * team_size idle
  const uint team = gl_SubgroupID / team_size;
  const uint team_lanes = team_size * lanes;
  const uint team_lane = (gl_SubgroupID % team_size) * lanes + lane;
  const uint units = (pc.cols + 31u) / 32u;
  const bool vec_x = ((pc.x_off | pc.cols) & 3u) == 0u;
  const uint first = group * pc.rows_per_group;
  const uint end = min(first + pc.rows_per_group, pc.rows);
  // The same number of passes for every invocation, so all reach both barriers.
  const uint passes = (pc.rows_per_group / ROWS + teams - 1u) / teams;
  const bool norm_x = (pc.flags & NORM_X) != 0u;
  for (uint pass = 0; pass < passes; ++pass) {
    const uint r0 = first + (pass * teams + team) * ROWS;
    float acc[ROWS];
    for (uint k = 0; k < ROWS; ++k) acc[k] = 0.0;
    float sq = 0.0;
    // Uniform in each subgroup (team and r0 are), so every lane reaches subgroupAdd.
    if (team < teams && r0 < end) {
      for (uint u = team_lane; u < units; u += team_lanes) {
        const uint c0 = u * 32u;
        float xv[32];
        if (vec_x && c0 + 32u <= pc.cols) {
          const uint q0 = (pc.x_off + c0) >> 2;
          for (uint k = 0; k < 8u; ++k) {
            vec4 a = x4[q0 + k];
            if (norm_x) {
              sq += dot(a, a);
              a *= nw4[c0 / 4u + k];
            }
            xv[4u * k] = a.x;
            xv[4u * k + 1u] = a.y;
            xv[4u * k + 2u] = a.z;
            xv[4u * k + 3u] = a.w;
          }
        } else {
          for (uint i = 0; i < 32u; ++i) {
            const float a = c0 + i < pc.cols ? x[pc.x_off + c0 + i] : 0.0;
            sq += a * a;
            xv[i] = norm_x && c0 + i < pc.cols ? a * nw[c0 + i] : a;
          }
        }
        for (uint k = 0; k < ROWS; ++k) {
          if (r0 + k < end) {
            float v[32], scale;
            unit_scaled(pc.w_off + (r0 + k) * pc.row_bytes, u, v, scale);
            float s = 0.0;
            for (uint i = 0; i < 32u; ++i) s += v[i] * xv[i];
            acc[k] += scale * s;
          }
        }
      }
    }
    for (uint k = 0; k < ROWS; ++k) {
      const float total = subgroupAdd(acc[k]);
      if (subgroupElect()) team_part[gl_SubgroupID * SLOTS + k] = total;
    }
    if (norm_x) {
      const float total_sq = subgroupAdd(sq);
      if (subgroupElect()) team_part[gl_SubgroupID * SLOTS + ROWS] = total_sq;
    }
    barrier();
    const uint i = gl_LocalInvocationIndex;
    if (i < teams * ROWS) {
      const uint t = i / ROWS;
      const uint k = i % ROWS;
      const uint r = first + (pass * teams + t) * ROWS + k;
      if (r < end) {
        float total = 0.0, total_sq = 0.0;
        for (uint j = 0; j < team_size; ++j) {
          total += team_part[(t * team_size + j) * SLOTS + k];
          if (norm_x) total_sq += team_part[(t * team_size + j) * SLOTS + ROWS];
        }
        if (norm_x) total *= inversesqrt(total_sq / float(pc.cols) + pc.eps);
        if (r < pc.split1) {
          y[pc.y_off + r] = (pc.flags & ADD_Y) != 0u ? y[pc.y_off + r] + total : total;
        } else if (r < pc.split2) {
          y1[r - pc.split1] = total;
        } else {
          y2[r - pc.split2] = total;
        }
      }
    }
    barrier();
  }
}
