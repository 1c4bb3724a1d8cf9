// The compute kernels the model's forward pass is written in. Each op has a scalar reference
// implementation; the hot ones also have AVX2 and AVX-512 variants, chosen once at start-up
// (cpu_features.h) and checked against the reference by tests. Ops take plain float buffers
// and weight views into the mmapped GGUF; none allocates per call except through the
// caller-provided scratch.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tensor/dtype.h"
#include "util/result.h"
#include "util/thread_pool.h"

namespace hearth::kernels {

// A 2-D weight matrix as stored in GGUF: `rows` rows of `cols` elements (cols = ne[0], the
// contiguous dimension), each row_bytes long; or, when `interleaved`, the same bytes in the
// interleaved layout of the active kernels (interleaved_layout.h, see interleave_weight).
struct WeightView {
  DType type = DType::kF32;
  const uint8_t* data = nullptr;
  int64_t cols = 0;
  int64_t rows = 0;
  size_t row_bytes = 0;
  bool interleaved = false;
};

// Whether the active kernels multiply matrices of w's type and shape faster interleaved.
bool wants_interleaved(const WeightView& w);
// Writes the interleaved layout of panels [panel_begin, panel_end) of w (GGUF rows, for which
// wants_interleaved holds) to dst, which holds the whole interleaved matrix.
void interleave_weight(const WeightView& w, int64_t panel_begin, int64_t panel_end, uint8_t* dst);

// Reusable buffers for matmul (quantized activations). Grows on demand, never shrinks, so a
// forward pass allocates only on its first call.
struct MatmulScratch {
  std::vector<uint8_t> activations;
  std::vector<int64_t> plan;  // per-matrix bookkeeping of one call (activation buffer, panels)
};

// y[t][r] = sum_c W[r][c] * x[t][c] for t < n_tokens, r < rows. x is n_tokens rows of cols
// floats (row stride cols); y is n_tokens rows of `rows` floats (row stride rows).
// The activation rows are converted the way the ecosystem does for each weight type so that
// results match it: F32 weights use F32; F16 -> activations rounded to F16; BF16 -> BF16;
// Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4 -> Q8_0; Q4_1/Q5_1 -> Q8_1; Q2_K..Q6_K/IQ4_XS -> Q8_K; then
// integer dot products.
// Work is split over the pool's threads by output rows.
Status matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
              MatmulScratch& scratch);

// One matrix of a matmul_multi call and where its output goes (n_tokens rows of w->rows floats).
struct MatmulJob {
  const WeightView* w = nullptr;
  float* y = nullptr;
};

// matmul for several matrices of the same width applied to the same x (Q, K and V; gate and
// up): the same results as one matmul per job, but x is converted once per activation format
// and the rows of all matrices are split over the pool in one pass.
Status matmul_multi(std::span<const MatmulJob> jobs, const float* x, int64_t n_tokens, ThreadPool& pool,
                    MatmulScratch& scratch);

// One matrix of a matmul_grouped call with its own input and output: n_tokens rows of w->cols
// floats in x, n_tokens rows of w->rows floats in y.
struct GroupedMatmulJob {
  const WeightView* w = nullptr;
  const float* x = nullptr;
  int64_t n_tokens = 0;
  float* y = nullptr;
};

// matmul for several matrices, each with inputs of its own (the experts a decode step chose,
// each over its tokens): the same results as one matmul per job, but the rows of all matrices
// are split over the pool in one pass, so the threads meet once instead of once per matrix.
// Jobs with the same x and n_tokens share one activation conversion.
Status matmul_grouped(std::span<const GroupedMatmulJob> jobs, ThreadPool& pool, MatmulScratch& scratch);

// Row `row` of an embedding table, dequantized into out (w.cols floats).
Status get_row(const WeightView& w, int64_t row, float* out);

// y = x / sqrt(mean(x^2) + eps) * weight   (weight may be null: no scaling)
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);
// y = (x - mean) / sqrt(var + eps) * weight + bias   (weight/bias may be null)
void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t n, float eps);

