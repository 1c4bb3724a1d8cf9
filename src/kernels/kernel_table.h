// The dispatch table: one set of function pointers per CPU variant, filled once by the
// reference/, avx2/ and avx512/ files. Each ISA file overrides only the entries it speeds up;
// the rest keep the scalar reference. Ops look the table up once per call, never per element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu_features.h"
#include "tensor/dtype.h"

namespace hearth::kernels {

struct KvSpan;           // ops.h
struct AttentionParams;  // ops.h
struct RopeParams;       // ops.h
struct AttentionTile;    // ops.h
struct KeyPart;          // ops.h

// Floats of work space an attention_tile kernel needs for these shapes (the largest variant's).
size_t attention_tile_work_floats(const AttentionParams& p);

// Dot product of one weight row (n elements of the weight type) with one activation row (n
// elements of the activation type that weight type pairs with, see activation_type).
using VecDotFn = float (*)(int64_t n, const void* weight_row, const void* activation_row);
// Dot products of one weight row with 4 activation rows (activation_row + k * activation_stride
// bytes, k < 4), written to out[k]. Each result is bit-identical to vec_dot's for that row, so
// a batch gives the same numbers as single tokens; the weight block is decoded once for all 4.
using VecDot4Fn = void (*)(int64_t n, const void* weight_row, const void* activation_rows, size_t activation_stride,
                           float* out);
// Converts n floats into an activation row (F16, BF16, Q8_0, Q8_1 or Q8_K).
using QuantizeActFn = void (*)(const float* x, void* dst, int64_t n);

inline constexpr int kDTypeSlots = 40;  // DType ids are < 40 (MXFP4 is 39)

// One call of a whole-matrix kernel (see GemmKernel): output rows of panels [panel_begin,
// panel_end) (16 rows each; rows past `rows` are not written) for every token.
struct GemmArgs {
  const uint8_t* w = nullptr;  // weight rows as stored in GGUF
  size_t w_row_bytes = 0;
  int64_t cols = 0;
  int64_t rows = 0;
  const uint8_t* act = nullptr;  // n_tokens rows prepared by GemmKernel::prepare_act
  size_t act_stride = 0;         // bytes between consecutive tokens' activations
  int64_t n_tokens = 0;
  int64_t panel_begin = 0;
  int64_t panel_end = 0;
  float* y = nullptr;  // y[t * y_stride + r]
  int64_t y_stride = 0;
  // Where the caller goes next (the next matrix of a grouped pass): the last panel prefetches
  // these bytes as it reads, as it would the next panel of its own matrix. A call whose first
  // panel a previous call prefetched so is told by first_prefetched.
  const uint8_t* follow = nullptr;
  size_t follow_bytes = 0;
  bool first_prefetched = false;
};

// A whole-matrix kernel for one weight type (only SIMD variants have them). Activations are
// converted once per token into the kernel's own layout; `run` then packs 16 weight rows at a
// time into an interleaved tile (one register holds 4 elements of each of the 16 rows) and
// feeds it with every token, so each weight byte is decoded once per call however many tokens
// there are. Every (row, token) result is computed by the same operations in the same order
// whatever the token count, so batches give the numbers single tokens give.
struct GemmKernel {
  size_t (*act_row_bytes)(int64_t cols) = nullptr;  // a multiple of 64
  void (*prepare_act)(const float* x, void* dst, int64_t cols) = nullptr;
  void (*run)(const GemmArgs& args) = nullptr;
  int64_t cols_multiple = 1;  // the kernel handles rows whose length is a multiple of this
  // Optional: the same product on a matrix in the interleaved layout (interleaved_layout.h;
  // args.w is then the interleaved matrix), with the same results. Weights are interleaved at
  // load time only for types whose kernel has this.
  void (*run_interleaved)(const GemmArgs& args) = nullptr;
  // Optional: a faster interleave_panel (same bytes out) for this type.
  void (*interleave_panel)(const uint8_t* src, size_t row_bytes, int64_t cols, int64_t panel, uint8_t* dst) = nullptr;
};
inline constexpr int64_t kGemmPanelRows = 16;

struct KernelTable {
  CpuVariant variant = CpuVariant::kScalar;
  VecDotFn vec_dot[kDTypeSlots] = {};          // indexed by the weight DType id
  VecDot4Fn vec_dot_x4[kDTypeSlots] = {};      // optional (null: matmul calls vec_dot per token)
  QuantizeActFn quantize_act[kDTypeSlots] = {};  // indexed by the activation DType id
  GemmKernel gemm[kDTypeSlots] = {};             // indexed by the weight DType id; optional
  // sum of x[i]*x[i] (each product in F32, summed in double), for rms_norm
  double (*sum_squares)(const float* x, int64_t n) = nullptr;
  // sum of a[i]*b[i] over F16 vectors, products and sum in F32 (attention Q.K)
  float (*dot_f16)(int64_t n, const uint16_t* a, const uint16_t* b) = nullptr;
  // y[i] += fp16(v[i]) * a, multiply then add in F32 (attention P.V)
  void (*axpy_f16)(int64_t n, float a, const uint16_t* v, float* y) = nullptr;
  // y[i] += x[i] * a in F32 (attention P.V for F32 / Q8_0 caches)
  void (*axpy_f32)(int64_t n, float a, const float* x, float* y) = nullptr;
  // Optional attention of one query (a decode step) for the heads [head_begin, head_end) (same
  // contract as ops.h attention_heads()); returns false for cache types and shapes it does not
  // handle, which then take the generic path.
  // With a KeyPart (may be null: all keys), the contract of ops.h attention_heads_part().
  bool (*attention_decode)(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                           int32_t head_begin, int32_t head_end, const KeyPart* part, float* out,
                           std::vector<float>& scratch) = nullptr;

