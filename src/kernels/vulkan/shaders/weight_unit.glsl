// Decoding one 32-weight unit of a weight row as the GGUF file stores it, for the matmul
// shaders (compiled once per TYPE_*). The including shader declares the weights as
// `uint w[]` and a push-constant block `pc` with `cols` (the row length) before including.

uint byte_at(uint off) { return (w[off >> 2] >> ((off & 3u) * 8u)) & 0xFFu; }
uint u16_at(uint off) { return byte_at(off) | (byte_at(off + 1u) << 8); }
float f16_at(uint off) { return unpackHalf2x16(u16_at(off)).x; }
float i8_at(uint off) { return float(int(byte_at(off) << 24) >> 24); }

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
HEARTH_LOAD_WORDS(load16, 16)
HEARTH_LOAD_WORDS(load32, 32)
uint byte_of(uint q, uint k) { return (q >> ((k & 3u) * 8u)) & 0xFFu; }

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
#elif defined(TYPE_Q8_0)
  const uint b = base + u * 34u;
  const float d = f16_at(b);
  uint q[8];
  load32(b + 2u, q);
  for (uint i = 0; i < 32u; ++i) v[i] = d * float(int(byte_of(q[i >> 2], i) << 24) >> 24);
#elif defined(TYPE_Q4_0)
  const uint b = base + u * 18u;
  const float d = f16_at(b);
  uint qw[4];
  load16(b + 2u, qw);
  for (uint j = 0; j < 16u; ++j) {
    const uint q = byte_of(qw[j >> 2], j);
    v[j] = d * (float(q & 15u) - 8.0);
    v[j + 16u] = d * (float(q >> 4) - 8.0);
  }
#elif defined(TYPE_Q4_K)
  const uint b = base + (u >> 3) * 144u;
  const uint j = u & 7u;
  const float d = f16_at(b);
  const float dmin = f16_at(b + 2u);
  const uint s = b + 4u;
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
  const uint shift = (j & 1u) * 4u;
  uint q[8];
  load32(b + 16u + 32u * (j >> 1), q);
  for (uint i = 0; i < 32u; ++i) v[i] = ds * float((byte_of(q[i >> 2], i) >> shift) & 15u) - dm;
#elif defined(TYPE_Q6_K)
  const uint b = base + (u >> 3) * 210u;
  const uint j = u & 7u;
  const uint h = j >> 2;
  const uint jr = j & 3u;  // which 32 of the 128-element half
  const float d = f16_at(b + 208u);
  const uint lshift = (jr >> 1) * 4u;
  const uint hshift = 2u * jr;
  uint ql[8], qh[8];
  load32(b + 64u * h + 32u * (jr & 1u), ql);
  load32(b + 128u + 32u * h, qh);
  const float d0 = d * i8_at(b + 192u + 2u * j);
  const float d1 = d * i8_at(b + 193u + 2u * j);
  for (uint i = 0; i < 32u; ++i) {
    const uint q = ((byte_of(ql[i >> 2], i) >> lshift) & 15u) | (((byte_of(qh[i >> 2], i) >> hshift) & 3u) << 4);
    v[i] = (i < 16u ? d0 : d1) * (float(q) - 32.0);
  }
#else
#error "matmul.comp: compile with one TYPE_* defined"
#endif
}
