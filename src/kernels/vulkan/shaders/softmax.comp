#version 450
// In-place softmax of each row of n floats, one workgroup per row.
#extension GL_GOOGLE_include_directive : enable
layout(local_size_x = 64) in;
#include "reduce.glsl"

layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
  const uint base = gl_WorkGroupID.x * pc.n;
  const uint tid = gl_LocalInvocationID.x;
  float m = -3.402823e38;
  for (uint i = tid; i < pc.n; i += WG) m = max(m, x[base + i]);
  m = wg_max(m);
  float s = 0.0;
  for (uint i = tid; i < pc.n; i += WG) {
    const float e = exp(x[base + i] - m);
    x[base + i] = e;
    s += e;
  }
  s = wg_sum(s);
  const float inv = 1.0 / s;
  for (uint i = tid; i < pc.n; i += WG) x[base + i] *= inv;
}