  // Flash-style attention of a query tile (ops.h attention_tile); work holds
  // attention_tile_work_floats(p) floats. Returns false for shapes it does not handle, which
  // then take the scalar reference (always filled).
  bool (*attention_tile)(const AttentionTile& t, const KvSpan& kv, const AttentionParams& p, float* work) = nullptr;

  // ---- the pointwise ops of ops.h, same contracts (softcap, run once per token over the
  // logits, stays scalar and is not here). The reference fills them with the scalar code
  // (pointwise_ops.cpp, rope.cpp); avx2/pointwise_avx2.cpp and avx512/pointwise_avx512.cpp
  // override them. rope, gelu, add, mul and scale are bit-identical in every variant; norms
  // differ only in the order of their double sums; softmax and silu use a vector exp (F32).
  void (*rms_norm)(const float* x, const float* weight, float* y, int64_t n, float eps) = nullptr;
  void (*layer_norm)(const float* x, const float* weight, const float* bias, float* y, int64_t n, float eps) = nullptr;
  void (*softmax)(float* x, int64_t n) = nullptr;
  void (*silu)(float* x, int64_t n) = nullptr;
  void (*gelu)(float* x, int64_t n) = nullptr;
  void (*add)(float* y, const float* x, int64_t n) = nullptr;
  void (*mul)(float* y, const float* x, int64_t n) = nullptr;
  void (*scale)(float* y, float s, int64_t n) = nullptr;
  void (*rope)(float* x, int32_t n_heads, int32_t head_dim, int32_t pos, const RopeParams& p) = nullptr;
};

// The activation type that weights of type w are multiplied with; kF32 for F32 weights and
// for types without a vec_dot.
DType activation_type(DType w);

// The table of the active variant (selected on first use, see cpu_features.h).
const KernelTable& active_kernels();
// The table of a given variant (entries of unsupported ISAs must not be called).
const KernelTable& kernels_for(CpuVariant v);

// Filled by the per-variant files.
void fill_reference_kernels(KernelTable& t);
void fill_avx2_kernels(KernelTable& t);
void fill_avx2_more_kernels(KernelTable& t);  // called by fill_avx2_kernels
void fill_avx2_nonlinear_kernels(KernelTable& t);  // called by fill_avx2_kernels: IQ4_NL, IQ4_XS, MXFP4
void fill_avx512_kernels(KernelTable& t);
// Called by fill_avx512_kernels: whole-matrix kernels for Q4_0/Q5_0/Q8_0, Q4_K/Q6_K and F16.
void fill_avx512_gemm_q8_kernels(KernelTable& t);
void fill_avx512_gemm_kquant_kernels(KernelTable& t);
void fill_avx512_gemm_f16_kernels(KernelTable& t);
void fill_avx512_attention_kernels(KernelTable& t);
// Called by fill_avx512_kernels: dot products and whole-matrix kernels for IQ4_NL, IQ4_XS, MXFP4.
void fill_avx512_nonlinear_kernels(KernelTable& t);
void fill_avx2_attention_tile_kernels(KernelTable& t);
void fill_avx2_attention_decode_kernels(KernelTable& t);  // called by fill_avx2_kernels: Q8_0 / Q4_0 decode
void fill_avx512_attention_tile_kernels(KernelTable& t);
bool attention_tile_reference(const AttentionTile& t, const KvSpan& kv, const AttentionParams& p, float* work);

// The pointwise-op entries, filled by fill_reference_kernels, fill_avx2_kernels and
// fill_avx512_kernels respectively.
void fill_reference_pointwise_kernels(KernelTable& t);
void fill_avx2_pointwise_kernels(KernelTable& t);
void fill_avx512_pointwise_kernels(KernelTable& t);

}  // namespace hearth::kernels
