// The BF16 cache's decode step (decode_bf16_simd.h) with vdpbf16ps: built with the AVX-512 and
// AVX512_BF16 flags, run only where the CPU has both (avx512_bf16_in_use()).
#include "kernels/avx512_bf16/attention_bf16_native.h"

#include "kernels/avx512_bf16/simd_traits_avx512_bf16.h"
#include "kernels/decode_bf16_simd.h"

namespace hearth::kernels {

bool attention_decode_bf16_native(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv,
                                  const AttentionParams& p, int32_t head_begin, int32_t head_end, const KeyPart* part,
                                  float* out, std::vector<float>& scratch) {
  return attention_decode_bf16<Avx512Bf16Traits>(q, q_pos, n_kv, kv, p, head_begin, head_end, part, out, scratch);
}

}  // namespace hearth::kernels
