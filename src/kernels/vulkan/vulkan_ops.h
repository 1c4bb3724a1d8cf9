// The compute kernels on a Vulkan device: quantized matrix x vector / matrix x matrix (F32,
// F16, Q8_0, Q4_0, Q4_K, Q6_K as stored; other types dequantised to F16 at upload), RMSNorm,
// RoPE, softmax, SiLU, GELU, add/mul/scale and attention over a paged F16 KV cache. Each op
// records into a device::Recorder; nothing runs until the recorder is submitted. Offsets and
// counts are in floats (elements), not bytes, so bindings never need driver-specific offset
// alignment. Subgroup reductions are used where the device has subgroup arithmetic, a
// shared-memory reduction elsewhere (set_use_subgroups or HEARTH_VULKAN_SUBGROUPS=0 force the
// fallback); matrix x vector then gives each output row one subgroup, several rows a workgroup.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "device/device.h"
#include "kernels/ops.h"
#include "tensor/dtype.h"
#include "util/result.h"

namespace hearth::kernels::vulkan {

// A weight matrix in device memory: rows of cols elements of `type` (the GGUF bytes for the
// native types, Q4_0 and Q8_0 rows split into quants then scales and Q4_K and Q6_K rows
// regrouped by 32-weight unit, as weight_unit.glsl says; F16 for the others), from
// byte_offset of a buffer that matrices uploaded together (upload_weights) share. Every row
// keeps the file's row_bytes.
struct DeviceWeight {
  DType type = DType::kF32;
  DType source_type = DType::kF32;  // the file's type
  int64_t cols = 0;
  int64_t rows = 0;
  size_t row_bytes = 0;
  std::shared_ptr<device::Buffer> storage;
  size_t byte_offset = 0;

  bool valid() const { return storage != nullptr && storage->valid(); }
  // Rows [first, first + count) as a matrix of their own, in the same storage.
  DeviceWeight row_range(int64_t first, int64_t count) const;
};

// Where one matrix x vector's rows go: count rows into y from element 0.
struct RowsInto {
  const device::Buffer* y = nullptr;
  uint32_t count = 0;
};

// A float array in a device buffer, starting at element `offset`.
struct DeviceSpan {
  const device::Buffer* buffer = nullptr;
  uint32_t offset = 0;
};

// KV of one sequence and layer on the device, F16 rows (n_head_kv * head_dim per token) in
// blocks of block_tokens rows. The blocks live in chunk allocations (the elastic pool's
// chunks): `chunks` holds one uint64 device address per chunk, pool block b being slot
// b % blocks_per_chunk of chunk b / blocks_per_chunk. Slot s of a chunk starts at 32-bit word
// s * slot_words; in it, this layer's block_tokens K rows start at word k_word and its V rows
// at v_word. `table` holds uint32 pool block indices, one per block of the sequence, from
// table_offset. Needs Context::buffer_addresses().
struct DeviceKv {
  const device::Buffer* chunks = nullptr;
  const device::Buffer* table = nullptr;
  uint32_t block_tokens = 0;
  uint32_t table_offset = 0;
  uint32_t blocks_per_chunk = 1;
  uint32_t k_word = 0;
  uint32_t v_word = 0;
  uint32_t slot_words = 0;
};

// Whether matmul runs weights of this type as stored (others are dequantised to F16).
bool native_weight_type(DType type);
// Subgroups of matvec.comp that share one group of 4 rows of a rows x cols matrix: a power of
// two, raised while the matrix has fewer than 4,096 row groups x team subgroups and each lane
// would still walk at least one of the row's 32-weight units (at most a workgroup's
// subgroups). On an H200, teams of 2 made a 1B model's Q/K/V (768 row groups) 13% faster and
// teams of 8 its down matrix (512 row groups, 8,192-wide rows) 46%, while gate/up (4,096 row
// groups) and the output matrix ran 9-12% slower with teams of 2: they fill the device already.
uint32_t matvec_team(uint32_t cols, uint32_t rows, uint32_t subgroup_size);

class VulkanOps {
 public:
  explicit VulkanOps(device::Context& ctx);
  device::Context& context() { return ctx_; }
  // Subgroup kernels where the device has subgroup arithmetic (the default unless
  // HEARTH_VULKAN_SUBGROUPS=0); off: the shared-memory fallback. On is ignored on a device
  // without them.
  void set_use_subgroups(bool on);
  bool use_subgroups() const { return subgroups_; }
  // Batches of more than 4 tokens through matmul_tiled.comp (the default unless
  // HEARTH_VULKAN_TILED=0); off: matmul.comp's 4-token tiles for every batch.
  void set_use_tiled(bool on) { tiled_ = on; }
  // One token on a device with subgroups through matvec.comp (4 rows per team of subgroups
  // sharing the inputs; the default unless HEARTH_VULKAN_MATVEC=0); off: matmul.comp.
  void set_use_matvec(bool on) { matvec_ = on; }
  bool use_matvec() const { return matvec_ && subgroups_; }

