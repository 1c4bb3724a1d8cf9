// Dispatch of the Vulkan compute shaders (see vulkan_ops.h): push-constant layouts that
// mirror the shaders' Push blocks, workgroup counts, and the upload of weights.
#include "kernels/vulkan/vulkan_ops.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/vulkan/shader_library.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace hearth::kernels::vulkan {

namespace {

constexpr uint32_t kMatmulTile = 4;       // tokens per workgroup, TILE in matmul.comp
constexpr uint32_t kTiledRows = 128;      // BM in matmul_tiled.comp
constexpr uint32_t kTiledTokens = 32;     // BN in matmul_tiled.comp
constexpr uint32_t kMatvecRows = 4;       // ROWS in matvec.comp: rows per subgroup
constexpr uint32_t kPointwiseGroup = 256;  // local_size_x of pointwise.comp
constexpr uint32_t kMaxGroupsX = 65535;
constexpr uint32_t kReduceGroup = 64;      // local_size_x of the reducing shaders, WG in reduce.glsl

const char* matmul_shader(DType t) {
  switch (t) {
    case DType::kF32: return "matmul_f32";
    case DType::kF16: return "matmul_f16";
    case DType::kQ8_0: return "matmul_q8_0";
    case DType::kQ4_0: return "matmul_q4_0";
    case DType::kQ4_K: return "matmul_q4_k";
    case DType::kQ6_K: return "matmul_q6_k";
    default: return nullptr;
  }
}

struct MatmulPush {
  uint32_t cols, rows, n_tokens, row_bytes, x_off, x_stride, y_off, y_stride;
  uint32_t rows_per_group;
};
struct NormPush {
  uint32_t n, has_weight;
  float eps;
  uint32_t pad;
};
struct PointwisePush {
  uint32_t n, op;
  float s;
  uint32_t width;  // add_rows' row width
};
struct RopePush {
  uint32_t n_heads, head_dim, rope_dims, style;
  float freq_base, freq_scale, ext_factor, mscale;
  float corr_low, corr_high;
  uint32_t has_factors, pad;
};
struct AttentionPush {
  uint32_t n_head, n_head_kv, head_dim_k, head_dim_v, block_tokens, n_kv, causal, window;
  float scale, softcap;
  uint32_t scores_stride, tok_base, table_off, blocks_per_chunk;
  uint32_t k_word, v_word;
  uint32_t n_splits, split_len;
  uint32_t slot_words;
};
struct AttentionMergePush {
  uint32_t n_head, head_dim_v, n_splits, tok_base;
};
struct KvStorePush {
  uint32_t row_elems, block_tokens, tok_base, table_off, blocks_per_chunk, region, slot_words;
};

bool kv_ok(const DeviceKv& kv) {
  return kv.chunks != nullptr && kv.table != nullptr && kv.block_tokens != 0 && kv.blocks_per_chunk != 0 &&
         kv.slot_words != 0;
}

}  // namespace

bool native_weight_type(DType type) { return matmul_shader(type) != nullptr; }

VulkanOps::VulkanOps(device::Context& ctx) : ctx_(ctx) {
  const char* env = std::getenv("HEARTH_VULKAN_SUBGROUPS");
  set_use_subgroups(env == nullptr || std::string_view(env) != "0");
  const char* tiled = std::getenv("HEARTH_VULKAN_TILED");
  tiled_ = tiled == nullptr || std::string_view(tiled) != "0";
  const char* matvec = std::getenv("HEARTH_VULKAN_MATVEC");
  matvec_ = matvec == nullptr || std::string_view(matvec) != "0";
}

void VulkanOps::set_use_subgroups(bool on) {
  // A power-of-two size up to the 64 invocations of a reducing workgroup: its subgroups tile it.
  const device::DeviceInfo& d = ctx_.info();
  const bool usable = d.subgroup_arithmetic && d.subgroup_size >= 4 && d.subgroup_size <= kReduceGroup &&
                      (d.subgroup_size & (d.subgroup_size - 1)) == 0;
  subgroups_ = on && usable;
}

