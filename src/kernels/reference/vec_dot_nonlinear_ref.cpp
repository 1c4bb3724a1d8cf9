// Scalar reference dot products of the non-linear 4-bit types with their activations: IQ4_NL
// and MXFP4 blocks of 32 with Q8_0 (one float product per block, as for Q4_0), IQ4_XS
// super-blocks with Q8_K (each sub-block's integer dot times its integer scale, summed in 32
// bits, then one float multiply per super-block, as for the K-quants). The levels are looked up
// as integers, so every integer sum is exact.
#include "kernels/reference/reference_kernels.h"
#include "tensor/fp16.h"
#include "tensor/quant_blocks.h"

namespace hearth::kernels::reference {
namespace {

// Sum over the 32 elements of a block of levels[code] * activation.
inline int dot_levels_32(const uint8_t* qs, const int8_t* levels, const int8_t* y) {
  int sum = 0;
  for (int j = 0; j < kQK / 2; ++j) sum += levels[qs[j] & 0xF] * y[j] + levels[qs[j] >> 4] * y[j + kQK / 2];
  return sum;
}

}  // namespace

float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) {
  const BlockIQ4_NL* x = static_cast<const BlockIQ4_NL*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    const int sumi = dot_levels_32(x[i].qs, kIQ4NLValues, y[i].qs);
    sum += static_cast<float>(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
  }
  return sum;
}

float vec_dot_mxfp4(int64_t n, const void* w, const void* a) {
  const BlockMXFP4* x = static_cast<const BlockMXFP4*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    const int sumi = dot_levels_32(x[i].qs, kMXFP4Values, y[i].qs);
    sum += static_cast<float>(sumi) * (mxfp4_half_scale(x[i].e) * fp16_to_fp32(y[i].d));
  }
  return sum;
}

float vec_dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const BlockIQ4_XS* x = static_cast<const BlockIQ4_XS*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK_K / kQK; ++j) {
      isum += (iq4xs_scale(j, x[i]) - 32) * dot_levels_32(x[i].qs + 16 * j, kIQ4NLValues, y[i].qs + kQK * j);
    }
    sum += fp16_to_fp32(x[i].d) * y[i].d * static_cast<float>(isum);
  }
  return sum;
}

}  // namespace hearth::kernels::reference
