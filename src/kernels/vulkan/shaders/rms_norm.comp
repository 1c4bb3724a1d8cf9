#version 450
// y = x / sqrt(mean(x^2) + eps) * weight, one workgroup per row (has_weight 0: no weight).
#extension GL_GOOGLE_include_directive : enable
layout(local_size_x = 64) in;
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float weight[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n, has_weight; float eps; uint pad; } pc;

void main() {
  const uint base = gl_WorkGroupID.x * pc.n;
  const uint tid = gl_LocalInvocationID.x;
  float ss = 0.0;
  for (uint i = tid; i < pc.n; i += WG) ss += x[base + i] * x[base + i];
  const float total = wg_sum(ss);
  const float inv = 1.0 / sqrt(total / float(pc.n) + pc.eps);
  for (uint i = tid; i < pc.n; i += WG) {
    const float v = x[base + i] * inv;
    y[base + i] = pc.has_weight != 0u ? v * weight[i] : v;
  }
}
