// The attention kernels over a BF16 cache that use AVX512_BF16 (vdpbf16ps), called by the
// AVX-512 variant where avx512_bf16_in_use(). Declared for every file; call only then.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops.h"

namespace hearth::kernels {

// attention_heads_part's contract for a BF16 cache (decode_bf16_simd.h); false where the path
// does not apply (another cache type, blocks not a multiple of 16 tokens, head sizes not a
// multiple of 16 or over 256): the caller falls back to the portable path.
bool attention_decode_bf16_native(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv,
                                  const AttentionParams& p, int32_t head_begin, int32_t head_end, const KeyPart* part,
                                  float* out, std::vector<float>& scratch);

// ops.h attention_tile for a BF16 cache (flash_tile_simd.h's BF16 path); false for shapes it
// does not handle, which then take the scalar reference.
bool attention_tile_bf16_native(const AttentionTile& t, const KvSpan& kv, const AttentionParams& p, float* work);

}  // namespace hearth::kernels
