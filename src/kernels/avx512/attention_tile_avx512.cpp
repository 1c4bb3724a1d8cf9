// The AVX-512 flash-style attention tile: flash_tile_simd.h over the AVX-512 traits (16 query
// rows per register, masks in mask registers).
#include "kernels/avx512/simd_traits_avx512.h"
#include "kernels/flash_tile_simd.h"

namespace hearth::kernels {

void fill_avx512_attention_tile_kernels(KernelTable& t) { t.attention_tile = flash_tile<Avx512Traits>; }

}  // namespace hearth::kernels
