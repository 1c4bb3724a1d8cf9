// The AVX2 decode step over an F16 cache whose K is stored transposed (KvSpan::by_head),
// called by attention_decode_avx2.cpp's attention_decode. Declared for files built with the
// AVX2 flags only.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops.h"

namespace hearth::kernels {

// attention_heads_part's contract (part null: the whole step); false where this path does not
// apply (not F16, blocks not a multiple of 16 tokens, head sizes not a multiple of 8 or over
// 256): the caller falls back to the portable path.
bool attention_decode_kt_avx2(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                              int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                              std::vector<float>& scratch);

// The same over a BF16 cache (pairs, ops.h; decode_bf16_simd.h with vdpbf16ps emulated).
bool attention_decode_bf16_avx2(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                                int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                                std::vector<float>& scratch);

}  // namespace hearth::kernels