Result<const device::Pipeline*> VulkanOps::pipeline(std::string_view name, bool reduces, uint32_t buffers,
                                                     uint32_t push_bytes) {
  std::string full(name);
  if (reduces && subgroups_) full += "_sg";
  std::span<const uint32_t> words = find_shader(full);
  if (words.empty()) return make_error(ErrorKind::kUnsupported, "no embedded shader " + full);
  return ctx_.pipeline(device::PipelineSpec{full, words, buffers, push_bytes});
}

Result<DeviceWeight> VulkanOps::upload_weight(const WeightView& w) {
  if (w.interleaved) return make_error(ErrorKind::kInvalidArgument, "upload_weight: interleaved weights (use GGUF rows)");
  DeviceWeight d;
  d.source_type = w.type;
  d.cols = w.cols;
  d.rows = w.rows;
  if (native_weight_type(w.type)) {
    d.type = w.type;
    d.row_bytes = w.row_bytes;
    if (w.type == DType::kF16 && w.row_bytes % 4 != 0) {
      // The F32/F16 shaders index rows by 32-bit words: an odd-width F16 matrix goes as F32.
      return upload_as_f32(w, std::move(d));
    }
    auto buf = ctx_.alloc(w.row_bytes * static_cast<size_t>(w.rows));
    if (!buf.ok()) return buf.error();
    d.buffer = std::move(*buf);
    if (Status s = ctx_.upload(d.buffer, 0, w.data, w.row_bytes * static_cast<size_t>(w.rows)); !s.ok()) return s.error();
    return d;
  }
  // Dequantise row by row to F16 (in pieces, so the host copy stays small).
  if (!dtype_convertible(w.type)) {
    return make_error(ErrorKind::kUnsupported, "no device path for weights of type " + std::string(dtype_name(w.type)));
  }
  if (w.cols % 2 != 0) return upload_as_f32(w, std::move(d));
  d.type = DType::kF16;
  d.row_bytes = static_cast<size_t>(w.cols) * 2;
  auto buf = ctx_.alloc(d.row_bytes * static_cast<size_t>(w.rows));
  if (!buf.ok()) return buf.error();
  d.buffer = std::move(*buf);
  const int64_t rows_per_piece = std::max<int64_t>(1, (int64_t{4} << 20) / static_cast<int64_t>(d.row_bytes));
  std::vector<float> row(static_cast<size_t>(w.cols));
  std::vector<uint16_t> half;
  for (int64_t r0 = 0; r0 < w.rows; r0 += rows_per_piece) {
    const int64_t r1 = std::min(w.rows, r0 + rows_per_piece);
    half.resize(static_cast<size_t>((r1 - r0) * w.cols));
    for (int64_t r = r0; r < r1; ++r) {
      if (Status s = dequantize_row(w.type, w.data + static_cast<size_t>(r) * w.row_bytes, row.data(), w.cols); !s.ok()) {
        return s.error();
      }
      for (int64_t c = 0; c < w.cols; ++c) half[static_cast<size_t>((r - r0) * w.cols + c)] = fp32_to_fp16(row[static_cast<size_t>(c)]);
    }
    if (Status s = ctx_.upload(d.buffer, static_cast<size_t>(r0) * d.row_bytes, half.data(), half.size() * 2); !s.ok()) {
      return s.error();
    }
  }
  return d;
}

Result<DeviceWeight> VulkanOps::upload_as_f32(const WeightView& w, DeviceWeight d) {
  d.type = DType::kF32;
  d.row_bytes = static_cast<size_t>(w.cols) * 4;
  auto buf = ctx_.alloc(d.row_bytes * static_cast<size_t>(w.rows));
  if (!buf.ok()) return buf.error();
  d.buffer = std::move(*buf);
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    if (Status s = dequantize_row(w.type, w.data + static_cast<size_t>(r) * w.row_bytes, row.data(), w.cols); !s.ok()) {
      return s.error();
    }
    if (Status s = ctx_.upload(d.buffer, static_cast<size_t>(r) * d.row_bytes, row.data(), d.row_bytes); !s.ok()) {
      return s.error();
    }
  }
  return d;
}