  Result<DeviceWeight> upload_weight(const WeightView& w);
  // Matrices of the same type and width one after another in one buffer (a layer's Q, K and V;
  // gate and up), returned as one matrix of all their rows; row_range() gives each back.
  // Matrices that would not share a layout (other types, other widths) are an error.
  Result<DeviceWeight> upload_weights(std::span<const WeightView> parts);
  // Whether upload_weights takes these matrices: one device layout (type, width) for all.
  bool can_store_together(std::span<const WeightView> parts) const;

  // y[t][r] = sum_c W[r][c] x[t][c]: x rows of w.cols floats (stride x_stride), y rows of
  // stride y_stride.
  Status matmul(device::Recorder& rec, const DeviceWeight& w, DeviceSpan x, uint32_t x_stride, uint32_t n_tokens,
                DeviceSpan y, uint32_t y_stride);
  // One token through w (matrices uploaded together) with its rows split over up to three
  // outputs in one dispatch (the parts' counts must add up to w.rows). Only where
  // fused_matvec() says so; elsewhere run the parts' row_range()s one by one.
  // With norm_weight, x is first normalised as rms_norm would (x / rms * norm_weight, one row
  // of w.cols floats) inside the same dispatch: the norm before Q/K/V or gate/up fused away.
  Status matvec_split(device::Recorder& rec, const DeviceWeight& w, DeviceSpan x, std::span<const RowsInto> parts,
                      const device::Buffer* norm_weight = nullptr, float eps = 0.0f);
  // One token: y[r] += sum_c W[r][c] x[c] (y from element 0): a projection added into the
  // residual stream in the same dispatch. Only where fused_matvec(w).
  Status matvec_add(device::Recorder& rec, const DeviceWeight& w, DeviceSpan x, const device::Buffer& y);
  bool fused_matvec(const DeviceWeight& w) const { return use_matvec() && native_weight_type(w.type); }
  // Output rows one matmul workgroup computes: one per subgroup with subgroups (the subgroup
  // sums its row by subgroupAdd), else 1 (the workgroup sums it in shared memory).
  uint32_t matmul_rows_per_group() const;
  // Each of n_rows rows of n floats: y = x / rms * weight (weight.buffer null: no weight).
  // x and y must be different buffers or the same buffer with the same offset... both start at 0.
  // With a residual (n_rows rows of n floats), x += residual first and keeps the sum: the
  // residual add fused into the norm that follows it (y must then be another buffer).
  Status rms_norm(device::Recorder& rec, const device::Buffer& x, const device::Buffer* weight, const device::Buffer& y,
                  uint32_t n, uint32_t n_rows, float eps, const device::Buffer* residual = nullptr);
  Status softmax(device::Recorder& rec, const device::Buffer& x, uint32_t n, uint32_t n_rows);
  Status add(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n);
  // y[r][i] += row[i] over n_rows rows of width floats (a bias).
  Status add_rows(device::Recorder& rec, const device::Buffer& y, const device::Buffer& row, uint32_t width,
                  uint32_t n_rows);
  Status mul(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n);
  Status scale(device::Recorder& rec, const device::Buffer& y, float s, uint32_t n);
  Status silu(device::Recorder& rec, const device::Buffer& y, uint32_t n);
  Status gelu(device::Recorder& rec, const device::Buffer& y, uint32_t n);
  // y = silu(y) * x and y = gelu(y) * x: a gated feed-forward's activation and product in one
  // dispatch.
  Status silu_mul(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n);
  Status gelu_mul(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n);
  // In place over n_tokens rows of n_heads * head_dim floats; positions: n_tokens int32. With
  // YaRN and attn_factor as p gives them; p.freq_factors' values must be in freq_factors
  // (rope_dims / 2 floats on the device; null: none). With x2, its rows of n_heads2 * head_dim
  // floats (the same tokens and positions) turn in the same dispatch: queries and keys at once.
  Status rope(device::Recorder& rec, const device::Buffer& x, const device::Buffer& positions, uint32_t n_tokens,
              uint32_t n_heads, uint32_t head_dim, const RopeParams& p, const device::Buffer* freq_factors = nullptr,
              const device::Buffer* x2 = nullptr, uint32_t n_heads2 = 0);
  // Attention of queries [first_token, first_token + n_tokens) of q (rows of n_head *
  // head_dim_k floats; positions: one int32 per row of q), all of one sequence, over the
  // first n_kv positions of kv; scores: scratch of at least (first_token + n_tokens) * n_head
  // * n_kv floats; out: rows of n_head * head_dim_v floats, the same rows as q. A few tokens
  // over a long sequence (a decode step) split the keys over several workgroups and merge
  // them after, when `partials` holds attention_partial_floats() floats.
  Status attention(device::Recorder& rec, const device::Buffer& q, const device::Buffer& positions, uint32_t first_token,
                   uint32_t n_tokens, const DeviceKv& kv, uint32_t n_kv, const AttentionParams& p,
                   const device::Buffer& scores, const device::Buffer& out, const device::Buffer* partials = nullptr);
  // Floats of partial results a split attention of n_tokens over n_kv keys needs (0: no split).
  size_t attention_partial_floats(uint32_t n_tokens, uint32_t n_kv, const AttentionParams& p) const;
  // Keys per workgroup of a split attention (tests lower it to split short sequences).
  void set_attention_split(uint32_t positions) { split_len_ = positions; }
  static constexpr uint32_t kMaxSplitTokens = 4;  // dispatches of more tokens are not split
  // Stores rows [first_token, first_token + n_tokens) of x (row_elems floats each, row_elems
  // even) as F16 at their positions through kv's block table, into the K rows (values: the V
  // rows).
  Status kv_store(device::Recorder& rec, const device::Buffer& x, const device::Buffer& positions, uint32_t first_token,
                  uint32_t n_tokens, uint32_t row_elems, const DeviceKv& kv, bool values);
  // The K rows of k (k_elems floats each) and the V rows of v (v_elems) in one dispatch.
  Status kv_store_pair(device::Recorder& rec, const device::Buffer& k, const device::Buffer& v,
                       const device::Buffer& positions, uint32_t first_token, uint32_t n_tokens, uint32_t k_elems,
                       uint32_t v_elems, const DeviceKv& kv);