enum class RopeStyle {
  kNormal,  // rotates adjacent pairs (2i, 2i+1)
  kNeox,    // rotates (i, i + rope_dims/2)
};

struct RopeParams {
  RopeStyle style = RopeStyle::kNormal;
  int32_t rope_dims = 0;     // leading dimensions of each head that rotate
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;   // 1 / linear scaling factor
  // YaRN (rope scaling type "yarn"): ext_factor > 0 enables it.
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int32_t n_ctx_orig = 0;
  const float* freq_factors = nullptr;  // optional per-dimension divisors (rope_dims/2 floats)
};

// YaRN's correction dimensions (the pair indices where the ramp from extrapolated to
// interpolated angles starts and ends) for n_dims rotated dimensions; 0, 0 without YaRN.
void rope_yarn_corr_dims(int32_t n_dims, const RopeParams& p, float* low, float* high);
// What cos and sin are scaled by: attn_factor, times YaRN's magnitude correction.
float rope_yarn_mscale(const RopeParams& p);

// Rotates n_heads heads of head_dim floats (stored contiguously) at position pos.
void rope(float* x, int32_t n_heads, int32_t head_dim, int32_t pos, const RopeParams& p);

void softmax(float* x, int64_t n);
void silu(float* x, int64_t n);
// GELU, tanh approximation, evaluated as the ecosystem's CPU backend does (via F16 rounding).
void gelu(float* x, int64_t n);
void add(float* y, const float* x, int64_t n);          // y += x
void mul(float* y, const float* x, int64_t n);          // y *= x
void scale(float* y, float s, int64_t n);               // y *= s
void softcap(float* y, float cap, int64_t n);           // y = cap * tanh(y / cap)

// Keys and values of one sequence in one layer, as the paged KV cache stores them: block b
// holds positions [b*block_tokens, (b+1)*block_tokens); inside a block, token rows are
// contiguous, each k_row_bytes (v_row_bytes) long, holding all KV heads.
// by_head (F16 caches only): a block keeps each KV head's keys and values as ranges. K is
// stored by element (transposed), element e of the block's token o at index e * block_tokens +
// o, so one element of a block's keys is a run and a decode step scores 16 keys per vector with
// no sums across lanes; V by head, then token (kv_value_by_head_index: a head's value row of
// each token, the block's tokens one after another). A decode step reads each head's K and V as
// ranges, front to back, which the hardware prefetchers follow (token-major value rows, read
// head by head, they did not: docs/decisions.md). k_row_bytes / v_row_bytes still give the
// bytes of one token's K / V.
// The SIMD decode kernels read a transposed K in groups of this many keys, which must not
// straddle blocks (block_tokens a multiple of it; otherwise they leave it to the portable path).
constexpr int32_t kTransposedKeyGroup = 16;
// Where a transposed K keeps element `element` of the block's token `token`, in F16 values from
// the block's start: the layout's one formula (runs of a group, a head's range and its byte
// lengths all follow from it).
constexpr size_t kv_key_transposed_index(int32_t block_tokens, int64_t element, int32_t token) {
  return static_cast<size_t>(element) * static_cast<size_t>(block_tokens) + static_cast<size_t>(token);
}
// Where V by head keeps element `element` (of every KV head's, head_dim each) of the block's
// token `token`, in F16 values from the block's start.
constexpr size_t kv_value_by_head_index(int32_t block_tokens, int32_t head_dim, int64_t element, int32_t token) {
  return (static_cast<size_t>(element / head_dim) * static_cast<size_t>(block_tokens) + static_cast<size_t>(token)) *
             static_cast<size_t>(head_dim) +
         static_cast<size_t>(element % head_dim);
}
// A BF16 cache stores pairs instead of rows, so that one BF16 dot-product instruction
// (vdpbf16ps: two products per F32 lane) takes two elements of a key or two keys of a value
// column at a time: K by element pair (elements e and e + 1 of a token side by side, a block's
// 16 consecutive keys' pairs one 64-byte run: a KV head's keys of a block are one range), V by
// token pair and KV head (each head's values of the block one range, in it tokens o and o + 1
// interleaved element by element: an element of two keys is one 32-bit word). A decode step
// reads each head's K and V as ranges, as for by_head F16. Both need an even block_tokens and
// even head sizes; k_row_bytes / v_row_bytes still give one token's bytes.
// The layouts' formulas, in BF16 values from the block's start (head_dim: the V head size):
constexpr size_t kv_key_paired_index(int32_t block_tokens, int64_t element, int32_t token) {
  return static_cast<size_t>(element / 2) * 2 * static_cast<size_t>(block_tokens) + 2 * static_cast<size_t>(token) +
         static_cast<size_t>(element % 2);
}
constexpr size_t kv_value_paired_index(int32_t block_tokens, int32_t head_dim, int64_t element, int32_t token) {
  return static_cast<size_t>(element / head_dim) * static_cast<size_t>(block_tokens) * static_cast<size_t>(head_dim) +
         static_cast<size_t>(token / 2) * 2 * static_cast<size_t>(head_dim) +
         2 * static_cast<size_t>(element % head_dim) + static_cast<size_t>(token % 2);
}
struct KvSpan {
  const uint8_t* const* k_blocks = nullptr;
  const uint8_t* const* v_blocks = nullptr;
  int32_t block_tokens = 0;
  size_t k_row_bytes = 0;
  size_t v_row_bytes = 0;
  DType type = DType::kF16;  // F16, F32, Q8_0, Q4_0 or BF16 (pairs: kv_key_paired_index)
  bool by_head = false;      // F16: K by element and V by head in each block (see above)
};