Status VulkanOps::matmul(device::Recorder& rec, const DeviceWeight& w, DeviceSpan x, uint32_t x_stride, uint32_t n_tokens,
                         DeviceSpan y, uint32_t y_stride) {
  const char* name = matmul_shader(w.type);
  if (name == nullptr) return make_error(ErrorKind::kInternal, "device weight of a type with no shader");
  const auto rows = static_cast<uint32_t>(w.rows);
  const std::string type = std::string(name).substr(std::string_view("matmul_").size());
  // The kernel for the batch size, its rows per workgroup and its token tiles (dispatch y).
  std::string shader = name;
  bool reduces = true;
  uint32_t per_group = matmul_rows_per_group();
  uint32_t token_tiles = (n_tokens + kMatmulTile - 1) / kMatmulTile;
  if (tiled_ && n_tokens > kMatmulTile && (rows + kTiledRows - 1) / kTiledRows <= kMaxGroupsX) {
    // A batch: shared-memory tiles, each weight decoded once per kTiledTokens tokens.
    shader = "matmul_tiled_" + type;
    reduces = false;
    per_group = kTiledRows;
    token_tiles = (n_tokens + kTiledTokens - 1) / kTiledTokens;
  } else if (matvec_ && subgroups_ && n_tokens == 1) {
    // One token: several rows per subgroup sharing the inputs (matvec.comp).
    shader = "matvec_" + type;
    reduces = false;
    per_group = kMatvecRows * (kReduceGroup / ctx_.info().subgroup_size);
  }
  auto p = pipeline(shader, reduces, 3, sizeof(MatmulPush));
  if (!p.ok()) return p.error();
  MatmulPush push{static_cast<uint32_t>(w.cols), rows, n_tokens, static_cast<uint32_t>(w.row_bytes),
                  x.offset, x_stride, y.offset, y_stride, per_group};
  // Groups of rows beyond 65535 workgroups go on in z (the shaders skip the excess; the tiled
  // kernel is only chosen when its groups fit in x).
  const uint32_t groups = (rows + per_group - 1) / per_group;
  const uint32_t gx = std::max(std::min(groups, kMaxGroupsX), 1u);
  const uint32_t gz = (groups + gx - 1) / gx;
  return rec.dispatch(**p, {{&w.buffer}, {x.buffer}, {y.buffer, 0, 0, true}}, &push, sizeof push, gx, token_tiles,
                      std::max(gz, 1u));
}

uint32_t VulkanOps::matmul_rows_per_group() const {
  // One subgroup per row: as many rows as a workgroup of kReduceGroup invocations has subgroups.
  return subgroups_ ? kReduceGroup / ctx_.info().subgroup_size : 1;
}

Status VulkanOps::rms_norm(device::Recorder& rec, const device::Buffer& x, const device::Buffer* weight,
                           const device::Buffer& y, uint32_t n, uint32_t n_rows, float eps) {
  auto p = pipeline("rms_norm", true, 3, sizeof(NormPush));
  if (!p.ok()) return p.error();
  NormPush push{n, weight != nullptr ? 1u : 0u, eps, 0};
  return rec.dispatch(**p, {{&x}, {weight != nullptr ? weight : &x}, {&y, 0, 0, true}}, &push, sizeof push, n_rows);
}

Status VulkanOps::softmax(device::Recorder& rec, const device::Buffer& x, uint32_t n, uint32_t n_rows) {
  auto p = pipeline("softmax", true, 1, sizeof(uint32_t));
  if (!p.ok()) return p.error();
  return rec.dispatch(**p, {{&x, 0, 0, true}}, &n, sizeof n, n_rows);
}

Status VulkanOps::pointwise(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n,
                            uint32_t op, float s, uint32_t width) {
  auto p = pipeline("pointwise", false, 2, sizeof(PointwisePush));
  if (!p.ok()) return p.error();
  PointwisePush push{n, op, s, width};
  const uint32_t groups = (n + kPointwiseGroup - 1) / kPointwiseGroup;
  const uint32_t gx = std::min(groups, kMaxGroupsX);
  const uint32_t gy = (groups + gx - 1) / std::max(gx, 1u);
  return rec.dispatch(**p, {{&y, 0, 0, true}, {&x}}, &push, sizeof push, std::max(gx, 1u), std::max(gy, 1u));
}

