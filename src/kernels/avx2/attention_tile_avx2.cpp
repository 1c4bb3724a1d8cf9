// The AVX2 flash-style attention tile: flash_tile_simd.h over the AVX2 traits (8 query rows per
// register, masks as all-ones lanes).
#include "kernels/avx2/simd_traits_avx2.h"
#include "kernels/flash_tile_simd.h"

namespace hearth::kernels {

void fill_avx2_attention_tile_kernels(KernelTable& t) { t.attention_tile = flash_tile<Avx2Traits>; }

}  // namespace hearth::kernels
