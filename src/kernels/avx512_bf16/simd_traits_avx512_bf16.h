// AVX-512 vector traits with AVX512_BF16: Avx512Traits, whose emulated dot2 gives way to the
// instruction itself (vdpbf16ps: two BF16 products added per F32 lane, the high ones first).
// Include only from files compiled with the AVX-512 and AVX512_BF16 flags (avx512_bf16/);
// internal linkage (see isa_local.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/simd_traits_avx512.h"

namespace hearth::kernels {
namespace {

struct Avx512Bf16Traits : Avx512Traits {
  static V dot2(V acc, VI x, uint32_t b) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(x), reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(b))));
  }
};

}  // namespace
}  // namespace hearth::kernels