Status VulkanOps::add(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n) {
  return pointwise(rec, y, x, n, 0, 0.0f);
}
Status VulkanOps::add_rows(device::Recorder& rec, const device::Buffer& y, const device::Buffer& row, uint32_t width,
                           uint32_t n_rows) {
  if (width == 0) return make_error(ErrorKind::kInvalidArgument, "add_rows: empty rows");
  return pointwise(rec, y, row, width * n_rows, 5, 0.0f, width);
}
Status VulkanOps::mul(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n) {
  return pointwise(rec, y, x, n, 1, 0.0f);
}
Status VulkanOps::scale(device::Recorder& rec, const device::Buffer& y, float s, uint32_t n) {
  return pointwise(rec, y, y, n, 2, s);
}
Status VulkanOps::silu(device::Recorder& rec, const device::Buffer& y, uint32_t n) { return pointwise(rec, y, y, n, 3, 0.0f); }
Status VulkanOps::gelu(device::Recorder& rec, const device::Buffer& y, uint32_t n) { return pointwise(rec, y, y, n, 4, 0.0f); }

Status VulkanOps::rope(device::Recorder& rec, const device::Buffer& x, const device::Buffer& positions, uint32_t n_tokens,
                       uint32_t n_heads, uint32_t head_dim, const RopeParams& rp, const device::Buffer* freq_factors) {
  if (rp.freq_factors != nullptr && freq_factors == nullptr) {
    return make_error(ErrorKind::kInvalidArgument, "device rope: frequency factors must be in a device buffer");
  }
  if (rp.rope_dims <= 0 || static_cast<uint32_t>(rp.rope_dims) > head_dim || rp.rope_dims % 2 != 0) {
    return make_error(ErrorKind::kInvalidArgument, "device rope: rope_dims must be even and at most head_dim");
  }
  if (freq_factors != nullptr && freq_factors->bytes() < static_cast<size_t>(rp.rope_dims / 2) * sizeof(float)) {
    return make_error(ErrorKind::kInvalidArgument, "device rope: fewer frequency factors than rotated pairs");
  }
  auto p = pipeline("rope", false, 3, sizeof(RopePush));
  if (!p.ok()) return p.error();
  float low = 0.0f, high = 0.0f;
  rope_yarn_corr_dims(rp.rope_dims, rp, &low, &high);
  RopePush push{n_heads,
                head_dim,
                static_cast<uint32_t>(rp.rope_dims),
                rp.style == RopeStyle::kNeox ? 1u : 0u,
                rp.freq_base,
                rp.freq_scale,
                rp.ext_factor,
                rope_yarn_mscale(rp),
                low,
                high,
                freq_factors != nullptr ? 1u : 0u,
                0};
  const uint32_t pairs = static_cast<uint32_t>(rp.rope_dims) / 2;
  return rec.dispatch(**p, {{&x, 0, 0, true}, {&positions}, {freq_factors != nullptr ? freq_factors : &positions}},
                      &push, sizeof push, (pairs + 63) / 64, n_heads, n_tokens);
}

uint32_t VulkanOps::attention_splits(uint32_t n_tokens, uint32_t n_kv) const {
  if (n_tokens > kMaxSplitTokens || split_len_ == 0 || n_kv <= 2 * split_len_) return 1;
  return (n_kv + split_len_ - 1) / split_len_;
}

size_t VulkanOps::attention_partial_floats(uint32_t n_tokens, uint32_t n_kv, const AttentionParams& ap) const {
  const uint32_t splits = attention_splits(n_tokens, n_kv);
  if (splits <= 1) return 0;
  return size_t{n_tokens} * static_cast<size_t>(ap.n_head) * splits * static_cast<size_t>(ap.head_dim_v + 2);
}

