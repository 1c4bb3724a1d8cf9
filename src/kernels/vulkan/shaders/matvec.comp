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
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };  // the same inputs, 4 at a time
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, binding = 3) writeonly buffer Y1 { float y1[]; };
layout(std430, binding = 4) writeonly buffer Y2 { float y2[]; };
layout(push_constant) uniform Push {
  uint cols, rows, n_tokens, row_bytes;
  uint x_off, x_stride, y_off, y_stride;
  uint rows_per_group;  // ROWS x the teams of a workgroup
  uint w_off;            // byte offset of row 0 in the weights (a matrix stored beside others)
  uint split1, split2;   // rows from split1 go to y1, from split2 to y2
  uint team;             // subgroups that share a row group (a power of two)
} pc;

#include "weight_unit.glsl"

#define ROWS 4
#define MAX_SUBGROUPS 64  // 256 invocations in subgroups of 4 or more
shared float team_part[MAX_SUBGROUPS * ROWS];  // [subgroup][row]: each subgroup's row sums

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
  for (uint pass = 0; pass < passes; ++pass) {
    const uint r0 = first + (pass * teams + team) * ROWS;
    float acc[ROWS];
    for (uint k = 0; k < ROWS; ++k) acc[k] = 0.0;
    // Uniform in each subgroup (team and r0 are), so every lane reaches subgroupAdd.
    if (team < teams && r0 < end) {
      for (uint u = team_lane; u < units; u += team_lanes) {
        const uint c0 = u * 32u;
        float xv[32];
        if (vec_x && c0 + 32u <= pc.cols) {
          const uint q0 = (pc.x_off + c0) >> 2;
          for (uint k = 0; k < 8u; ++k) {
            const vec4 a = x4[q0 + k];
            xv[4u * k] = a.x;
            xv[4u * k + 1u] = a.y;
            xv[4u * k + 2u] = a.z;
            xv[4u * k + 3u] = a.w;
          }
        } else {
          for (uint i = 0; i < 32u; ++i) xv[i] = c0 + i < pc.cols ? x[pc.x_off + c0 + i] : 0.0;
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
      if (subgroupElect()) team_part[gl_SubgroupID * ROWS + k] = total;
    }
    barrier();
    const uint i = gl_LocalInvocationIndex;
    if (i < teams * ROWS) {
      const uint t = i / ROWS;
      const uint k = i % ROWS;
      const uint r = first + (pass * teams + t) * ROWS + k;
      if (r < end) {
        float total = 0.0;
        for (uint j = 0; j < team_size; ++j) total += team_part[(t * team_size + j) * ROWS + k];
        if (r < pc.split1) {
          y[pc.y_off + r] = total;
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