struct AttentionParams {
  int32_t n_head = 0;
  int32_t n_head_kv = 0;     // query head h uses KV head h / (n_head / n_head_kv)
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  float scale = 1.0f;        // applied to Q.K before softcap and mask
  float softcap = 0.0f;      // 0: off; else s = softcap * tanh(s / softcap)
  int32_t window = 0;        // 0: off; else the query at p sees keys p-window+1 .. p
  bool causal = true;        // causal: keys 0..q_pos; otherwise all n_kv keys
  // Optional per-head sink logits (n_head floats, gpt-oss): each joins its head's softmax
  // denominator as exp(sink) and carries no value, so the head's weights sum to less than 1.
  const float* sinks = nullptr;
};

// Attention of one query token (all heads: n_head * head_dim_k floats at q) at position
// q_pos over the first n_kv positions of kv; writes n_head * head_dim_v floats to out.
// Arithmetic follows the ecosystem's CPU path for an F16 cache: Q rounded to F16, Q.K
// accumulated in F32, softmax in F32, probabilities rounded to F16 for the V product. For a
// BF16 cache likewise in BF16 (as the ecosystem multiplies a BF16 K with a BF16-rounded Q and a
// BF16 V with BF16-rounded probabilities): every product is then exact in F32, and the SIMD
// kernels sum two per lane and instruction.
// scratch grows to n_kv floats.
void attention(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p, float* out,
               std::vector<float>& scratch);
// The same for query heads [head_begin, head_end) only: reads and writes only those heads'
// rows of q and out. A head's arithmetic does not depend on the range, so splitting the heads
// of a token over several calls (threads) gives bit-identical results.
void attention_heads(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                     int32_t head_begin, int32_t head_end, float* out, std::vector<float>& scratch);

