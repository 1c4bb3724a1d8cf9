#version 450
// y = x / sqrt(mean(x^2) + eps) * weight, one workgroup per row (has_weight 0: no weight).
// With has_residual, x += r first and the sum is kept in x: a residual add fused into the
// norm that reads it (one dispatch and one pass over x instead of two).
#extension GL_GOOGLE_include_directive : enable
// A decode step normalises one row with one workgroup, so the row's loads should all be in
// flight at once: 256 invocations hold up to PER elements each in registers (rows up to
// 4,096 wide: every load issued before the reduction, the scaled row written from registers).
// On an H200 the earlier 64-invocation walk (four loads at a time, then a second pass reading
// x again) took 13.7 us for a 2,048-wide row with its residual: 16 memory round trips.
#define WG 256
#define PER 16
layout(local_size_x = WG) in;
#include "reduce.glsl"

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float weight[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer R { float r[]; };
layout(push_constant) uniform Push { uint n, has_weight; float eps; uint has_residual; } pc;

// x[j] of the row, plus the residual (stored back to x) when there is one. Each invocation
// reads back only the elements it wrote, so the wide rows' second pass needs no barrier.
float load_x(uint j) {
  float v = x[j];
  if (pc.has_residual != 0u) {
    v += r[j];
    x[j] = v;
  }
  return v;
}

void main() {
  const uint base = gl_WorkGroupID.x * pc.n;
  const uint tid = gl_LocalInvocationID.x;
  if (pc.n <= WG * PER) {
    float v[PER], g[PER];
    float s = 0.0;
    for (uint k = 0; k < PER; ++k) {
      const uint j = tid + k * WG;
      v[k] = j < pc.n ? load_x(base + j) : 0.0;
      g[k] = j < pc.n && pc.has_weight != 0u ? weight[j] : 1.0;
    }
    for (uint k = 0; k < PER; ++k) s += v[k] * v[k];
    const float inv = 1.0 / sqrt(wg_sum(s) / float(pc.n) + pc.eps);
    for (uint k = 0; k < PER; ++k) {
      const uint j = tid + k * WG;
      if (j < pc.n) y[base + j] = v[k] * inv * g[k];
    }
    return;
  }
  // Wider rows: walked four loads at a time, then read again for the scaled row.
  float s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  uint i = tid;
  for (; i + 3u * WG < pc.n; i += 4u * WG) {
    const float a = load_x(base + i), b = load_x(base + i + WG), c = load_x(base + i + 2u * WG),
                d = load_x(base + i + 3u * WG);
    s0 += a * a;
    s1 += b * b;
    s2 += c * c;
    s3 += d * d;
  }
  for (; i < pc.n; i += WG) {
    const float a = load_x(base + i);
    s0 += a * a;
  }
  const float total = wg_sum((s0 + s1) + (s2 + s3));
  const float inv = 1.0 / sqrt(total / float(pc.n) + pc.eps);
  i = tid;
  for (; i + 3u * WG < pc.n; i += 4u * WG) {
    float v[4], g[4];
    for (uint k = 0; k < 4u; ++k) {
      v[k] = x[base + i + k * WG];
      g[k] = pc.has_weight != 0u ? weight[i + k * WG] : 1.0;
    }
    for (uint k = 0; k < 4u; ++k) y[base + i + k * WG] = v[k] * inv * g[k];
  }
  for (; i < pc.n; i += WG) {
    const float v = x[base + i] * inv;
    y[base + i] = pc.has_weight != 0u ? v * weight[i] : v;
  }
}
