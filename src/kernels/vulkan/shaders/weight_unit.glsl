// Decoding one 32-weight unit of a weight row as it lies on the device, for the matmul
// shaders (compiled once per TYPE_*). The including shader declares the weights as
// `uint w[]` (binding 0) and a push-constant block `pc` with `cols` (the row length) before
// including. Rows are the GGUF file's bytes, except Q4_0 and Q8_0 rows, which the upload
// splits (VulkanOps::write_rows): every block's quants first, then every block's F16 scale,
// so that a unit's quants are one aligned 16- or 32-byte run and a subgroup's lanes read one
// contiguous range (the file's 18- and 34-byte blocks cost each lane six or ten unaligned
// word loads and split the subgroup's reads across many cache lines). Q4_K and Q6_K rows are
// regrouped by unit the same way (unit() and unit_scaled() say how).
layout(std430, binding = 0) readonly buffer Weights4 { uvec4 w4[]; };  // the same weights

uint byte_at(uint off) { return (w[off >> 2] >> ((off & 3u) * 8u)) & 0xFFu; }

// The N bytes at byte offset `off` (any alignment; blocks of 18, 34 and 210 bytes leave rows
// 2-byte aligned) as N / 4 little-endian words: N / 4 + 1 word loads, not one per byte, and
// every later byte index a constant once the callers' loops unroll, so the words stay in
// registers. The extra word is read only when `off` is unaligned: it then holds the last
// bytes, so nothing past them is read.
#define HEARTH_LOAD_WORDS(NAME, N)                                                   \
  void NAME(uint off, out uint q[N / 4]) {                                           \
    const uint i = off >> 2;                                                         \
    const uint sh = (off & 3u) * 8u;                                                 \
    uint r[N / 4 + 1];                                                               \
    for (uint k = 0; k < N / 4; ++k) r[k] = w[i + k];                                \
    r[N / 4] = sh != 0u ? w[i + N / 4] : 0u;                                         \
    for (uint k = 0; k < N / 4; ++k) q[k] = sh == 0u ? r[k] : (r[k] >> sh) | (r[k + 1u] << (32u - sh)); \
  }
HEARTH_LOAD_WORDS(load8, 8)
HEARTH_LOAD_WORDS(load16, 16)
uint byte_of(uint q, uint k) { return (q >> ((k & 3u) * 8u)) & 0xFFu; }
// float(q) - offset for 0 <= q < 2^23, exactly, without an integer-to-float conversion: q's
// bits as the mantissa of 2^23, then one subtraction. The conversion runs at a quarter of the
// arithmetic rate on NVIDIA GPUs, and a decode step's matrix x vector converted every weight:
// it bound the Q4_0 kernel on an H200 (splitting the rows for fewer loads changed nothing).
float minus(uint q, float offset) { return uintBitsToFloat(0x4B000000u | q) - (8388608.0 + offset); }
// The F16 at an even byte offset: one word load.
float f16_even_at(uint off) { return unpackHalf2x16(w[off >> 2] >> ((off & 2u) * 8u)).x; }
// The 16 bytes at `off` as 4 words: one 16-byte load where `off` is 16-byte aligned.
void load16_run(uint off, out uint q[4]) {
  if ((off & 15u) == 0u) {
    const uvec4 t = w4[off >> 4];
    q[0] = t.x;
    q[1] = t.y;
    q[2] = t.z;
    q[3] = t.w;
  } else {
    load16(off, q);
  }
}

