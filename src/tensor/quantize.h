// Scalar reference (de)quantization for every tensor type Hearth reads: F32, F16, BF16, the
// legacy block types Q4_0..Q8_1, the K-quants Q2_K..Q8_K and the non-linear IQ4_NL, IQ4_XS and
// MXFP4. The quantizers reproduce the
// ecosystem's reference quantizers (the ones llama-quantize uses without an importance
// matrix), so quantizing an F32 tensor here yields the bytes other tools write. Later SIMD
// kernels are tested against these functions.
//
// Block pointers must be aligned to the block struct (2 bytes; 4 for Q8_K; 1 for MXFP4),
// which GGUF's 32-byte tensor alignment guarantees. Per-type functions take n = a multiple of the block
// size and do not check; the DType-dispatching functions check and return errors.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/quant_blocks.h"
#include "util/result.h"

namespace hearth {

// ---- per-type dequantizers (n elements, n a multiple of the block size) ----
void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, int64_t n);
void dequantize_row_q4_1(const BlockQ4_1* src, float* dst, int64_t n);
void dequantize_row_q5_0(const BlockQ5_0* src, float* dst, int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* src, float* dst, int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t n);
void dequantize_row_q8_1(const BlockQ8_1* src, float* dst, int64_t n);
void dequantize_row_q2_k(const BlockQ2_K* src, float* dst, int64_t n);
void dequantize_row_q3_k(const BlockQ3_K* src, float* dst, int64_t n);
void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t n);
void dequantize_row_q5_k(const BlockQ5_K* src, float* dst, int64_t n);
void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, int64_t n);
void dequantize_row_q8_k(const BlockQ8_K* src, float* dst, int64_t n);
void dequantize_row_iq4_nl(const BlockIQ4_NL* src, float* dst, int64_t n);
void dequantize_row_iq4_xs(const BlockIQ4_XS* src, float* dst, int64_t n);
void dequantize_row_mxfp4(const BlockMXFP4* src, float* dst, int64_t n);

// ---- per-type reference quantizers ----
void quantize_row_q4_0(const float* src, BlockQ4_0* dst, int64_t n);
void quantize_row_q4_1(const float* src, BlockQ4_1* dst, int64_t n);
void quantize_row_q5_0(const float* src, BlockQ5_0* dst, int64_t n);
void quantize_row_q5_1(const float* src, BlockQ5_1* dst, int64_t n);
void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t n);
void quantize_row_q8_1(const float* src, BlockQ8_1* dst, int64_t n);
void quantize_row_q2_k(const float* src, BlockQ2_K* dst, int64_t n);
void quantize_row_q3_k(const float* src, BlockQ3_K* dst, int64_t n);
void quantize_row_q4_k(const float* src, BlockQ4_K* dst, int64_t n);
void quantize_row_q5_k(const float* src, BlockQ5_K* dst, int64_t n);
void quantize_row_q6_k(const float* src, BlockQ6_K* dst, int64_t n);
void quantize_row_q8_k(const float* src, BlockQ8_K* dst, int64_t n);
// IQ4_NL / IQ4_XS: the ecosystem's search without an importance matrix (weights x^2, 7 scale
// tries each side); MXFP4: exponent floor(log2(amax)) - 2, each value to its nearest level.
void quantize_row_iq4_nl(const float* src, BlockIQ4_NL* dst, int64_t n);
void quantize_row_iq4_xs(const float* src, BlockIQ4_XS* dst, int64_t n);
void quantize_row_mxfp4(const float* src, BlockMXFP4* dst, int64_t n);

// ---- dispatch by type ----
// True for the types this module converts: F32, F16, BF16, Q4_0..Q8_1, Q2_K..Q8_K, IQ4_NL,
// IQ4_XS and MXFP4.
bool dtype_convertible(DType type);

// Converts n elements of `type` at src into floats. Errors: unsupported type, n not a
// multiple of the block size, negative n, src misaligned for the block struct.
Status dequantize_row(DType type, const void* src, float* dst, int64_t n);

// Converts n floats into `type` (dtype_row_bytes(type, n) bytes at dst). Same errors.
Status quantize_row(DType type, const float* src, void* dst, int64_t n);

// Dequantizes a whole tensor of n elements stored in src_bytes bytes; checks that src_bytes
// equals the size n elements of `type` take.
Status dequantize_tensor(DType type, const void* src, uint64_t src_bytes, float* dst, int64_t n);
Result<std::vector<float>> dequantize_tensor(DType type, const void* src, uint64_t src_bytes,
                                             int64_t n);

}  // namespace hearth
