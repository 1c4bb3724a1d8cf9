// The AVX-512 flash-style attention tile: flash_tile_simd.h over the AVX-512 traits (16 query
// rows per register, masks in mask registers); a BF16 cache's tiles go to avx512_bf16/ where the
// CPU has AVX512_BF16.
#include "kernels/avx512/simd_traits_avx512.h"
#include "kernels/avx512_bf16/attention_bf16_native.h"
#include "kernels/cpu_features.h"
#include "kernels/flash_tile_simd.h"

namespace hearth::kernels {
namespace {

bool attention_tile_avx512(const AttentionTile& t, const KvSpan& kv, const AttentionParams& p, float* work) {
  if (kv.type == DType::kBF16 && avx512_bf16_in_use()) return attention_tile_bf16_native(t, kv, p, work);
  return flash_tile<Avx512Traits>(t, kv, p, work);
}

}  // namespace

void fill_avx512_attention_tile_kernels(KernelTable& t) { t.attention_tile = attention_tile_avx512; }

}  // namespace hearth::kernels
