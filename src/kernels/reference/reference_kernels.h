// The scalar reference kernels behind the dispatch table's scalar variant. They follow the
// ecosystem's CPU arithmetic: per-block integer dot products, then one float scale per block.
// Every SIMD variant is tested against these.
#pragma once

#include <cstdint>

namespace hearth::kernels::reference {

// ---- float weights ----
float vec_dot_f32(int64_t n, const void* w, const void* a);   // F32 . F32, summed in double
float vec_dot_f16(int64_t n, const void* w, const void* a);   // F16 . F16, summed in double
float vec_dot_bf16(int64_t n, const void* w, const void* a);  // BF16 . BF16, summed in double

// ---- legacy blocks: weight . Q8_0 or Q8_1 ----
float vec_dot_q4_0(int64_t n, const void* w, const void* a);
float vec_dot_q4_1(int64_t n, const void* w, const void* a);
float vec_dot_q5_0(int64_t n, const void* w, const void* a);
float vec_dot_q5_1(int64_t n, const void* w, const void* a);
float vec_dot_q8_0(int64_t n, const void* w, const void* a);

// ---- K-quants . Q8_K ----
float vec_dot_q2_k(int64_t n, const void* w, const void* a);
float vec_dot_q3_k(int64_t n, const void* w, const void* a);
float vec_dot_q4_k(int64_t n, const void* w, const void* a);
float vec_dot_q5_k(int64_t n, const void* w, const void* a);
float vec_dot_q6_k(int64_t n, const void* w, const void* a);

// ---- non-linear 4-bit types: IQ4_NL . Q8_0, MXFP4 . Q8_0, IQ4_XS . Q8_K ----
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a);
float vec_dot_mxfp4(int64_t n, const void* w, const void* a);
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a);

// ---- activation converters (x86 ecosystem semantics: Q8_0/Q8_1 use id = 127/amax and
// round half to even; Q8_K is the reference Q8_K quantizer) ----
void quantize_act_f16(const float* x, void* dst, int64_t n);
void quantize_act_bf16(const float* x, void* dst, int64_t n);
void quantize_act_q8_0(const float* x, void* dst, int64_t n);
void quantize_act_q8_1(const float* x, void* dst, int64_t n);
void quantize_act_q8_k(const float* x, void* dst, int64_t n);

// ---- helpers for norms and attention ----
double sum_squares(const float* x, int64_t n);
float dot_f16(int64_t n, const uint16_t* a, const uint16_t* b);
void axpy_f16(int64_t n, float a, const uint16_t* v, float* y);
void axpy_f32(int64_t n, float a, const float* x, float* y);

}  // namespace hearth::kernels::reference