Status VulkanOps::attention(device::Recorder& rec, const device::Buffer& q, const device::Buffer& positions,
                            uint32_t first_token, uint32_t n_tokens, const DeviceKv& kv, uint32_t n_kv,
                            const AttentionParams& ap, const device::Buffer& scores, const device::Buffer& out,
                            const device::Buffer* partials) {
  if (ap.n_head_kv <= 0 || ap.n_head % ap.n_head_kv != 0 || !kv_ok(kv)) {
    return make_error(ErrorKind::kInvalidArgument, "device attention: bad head counts or KV");
  }
  if (scores.bytes() < size_t{first_token + n_tokens} * static_cast<size_t>(ap.n_head) * n_kv * sizeof(float)) {
    return make_error(ErrorKind::kInvalidArgument, "device attention: scores scratch too small");
  }
  auto p = pipeline("attention", true, 7, sizeof(AttentionPush));
  if (!p.ok()) return p.error();
  // A decode step over a long sequence splits its keys over several workgroups when there is
  // room for the partial results.
  const size_t part_floats = attention_partial_floats(n_tokens, n_kv, ap);
  const bool split = part_floats > 0 && partials != nullptr && partials->bytes() >= part_floats * sizeof(float);
  const uint32_t splits = split ? attention_splits(n_tokens, n_kv) : 1;
  AttentionPush push{static_cast<uint32_t>(ap.n_head), static_cast<uint32_t>(ap.n_head_kv),
                     static_cast<uint32_t>(ap.head_dim_k), static_cast<uint32_t>(ap.head_dim_v), kv.block_tokens, n_kv,
                     ap.causal ? 1u : 0u, static_cast<uint32_t>(std::max(ap.window, 0)), ap.scale, ap.softcap,
                     std::max(n_kv, 1u), first_token, kv.table_offset, kv.blocks_per_chunk, kv.k_word, kv.v_word,
                     splits, split_len_, kv.slot_words};
  // Unsplit, the partials binding is never written: `out` stands in.
  const device::BufferRange part = split ? device::BufferRange{partials, 0, 0, true} : device::BufferRange{&out};
  HEARTH_TRY(rec.dispatch(**p, {{&q}, {kv.chunks}, {kv.table}, {&positions}, {&scores, 0, 0, true}, {&out, 0, 0, true}, part},
                          &push, sizeof push, static_cast<uint32_t>(ap.n_head), n_tokens, splits));
  if (!split) return ok_status();
  auto m = pipeline("attention_merge", false, 2, sizeof(AttentionMergePush));
  if (!m.ok()) return m.error();
  AttentionMergePush mp{static_cast<uint32_t>(ap.n_head), static_cast<uint32_t>(ap.head_dim_v), splits, first_token};
  return rec.dispatch(**m, {{partials}, {&out, 0, 0, true}}, &mp, sizeof mp, static_cast<uint32_t>(ap.n_head), n_tokens);
}

Status VulkanOps::kv_store(device::Recorder& rec, const device::Buffer& x, const device::Buffer& positions,
                           uint32_t first_token, uint32_t n_tokens, uint32_t row_elems, const DeviceKv& kv,
                           bool values) {
  if (row_elems % 2 != 0 || !kv_ok(kv)) {
    return make_error(ErrorKind::kInvalidArgument, "device kv_store: odd row or no block table");
  }
  auto p = pipeline("kv_store", false, 4, sizeof(KvStorePush));
  if (!p.ok()) return p.error();
  KvStorePush push{row_elems, kv.block_tokens, first_token, kv.table_offset, kv.blocks_per_chunk,
                   values ? kv.v_word : kv.k_word, kv.slot_words};
  // The rows go to chunk memory reached through the addresses in kv.chunks: that binding
  // stands for the write (the Recorder orders by bindings).
  return rec.dispatch(**p, {{&x}, {kv.chunks, 0, 0, true}, {kv.table}, {&positions}}, &push, sizeof push, (row_elems / 2 + 63) / 64,
                      n_tokens);
}

}  // namespace hearth::kernels::vulkan
