// The AVX-512 decode steps over a K stored by element: an F16 cache's transposed K
// (KvSpan::by_head) and a BF16 cache's pairs, called by attention_avx512.cpp's
// attention_decode. Declared for files built with the AVX-512
// flags only.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops.h"

namespace hearth::kernels {

// attention_heads_part's contract (part null: the whole step); false where this path does not
// apply (not F16, blocks not a multiple of 16 tokens, head sizes not a multiple of 16 or over
// 256): the caller falls back to the portable path.
bool attention_decode_kt_avx512(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                                int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                                std::vector<float>& scratch);

// The same over a BF16 cache (pairs, ops.h), vdpbf16ps emulated with FMAs (decode_bf16_simd.h):
// for CPUs without AVX512_BF16, and for tests that compare the two.
bool attention_decode_bf16_avx512(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv,
                                  const AttentionParams& p, int32_t head_begin, int32_t head_end, const KeyPart* part,
                                  float* out, std::vector<float>& scratch);

}  // namespace hearth::kernels
