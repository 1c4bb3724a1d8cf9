// Scalar reference dot products of the K-quant super-blocks (Q2_K..Q6_K) with Q8_K
// activations: each group's integer dot product is multiplied by its integer scale and summed
// in 32 bits; the group minimums use the activation's per-16 sums (bsums); then one float
// multiply per super-block, as the ecosystem's vec_dot functions do.
#include "kernels/reference/reference_kernels.h"
#include "tensor/fp16.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels::reference {

float vec_dot_q2_k(int64_t n, const void* w, const void* a) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int summs = 0;
    for (int g = 0; g < 16; ++g) summs += y[i].bsums[g] * (x[i].scales[g] >> 4);
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * g + l;
        const int q = (x[i].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        dot += q * y[i].qs[e];
      }
      isum += (x[i].scales[g] & 0xF) * dot;
    }
    const float dall = y[i].d * fp16_to_fp32(x[i].d);
    const float dmin = y[i].d * fp16_to_fp32(x[i].dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

float vec_dot_q3_k(int64_t n, const void* w, const void* a) {
  const BlockQ3_K* x = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * g + l;
        const int low = (x[i].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        const int high = (x[i].hmask[e % 32] >> (e / 32)) & 1;
        dot += (low - (high ? 0 : 4)) * y[i].qs[e];
      }
      isum += (q3k_scale(g, x[i].scales) - 32) * dot;
    }
    sum += fp16_to_fp32(x[i].d) * y[i].d * static_cast<float>(isum);
  }
  return sum;
}

namespace {

// Shared by Q4_K and Q5_K: 8 groups of 32 with 6-bit scales and mins. q(e) gives the quant.
template <typename Block, typename QuantFn>
float dot_q45_k(int64_t n, const Block* x, const BlockQ8_K* y, QuantFn quant) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0;
    int msum = 0;
    for (int g = 0; g < 8; ++g) {
      uint8_t sc = 0, m = 0;
      kquant_scale_min(g, x[i].scales, &sc, &m);
      int dot = 0;
      for (int l = 0; l < 32; ++l) dot += quant(x[i], 32 * g + l) * y[i].qs[32 * g + l];
      isum += sc * dot;
      msum += m * (y[i].bsums[2 * g] + y[i].bsums[2 * g + 1]);
    }
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    const float dmin = fp16_to_fp32(x[i].dmin) * y[i].d;
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

}  // namespace

float vec_dot_q4_k(int64_t n, const void* w, const void* a) {
  return dot_q45_k(n, static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(a),
                   [](const BlockQ4_K& b, int e) {
                     const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
                     return (e % 64) >= 32 ? byte >> 4 : byte & 0xF;
                   });
}

float vec_dot_q5_k(int64_t n, const void* w, const void* a) {
  return dot_q45_k(n, static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(a),
                   [](const BlockQ5_K& b, int e) {
                     const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
                     const int high_half = (e % 64) >= 32 ? 1 : 0;
                     const int low = high_half ? byte >> 4 : byte & 0xF;
                     const int hbit = (b.qh[e % 32] >> (2 * (e / 64) + high_half)) & 1;
                     return low | (hbit << 4);
                   });
}

float vec_dot_q6_k(int64_t n, const void* w, const void* a) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * g + l;
        const int h = e / 128;
        const int r = e % 128;
        const uint8_t lb = x[i].ql[64 * h + r % 64];
        const int low = r >= 64 ? lb >> 4 : lb & 0xF;
        const int high = (x[i].qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
        dot += ((low | (high << 4)) - 32) * y[i].qs[e];
      }
      isum += x[i].scales[g] * dot;
    }
    sum += fp16_to_fp32(x[i].d) * y[i].d * static_cast<float>(isum);
  }
  return sum;
}

}  // namespace hearth::kernels::reference
