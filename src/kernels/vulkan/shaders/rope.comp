#version 450
// Rotary position embedding in place: x holds n_tokens rows of n_heads * head_dim floats;
// token t is at positions[t]. style 0 rotates pairs (2i, 2i+1), style 1 (NeoX) (i, i + d/2);
// only the first rope_dims dimensions of each head turn. One invocation per pair. As the CPU
// path (kernels/rope.cpp): per-pair frequency factors divide the angle (Llama 3's rope_freqs,
// phi3's long/short factors), YaRN blends the interpolated and extrapolated angles over the
// correction dimensions [corr_low, corr_high] (computed by the host), and cos/sin are scaled
// by mscale (attn_factor, times YaRN's magnitude correction). Workgroups of heads n_heads and up
// turn the rows of x2 (n_heads2 heads per token, the same positions): queries and keys in one
// dispatch.
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer P { int positions[]; };
layout(std430, binding = 2) readonly buffer F { float factors[]; };
layout(std430, binding = 3) buffer X2 { float x2[]; };
layout(push_constant) uniform Push {
  uint n_heads, head_dim, rope_dims, style;
  float freq_base, freq_scale, ext_factor, mscale;
  float corr_low, corr_high;
  uint has_factors, n_heads2;
} pc;

void main() {
  const uint pair = gl_GlobalInvocationID.x;  // 0 .. rope_dims/2 - 1
  const uint head = gl_WorkGroupID.y;
  const uint tok = gl_WorkGroupID.z;
  if (pair >= pc.rope_dims / 2u) return;
  const float theta = float(positions[tok]) * pow(pc.freq_base, -2.0 * float(pair) / float(pc.rope_dims));
  const float extrap = pc.has_factors != 0u ? theta / factors[pair] : theta;
  const float interp = pc.freq_scale * extrap;
  float angle = interp;
  if (pc.ext_factor != 0.0) {
    const float y = (float(pair) - pc.corr_low) / max(0.001, pc.corr_high - pc.corr_low);
    const float mix_ext = (1.0 - clamp(y, 0.0, 1.0)) * pc.ext_factor;
    angle = interp * (1.0 - mix_ext) + extrap * mix_ext;
  }
  const float c = cos(angle) * pc.mscale;
  const float s = sin(angle) * pc.mscale;
  const bool second = head >= pc.n_heads;
  const uint base = second ? (tok * pc.n_heads2 + head - pc.n_heads) * pc.head_dim : (tok * pc.n_heads + head) * pc.head_dim;
  uint a, b;
  if (pc.style == 0u) {
    a = base + 2u * pair;
    b = a + 1u;
  } else {
    a = base + pair;
    b = a + pc.rope_dims / 2u;
  }
  if (second) {
    const float x0 = x2[a];
    const float x1 = x2[b];
    x2[a] = x0 * c - x1 * s;
    x2[b] = x0 * s + x1 * c;
  } else {
    const float x0 = x[a];
    const float x1 = x[b];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
  }
}