// One part of a decode step split by keys: attention_heads restricted to keys [begin, end)
// (besides the masks), normalized over that part alone; stats[2 * h] gets head h's maximum
// score and stats[2 * h + 1] the sum of e^(score - maximum) over the part (-inf and 0 when the
// part holds no visible key, its output then being zeros). attention_merge combines parts.
// A part leaves out the attention sinks (AttentionParams::sinks): the merge adds them.
struct KeyPart {
  int32_t begin = 0;
  int32_t end = 0;
  float* stats = nullptr;  // 2 * n_head floats, written for heads [head_begin, head_end)
};
void attention_heads_part(const float* q, int32_t q_pos, int32_t n_kv, const KvSpan& kv, const AttentionParams& p,
                          int32_t head_begin, int32_t head_end, const KeyPart& part, float* out,
                          std::vector<float>& scratch);
// out (dv floats) = the softmax-weighted combination of n_parts partial outputs of one head
// (parts[i], with stats[i] = {max, sum} as attention_heads_part writes them); sink: the head's
// sink logit when the model has sinks (it joins the denominator and carries no value).
void attention_merge(int32_t n_parts, const float* const* parts, const float* const* stats, int32_t dv, float* out,
                     float sink = -INFINITY);

// A run of query tokens of one sequence at consecutive positions (a prefill chunk), for the
// query heads of one KV head (GQA group). Token t (< n_q) is at position q_pos0 + t; its query
// heads (all n_head of them) start at q + t * q_stride and its output heads at out + t * out_stride;
// only the group's heads kv_head * group .. + group are read and written.
struct AttentionTile {
  const float* q = nullptr;
  int64_t q_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  int32_t q_pos0 = 0;
  int32_t n_q = 0;
  int32_t n_kv = 0;     // keys [0, n_kv) are in the cache (a causal query still sees only up to its own position)
  int32_t kv_head = 0;
};

// Flash-style attention of a tile: K and V are read in tiles of a few dozen keys that every
// query row of the tile (tokens x group heads) uses while they are in cache, with an online
// softmax (running maximum and sum per row), so nothing grows with n_q * n_kv; key tiles past
// the last query's position (causal) or before the first query's window are skipped. Same masks
// and Q rounding as attention(); probabilities stay F32 (a BF16 cache's are rounded to BF16 for
// the V product, as attention() does). F16, F32, Q8_0, Q4_0 and BF16 caches.
void attention_tile(const AttentionTile& t, const KvSpan& kv, const AttentionParams& p, std::vector<float>& scratch);

// Converts n floats to the KV cache's storage type (F16, F32, Q8_0 or Q4_0) and back (a BF16
// cache has no rows: the paired functions below).
Status kv_store_row(DType type, const float* x, void* dst, int64_t n);
Status kv_load_row(DType type, const void* src, float* dst, int64_t n);
// The same for one token of a block stored by head (KvSpan::by_head, F16): token `offset` of a
// block of block_tokens, elements [first, first + n) of its K row (stored by element), and
// its V row's n elements (each KV head's head_dim kept with that head's other tokens).
void kv_store_key_transposed(const float* x, uint8_t* block, int32_t block_tokens, int32_t offset, int64_t n);
void kv_load_key_transposed(const uint8_t* block, int32_t block_tokens, int32_t offset, int64_t first, int64_t n,
                            uint16_t* dst);
void kv_store_value_by_head(const float* x, uint8_t* block, int32_t block_tokens, int32_t head_dim, int32_t offset,
                            int64_t n);
// A BF16 cache's token `offset` of a block of block_tokens: K elements [0, n) of the token into
// a block stored by element pair, V elements [0, n) (every KV head's, head_dim each) into a block
// stored by head and token pair; and elements [first, first + n) back as floats.
void kv_store_key_paired(const float* x, uint8_t* block, int32_t block_tokens, int32_t offset, int64_t n);
void kv_store_value_paired(const float* x, uint8_t* block, int32_t block_tokens, int32_t head_dim, int32_t offset,
                           int64_t n);
void kv_load_key_paired(const uint8_t* block, int32_t block_tokens, int32_t offset, int64_t first, int64_t n, float* dst);
void kv_load_value_paired(const uint8_t* block, int32_t block_tokens, int32_t head_dim, int32_t offset, int64_t first,
                          int64_t n, float* dst);

}  // namespace hearth::kernels