 private:
  Result<const device::Pipeline*> pipeline(std::string_view name, bool reduces, uint32_t buffers, uint32_t push_bytes);
  // The device layout of w's rows (type, row_bytes; no storage), and the upload of w's rows
  // into d's storage from row first_row.
  Result<DeviceWeight> device_layout(const WeightView& w) const;
  Status write_rows(const WeightView& w, const DeviceWeight& d, int64_t first_row);
  Status pointwise(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n, uint32_t op,
                   float s, uint32_t width = 0);

  uint32_t attention_splits(uint32_t n_tokens, uint32_t n_kv) const;
  // matvec.comp over all of w's rows (one token): rows below split1 into y (from its offset),
  // then those below split2 into y1 and the rest into y2, each from element 0.
  // flags: matvec.comp's NORM_X (x normalised with norm_weight and eps) and ADD_Y (y +=).
  Status matvec(device::Recorder& rec, const DeviceWeight& w, DeviceSpan x, DeviceSpan y, const device::Buffer& y1,
                const device::Buffer& y2, uint32_t split1, uint32_t split2, uint32_t flags = 0,
                const device::Buffer* norm_weight = nullptr, float eps = 0.0f);
  // kv_store and kv_store_pair: x's rows to K (values: to V); with v, v's rows to V as well.
  Status kv_rows(device::Recorder& rec, const device::Buffer& x, const device::Buffer* v, const device::Buffer& positions,
                 uint32_t first_token, uint32_t n_tokens, uint32_t row_elems, uint32_t v_elems, const DeviceKv& kv,
                 bool values);

  device::Context& ctx_;
  bool subgroups_ = false;
  bool tiled_ = true;
  bool matvec_ = true;
  uint32_t split_len_ = 256;
};

}  // namespace hearth::kernels::vulkan