// Unit u's 32 weights before their block's one scale, and the scale (Q4_0, Q8_0; Q6_K with
// its per-16 int8 scales already applied, d being the block's): the matrix x vector kernel
// multiplies a unit's dot product by it once instead of every weight. Other types: unit()'s
// weights and 1.
void unit(uint base, uint u, out float v[32]);
void unit_scaled(uint base, uint u, out float v[32], out float d) {
#if defined(TYPE_Q8_0)
  // Split rows (above): 32 quant bytes per unit, then the scales.
  d = f16_even_at(base + 32u * (pc.cols / 32u) + 2u * u);
  uint q[8], q1[4];
  load16_run(base + 32u * u, q1);
  for (uint k = 0; k < 4u; ++k) q[k] = q1[k];
  load16_run(base + 32u * u + 16u, q1);
  for (uint k = 0; k < 4u; ++k) q[k + 4u] = q1[k];
  for (uint i = 0; i < 32u; ++i) v[i] = minus(byte_of(q[i >> 2], i) ^ 0x80u, 128.0);  // int8 + 128, less 128
#elif defined(TYPE_Q4_0)
  // Split rows (above): 16 quant bytes per unit, then the scales.
  d = f16_even_at(base + 16u * (pc.cols / 32u) + 2u * u);
  uint qw[4];
  load16_run(base + 16u * u, qw);
  for (uint j = 0; j < 16u; ++j) {
    const uint q = byte_of(qw[j >> 2], j);
    v[j] = minus(q & 15u, 8.0);
    v[j + 16u] = minus(q >> 4, 8.0);
  }
#elif defined(TYPE_Q6_K)
  // Rows regrouped by unit (VulkanOps::write_rows): 16 bytes of low nibbles per unit, then 8
  // of high bits per unit, then 2 int8 scales per unit, then an F16 d per 256-weight block.
  // The file's blocks interleave a unit's bits over 64 bytes in two runs (9 + 9 unaligned
  // word loads a unit); an H200 read the 1B model's Q6_K output matrix at ~0.8 TB/s.
  const uint units = pc.cols / 32u;
  d = f16_even_at(base + 26u * units + 2u * (u >> 3));
  uint lo[4], hi[2];
  load16_run(base + 16u * u, lo);
  load8(base + 16u * units + 8u * u, hi);
  const uint so = base + 24u * units + 2u * u;
  const uint sw = w[so >> 2] >> ((so & 2u) * 8u);
  const float s0 = float(int(sw << 24) >> 24);
  const float s1 = float(int(sw << 16) >> 24);
  for (uint i = 0; i < 32u; ++i) {
    const uint low = (byte_of(lo[(i & 15u) >> 2], i & 15u) >> (4u * (i >> 4))) & 15u;
    const uint high = (byte_of(hi[(i & 7u) >> 2], i & 7u) >> (2u * (i >> 3))) & 3u;
    v[i] = (i < 16u ? s0 : s1) * minus(low | (high << 4), 32.0);
  }
#else
  unit(base, u, v);
  d = 1.0;
#endif
}

// The 32 weights of unit u (elements 32u .. 32u+31) of the row starting at byte `base`.
void unit(uint base, uint u, out float v[32]) {
#if defined(TYPE_F32)
  // F32 and F16 rows may end inside a unit (cols not a multiple of 32): the tail reads 0.
  const uint i0 = (base >> 2) + u * 32u;
  for (uint i = 0; i < 32u; ++i) v[i] = u * 32u + i < pc.cols ? uintBitsToFloat(w[i0 + i]) : 0.0;
#elif defined(TYPE_F16)
  const uint i0 = (base >> 2) + u * 16u;
  for (uint i = 0; i < 16u; ++i) {
    const vec2 h = u * 32u + 2u * i < pc.cols ? unpackHalf2x16(w[i0 + i]) : vec2(0.0);
    v[2u * i] = h.x;
    v[2u * i + 1u] = h.y;
  }
#elif defined(TYPE_Q8_0) || defined(TYPE_Q4_0) || defined(TYPE_Q6_K)
  float d;
  unit_scaled(base, u, v, d);
  for (uint i = 0; i < 32u; ++i) v[i] *= d;
#elif defined(TYPE_Q4_K)
  // Rows regrouped by unit (VulkanOps::write_rows): 16 bytes of nibbles per unit (byte i
  // holding weights i and i + 16), then each block's 12 scale bytes as in the file, then each
  // block's F16 d and dmin. In the file a unit is the low or high nibbles of 32 bytes.
  const uint units = pc.cols / 32u;
  const uint j = u & 7u;
  const uint s = base + 16u * units + 12u * (u >> 3);
  const uint db = base + 16u * units + 12u * (units >> 3) + 4u * (u >> 3);  // past nibbles and scales
  const float d = f16_even_at(db);
  const float dmin = f16_even_at(db + 2u);
  uint sc, m;
  if (j < 4u) {
    sc = byte_at(s + j) & 63u;
    m = byte_at(s + j + 4u) & 63u;
  } else {
    sc = (byte_at(s + j + 4u) & 15u) | ((byte_at(s + j - 4u) >> 6) << 4);
    m = (byte_at(s + j + 4u) >> 4) | ((byte_at(s + j) >> 6) << 4);
  }
  const float ds = d * float(sc);
  const float dm = dmin * float(m);
  uint q[4];
  load16_run(base + 16u * u, q);
  for (uint i = 0; i < 16u; ++i) {
    const uint b = byte_of(q[i >> 2], i);
    v[i] = ds * minus(b & 15u, 0.0) - dm;
    v[i + 16u] = ds * minus(b >> 4, 0.0) - dm;
  }
#else
#error "matmul.comp: compile with one TYPE_* defined"
#endif
}
