#version 450
// Element-wise ops over n floats: y = op(y, x) for add (0) and mul (1); y = op(y) for
// scale (2, by s), silu (3), gelu (4, tanh approximation); y[i] += x[i % width] for add_rows
// (5: a bias row of width floats added to every row of y); y = silu(y) * x (6) and
// gelu(y) * x (7), the gated feed-forward's activation and product in one pass.
layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(push_constant) uniform Push { uint n, op; float s; uint width; } pc;

float silu(float v) { return v / (1.0 + exp(-v)); }

float gelu(float v) {
  const float k = 0.7978845608028654;  // sqrt(2/pi)
  const float t = k * v * (1.0 + 0.044715 * v * v);
  // tanh through exp, stable for large |t|.
  const float e = exp(-2.0 * abs(t));
  const float th = sign(t) * (1.0 - e) / (1.0 + e);
  return 0.5 * v * (1.0 + th);
}

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i >= pc.n) return;
  float v = y[i];
  if (pc.op >= 6u) {
    y[i] = (pc.op == 6u ? silu(v) : gelu(v)) * x[i];
    return;
  }
  float r;
  if (pc.op == 0u) {
    r = v + x[i];
  } else if (pc.op == 1u) {
    r = v * x[i];
  } else if (pc.op == 2u) {
    r = v * pc.s;
  } else if (pc.op == 5u) {
    r = v + x[i % pc.width];
  } else if (pc.op == 3u) {
    r = silu(v);
  } else {
    r = gelu(v);
  }
  y[i] = r;
}
