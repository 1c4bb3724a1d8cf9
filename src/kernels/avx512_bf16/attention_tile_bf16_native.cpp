// The flash-style attention tile over a BF16 cache with vdpbf16ps (flash_tile_simd.h over
// Avx512Bf16Traits): built with the AVX-512 and AVX512_BF16 flags, run only where the CPU has
// both (avx512_bf16_in_use()).
#include "kernels/avx512_bf16/attention_bf16_native.h"
#include "kernels/avx512_bf16/simd_traits_avx512_bf16.h"
#include "kernels/flash_tile_simd.h"

namespace hearth::kernels {

bool attention_tile_bf16_native(const AttentionTile& t, const KvSpan& kv, const AttentionParams& p, float* work) {
  return kv.type == DType::kBF16 && flash_tile<Avx512Bf16Traits>(t, kv, p, work);
}

}  // namespace hearth::kernels
