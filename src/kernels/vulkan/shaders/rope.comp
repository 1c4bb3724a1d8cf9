#version 450
// Rotary position embedding in place: x holds n_tokens rows of n_heads * head_dim floats;
// token t is at positions[t]. style 0 rotates pairs (2i, 2i+1), style 1 (NeoX) (i, i + d/2);
// only the first rope_dims dimensions of each head turn. One invocation per pair.
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer P { int positions[]; };
layout(push_constant) uniform Push {
  uint n_heads, head_dim, rope_dims, style;
  float freq_base, freq_scale;
  uint pad0, pad1;
} pc;

void main() {
  const uint pair = gl_GlobalInvocationID.x;  // 0 .. rope_dims/2 - 1
  const uint head = gl_WorkGroupID.y;
  const uint tok = gl_WorkGroupID.z;
  if (pair >= pc.rope_dims / 2u) return;
  const float theta = float(positions[tok]) * pc.freq_scale *
                      pow(pc.freq_base, -2.0 * float(pair) / float(pc.rope_dims));
  const float c = cos(theta);
  const float s = sin(theta);
  const uint base = (tok * pc.n_heads + head) * pc.head_dim;
  uint a, b;
  if (pc.style == 0u) {
    a = base + 2u * pair;
    b = a + 1u;
  } else {
    a = base + pair;
    b = a + pc.rope_dims / 2u;
  }
  const float x0 = x[a];
  const float x1 = x[b];
  x[a] = x0 * c - x1 * s;
  x[b] = x0 * s + x1 * c;
}
