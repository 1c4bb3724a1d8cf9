// Small helpers for the per-ISA kernel files. Everything here has internal linkage (static),
// so each ISA file gets its own copy compiled with its own flags: an inline function shared
// between files built with different -m flags could otherwise be merged by the linker into
// the AVX-512 copy and run on a CPU without AVX-512.
#pragma once

#include <cstdint>

namespace hearth::kernels::isa_local {

// The 6-bit scale and min of group j (0..7) of a Q4_K/Q5_K block (same packing as
// tensor/quant_blocks.h).
static inline void unpack_q4k_scales(const uint8_t* scales, uint8_t* sc, uint8_t* m) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = scales[j] & 63;
    m[j] = scales[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    m[j] = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// The 8 sub-block scales of an IQ4_XS block with their bias removed (-32..31), as
// tensor/quant_blocks.h iq4xs_scale gives them.
static inline void unpack_iq4xs_scales(const uint8_t* scales_l, uint16_t scales_h, int16_t* out) {
  for (int j = 0; j < 8; ++j) {
    out[j] = static_cast<int16_t>((((scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((scales_h >> (2 * j)) & 3) << 4)) - 32);
  }
}

// 2^(e - 128), the float scale of an MXFP4 block (as tensor/quant_blocks.h mxfp4_half_scale).
static inline float mxfp4_half_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e) - 1u) << 23;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace hearth::kernels::isa_local
