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
  // Word i = (lo[i], hi[i]) rounded to BF16 by vcvtne2ps2bf16 (to nearest even, as fp32_to_bf16,
  // but denormal inputs read as zero, as vdpbf16ps reads them anyway), then interleaved.
  static VI bf16_pair_words(V lo, V hi) {
    const __m512i halves = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));  // lo's 16 values, then hi's
    const __m512i interleave = _mm512_setr_epi32(0x00100000, 0x00110001, 0x00120002, 0x00130003, 0x00140004, 0x00150005,
                                                 0x00160006, 0x00170007, 0x00180008, 0x00190009, 0x001A000A, 0x001B000B,
                                                 0x001C000C, 0x001D000D, 0x001E000E, 0x001F000F);
    return _mm512_permutexvar_epi16(interleave, halves);
  }
};

}  // namespace
}  // namespace hearth::kernels
