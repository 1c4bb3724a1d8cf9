#version 450
// The second half of a split attention (attention.comp with n_splits > 1): for each (query
// head, token) of the dispatch, the ranges' outputs, each relative to its own max, are
// rescaled to the overall max and divided by the overall sum. part holds, per (token, head,
// range), head_dim_v output floats, the range's max, its sum.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer R { float part[]; };
layout(std430, binding = 1) writeonly buffer O { float o[]; };
layout(push_constant) uniform Push {
  uint n_head, head_dim_v, n_splits, tok_base;
} pc;

void main() {
  const uint head = gl_WorkGroupID.x;
  const uint rel = gl_WorkGroupID.y;
  const uint stride = pc.head_dim_v + 2u;
  const uint base = (rel * pc.n_head + head) * pc.n_splits * stride;
  float mx = -3.402823e38;
  for (uint z = 0u; z < pc.n_splits; ++z) mx = max(mx, part[base + z * stride + pc.head_dim_v]);
  float denom = 0.0;
  for (uint z = 0u; z < pc.n_splits; ++z) {
    denom += part[base + z * stride + pc.head_dim_v + 1u] * exp(part[base + z * stride + pc.head_dim_v] - mx);
  }
  const float inv = denom > 0.0 ? 1.0 / denom : 0.0;
  const uint obase = ((pc.tok_base + rel) * pc.n_head + head) * pc.head_dim_v;
  for (uint d = gl_LocalInvocationID.x; d < pc.head_dim_v; d += 64u) {
    float acc = 0.0;
    for (uint z = 0u; z < pc.n_splits; ++z) {
      acc += part[base + z * stride + d] * exp(part[base + z * stride + pc.head_dim_v] - mx);
    }
    o[obase + d] = acc * inv;
  }
}
