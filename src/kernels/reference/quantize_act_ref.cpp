// Scalar activation converters and the reference dispatch table. Q8_0/Q8_1 follow the x86
// path of the ecosystem (id = 127 / amax, round half to even), which is what its CPU backend
// runs on the machines Hearth targets; Q8_K is the reference quantizer from tensor/.
#include <cmath>

#include "kernels/kernel_table.h"
#include "kernels/reference/reference_kernels.h"
#include "tensor/fp16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace hearth::kernels::reference {

void quantize_act_f16(const float* x, void* dst, int64_t n) { fp32_to_fp16_row(x, static_cast<uint16_t*>(dst), n); }

void quantize_act_bf16(const float* x, void* dst, int64_t n) { fp32_to_bf16_row(x, static_cast<uint16_t*>(dst), n); }

namespace {

// Quantizes one block of 32; returns the float scale d and the sum of the quants.
float quantize_block_q8(const float* x, int8_t* qs, int* sum_out) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) amax = ax;
  }
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  int sum = 0;
  for (int j = 0; j < kQK; ++j) {
    qs[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));  // default rounding: half to even
    sum += qs[j];
  }
  *sum_out = sum;
  return d;
}

}  // namespace

void quantize_act_q8_0(const float* x, void* dst, int64_t n) {
  BlockQ8_0* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sum = 0;
    y[i].d = fp32_to_fp16(quantize_block_q8(x + i * kQK, y[i].qs, &sum));
  }
}

void quantize_act_q8_1(const float* x, void* dst, int64_t n) {
  BlockQ8_1* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sum = 0;
    const float d = quantize_block_q8(x + i * kQK, y[i].qs, &sum);
    y[i].d = fp32_to_fp16(d);
    y[i].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

void quantize_act_q8_k(const float* x, void* dst, int64_t n) { quantize_row_q8_k(x, static_cast<BlockQ8_K*>(dst), n); }

}  // namespace hearth::kernels::reference

namespace hearth::kernels {

void fill_reference_kernels(KernelTable& t) {
  namespace r = reference;
  auto slot = [](DType d) { return static_cast<int>(d); };
  t.vec_dot[slot(DType::kF32)] = r::vec_dot_f32;
  t.vec_dot[slot(DType::kF16)] = r::vec_dot_f16;
  t.vec_dot[slot(DType::kBF16)] = r::vec_dot_bf16;
  t.vec_dot[slot(DType::kQ4_0)] = r::vec_dot_q4_0;
  t.vec_dot[slot(DType::kQ4_1)] = r::vec_dot_q4_1;
  t.vec_dot[slot(DType::kQ5_0)] = r::vec_dot_q5_0;
  t.vec_dot[slot(DType::kQ5_1)] = r::vec_dot_q5_1;
  t.vec_dot[slot(DType::kQ8_0)] = r::vec_dot_q8_0;
  t.vec_dot[slot(DType::kQ2_K)] = r::vec_dot_q2_k;
  t.vec_dot[slot(DType::kQ3_K)] = r::vec_dot_q3_k;
  t.vec_dot[slot(DType::kQ4_K)] = r::vec_dot_q4_k;
  t.vec_dot[slot(DType::kQ5_K)] = r::vec_dot_q5_k;
  t.vec_dot[slot(DType::kQ6_K)] = r::vec_dot_q6_k;
  t.vec_dot[slot(DType::kIQ4_NL)] = r::vec_dot_iq4_nl;
  t.vec_dot[slot(DType::kIQ4_XS)] = r::vec_dot_iq4_xs;
  t.vec_dot[slot(DType::kMXFP4)] = r::vec_dot_mxfp4;
  t.quantize_act[slot(DType::kF16)] = r::quantize_act_f16;
  t.quantize_act[slot(DType::kBF16)] = r::quantize_act_bf16;
  t.quantize_act[slot(DType::kQ8_0)] = r::quantize_act_q8_0;
  t.quantize_act[slot(DType::kQ8_1)] = r::quantize_act_q8_1;
  t.quantize_act[slot(DType::kQ8_K)] = r::quantize_act_q8_k;
  t.sum_squares = r::sum_squares;
  t.dot_f16 = r::dot_f16;
  t.axpy_f16 = r::axpy_f16;
  t.axpy_f32 = r::axpy_f32;
  t.attention_tile = attention_tile_reference;
  fill_reference_pointwise_kernels(t);
}

}  // namespace hearth::kernels
