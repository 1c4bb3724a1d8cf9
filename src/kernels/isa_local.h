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

}  // namespace hearth::kernels::isa_local
