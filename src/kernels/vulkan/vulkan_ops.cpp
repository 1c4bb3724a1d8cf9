// Dispatch of the Vulkan compute shaders (see vulkan_ops.h): push-constant layouts that
// mirror the shaders' Push blocks, workgroup counts, and the upload of weights.
#include "kernels/vulkan/vulkan_ops.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/vulkan/shader_library.h"
#include "tensor/fp16.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace hearth::kernels::vulkan {

namespace {

constexpr uint32_t kMatmulTile = 4;       // tokens per workgroup, TILE in matmul.comp
constexpr uint32_t kTiledRows = 128;      // BM in matmul_tiled.comp
constexpr uint32_t kTiledTokens = 32;     // BN in matmul_tiled.comp
constexpr uint32_t kMatvecRows = 4;       // ROWS in matvec.comp: rows per team of subgroups
constexpr uint32_t kMatvecGroup = 256;    // local_size_x of matvec.comp
// Subgroups that keep a large GPU's memory busy (an H200 holds ~8,000): matrices with fewer row
// groups share them among teams (matvec_team).
constexpr uint32_t kMatvecBusySubgroups = 4096;
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
  uint32_t w_off, split1, split2;
};
struct MatvecPush {
  MatmulPush m;
  uint32_t team;  // subgroups sharing a row group
  uint32_t flags;
  float eps;
};
constexpr uint32_t kMatvecNormX = 1;  // NORM_X in matvec.comp
constexpr uint32_t kMatvecAddY = 2;   // ADD_Y
struct NormPush {
  uint32_t n, has_weight;
  float eps;
  uint32_t has_residual;
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
  uint32_t has_factors, n_heads2;
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
  uint32_t has_values, v_row_elems, v_region;
};

// Q4_0 and Q8_0 rows go to the device split: every block's quants, then every block's F16
// scale (weight_unit.glsl says why). The quant bytes of one block, 0 for the types kept whole.
size_t split_quant_bytes(DType t) {
  if (t == DType::kQ4_0) return sizeof(BlockQ4_0::qs);
  if (t == DType::kQ8_0) return sizeof(BlockQ8_0::qs);
  return 0;
}
void split_row(DType t, const uint8_t* src, uint8_t* dst, int64_t cols) {
  const size_t quant = split_quant_bytes(t);
  const size_t block = t == DType::kQ4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  const size_t quant_at = t == DType::kQ4_0 ? offsetof(BlockQ4_0, qs) : offsetof(BlockQ8_0, qs);
  const size_t scale_at = t == DType::kQ4_0 ? offsetof(BlockQ4_0, d) : offsetof(BlockQ8_0, d);
  const auto blocks = static_cast<size_t>(cols / kQK);
  for (size_t b = 0; b < blocks; ++b) {
    std::memcpy(dst + quant * b, src + block * b + quant_at, quant);
    std::memcpy(dst + quant * blocks + 2 * b, src + block * b + scale_at, 2);
  }
}

// Q6_K rows go to the device by 32-weight unit (weight_unit.glsl says why): every unit's low
// nibbles (16 bytes, byte j holding weights j and j + 16), then every unit's high bits (8 bytes,
// byte b holding weights b, b + 8, b + 16 and b + 24, two bits each), then every unit's two
// int8 scales, then every block's F16 d: 210 bytes a block, as in the file.
void q6k_unit_row(const uint8_t* src, uint8_t* dst, int64_t cols) {
  const auto blocks = static_cast<size_t>(cols / kQK_K);
  const size_t units = blocks * (kQK_K / kQK);
  uint8_t* lo = dst;
  uint8_t* hi = lo + 16 * units;
  uint8_t* sc = hi + 8 * units;
  uint8_t* ds = sc + 2 * units;
  for (size_t b = 0; b < blocks; ++b) {
    BlockQ6_K blk;
    std::memcpy(&blk, src + b * sizeof(BlockQ6_K), sizeof blk);
    uint8_t q[kQK_K];  // the block's 6-bit values in weight order
    for (size_t h = 0; h < 2; ++h) {
      const uint8_t* ql = blk.ql + 64 * h;
      const uint8_t* qh = blk.qh + 32 * h;
      for (size_t l = 0; l < 32; ++l) {
        q[128 * h + l] = static_cast<uint8_t>((ql[l] & 15) | ((qh[l] & 3) << 4));
        q[128 * h + l + 32] = static_cast<uint8_t>((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
        q[128 * h + l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
        q[128 * h + l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
      }
    }
    for (size_t j = 0; j < kQK_K / kQK; ++j) {
      const size_t u = b * (kQK_K / kQK) + j;
      const uint8_t* qu = q + kQK * j;
      for (size_t t = 0; t < 16; ++t) lo[16 * u + t] = static_cast<uint8_t>((qu[t] & 15) | ((qu[t + 16] & 15) << 4));
      for (size_t t = 0; t < 8; ++t) {
        hi[8 * u + t] = static_cast<uint8_t>((qu[t] >> 4) | ((qu[t + 8] >> 4) << 2) | ((qu[t + 16] >> 4) << 4) |
                                             ((qu[t + 24] >> 4) << 6));
      }
      std::memcpy(sc + 2 * u, blk.scales + 2 * j, 2);
    }
    std::memcpy(ds + 2 * b, &blk.d, 2);
  }
}

// Q4_K rows likewise: every unit's nibbles (16 bytes, byte j holding weights j and j + 16),
// then every block's 12 scale bytes as in the file, then every block's F16 d and dmin.
void q4k_unit_row(const uint8_t* src, uint8_t* dst, int64_t cols) {
  const auto blocks = static_cast<size_t>(cols / kQK_K);
  const size_t units = blocks * (kQK_K / kQK);
  uint8_t* nibbles = dst;
  uint8_t* scales = nibbles + 16 * units;
  uint8_t* ds = scales + sizeof(BlockQ4_K::scales) * blocks;
  for (size_t b = 0; b < blocks; ++b) {
    BlockQ4_K blk;
    std::memcpy(&blk, src + b * sizeof(BlockQ4_K), sizeof blk);
    for (size_t j = 0; j < kQK_K / kQK; ++j) {
      // Unit j holds the low (j even) or high nibbles of the 32 bytes at 32 * (j / 2).
      const uint8_t* q = blk.qs + 32 * (j / 2);
      const int shift = (j % 2) * 4;
      uint8_t* out = nibbles + 16 * (b * (kQK_K / kQK) + j);
      for (size_t t = 0; t < 16; ++t) {
        out[t] = static_cast<uint8_t>(((q[t] >> shift) & 15) | (((q[t + 16] >> shift) & 15) << 4));
      }
    }
    std::memcpy(scales + sizeof(BlockQ4_K::scales) * b, blk.scales, sizeof blk.scales);
    std::memcpy(ds + 4 * b, &blk.d, 2);
    std::memcpy(ds + 4 * b + 2, &blk.dmin, 2);
  }
}

// Whether rows of this type are rearranged on upload, and the rearrangement.
bool rearranged(DType t) { return split_quant_bytes(t) != 0 || t == DType::kQ6_K || t == DType::kQ4_K; }
void rearrange_row(DType t, const uint8_t* src, uint8_t* dst, int64_t cols) {
  if (t == DType::kQ6_K) {
    q6k_unit_row(src, dst, cols);
  } else if (t == DType::kQ4_K) {
    q4k_unit_row(src, dst, cols);
  } else {
    split_row(t, src, dst, cols);
  }
}

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

DeviceWeight DeviceWeight::row_range(int64_t first, int64_t count) const {
  DeviceWeight d = *this;
  d.rows = count;
  d.byte_offset = byte_offset + static_cast<size_t>(first) * row_bytes;
  return d;
}

Result<DeviceWeight> VulkanOps::device_layout(const WeightView& w) const {
  if (w.interleaved) return make_error(ErrorKind::kInvalidArgument, "upload_weight: interleaved weights (use GGUF rows)");
  DeviceWeight d;
  d.source_type = w.type;
  d.cols = w.cols;
  if (native_weight_type(w.type) && !(w.type == DType::kF16 && w.row_bytes % 4 != 0)) {
    d.type = w.type;
    d.row_bytes = w.row_bytes;
    return d;
  }
  // The F32/F16 shaders index rows by 32-bit words: an odd-width F16 matrix goes as F32, and so
  // do other types of odd width; the rest are dequantised to F16.
  if (!native_weight_type(w.type) && !dtype_convertible(w.type)) {
    return make_error(ErrorKind::kUnsupported, "no device path for weights of type " + std::string(dtype_name(w.type)));
  }
  const bool as_f32 = native_weight_type(w.type) || w.cols % 2 != 0;
  d.type = as_f32 ? DType::kF32 : DType::kF16;
  d.row_bytes = static_cast<size_t>(w.cols) * (as_f32 ? 4 : 2);
  return d;
}

Status VulkanOps::write_rows(const WeightView& w, const DeviceWeight& d, int64_t first_row) {
  const size_t at = d.byte_offset + static_cast<size_t>(first_row) * d.row_bytes;
  const bool split = d.type == w.type && rearranged(d.type);
  if (d.type == w.type && !split) return ctx_.upload(*d.storage, at, w.data, w.row_bytes * static_cast<size_t>(w.rows));
  // Split or converted row by row, in pieces of ~4 MiB (so the host copy stays small).
  const size_t elem = d.type == DType::kF32 ? 4 : 2;
  const int64_t rows_per_piece = std::max<int64_t>(1, (int64_t{4} << 20) / static_cast<int64_t>(d.row_bytes));
  std::vector<float> row(static_cast<size_t>(w.cols));
  std::vector<uint8_t> piece;
  for (int64_t r0 = 0; r0 < w.rows; r0 += rows_per_piece) {
    const int64_t r1 = std::min(w.rows, r0 + rows_per_piece);
    piece.resize(static_cast<size_t>(r1 - r0) * d.row_bytes);
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* src = w.data + static_cast<size_t>(r) * w.row_bytes;
      uint8_t* out = piece.data() + static_cast<size_t>(r - r0) * d.row_bytes;
      if (split) {
        rearrange_row(d.type, src, out, w.cols);
        continue;
      }
      HEARTH_TRY(dequantize_row(w.type, src, row.data(), w.cols));
      if (elem == 4) {
        std::memcpy(out, row.data(), d.row_bytes);
      } else {
        for (int64_t c = 0; c < w.cols; ++c) {
          const uint16_t h = fp32_to_fp16(row[static_cast<size_t>(c)]);
          std::memcpy(out + 2 * c, &h, 2);
        }
      }
    }
    HEARTH_TRY(ctx_.upload(*d.storage, at + static_cast<size_t>(r0) * d.row_bytes, piece.data(), piece.size()));
  }
  return ok_status();
}

Result<DeviceWeight> VulkanOps::upload_weight(const WeightView& w) { return upload_weights({&w, 1}); }

bool VulkanOps::can_store_together(std::span<const WeightView> parts) const {
  if (parts.empty()) return false;
  const auto first = device_layout(parts[0]);
  if (!first.ok()) return false;
  for (const WeightView& w : parts) {
    const auto l = device_layout(w);
    if (!l.ok() || l->type != first->type || l->source_type != first->source_type || l->cols != first->cols) return false;
  }
  return true;
}

Result<DeviceWeight> VulkanOps::upload_weights(std::span<const WeightView> parts) {
  if (parts.empty()) return make_error(ErrorKind::kInvalidArgument, "upload_weights: no matrices");
  HEARTH_ASSIGN(DeviceWeight d, device_layout(parts[0]));
  // A part with no device layout says why (its own error), before the parts are compared.
  for (const WeightView& w : parts) {
    if (auto l = device_layout(w); !l.ok()) return l.error();
  }
  if (!can_store_together(parts)) {
    return make_error(ErrorKind::kInvalidArgument, "upload_weights: matrices of different types or widths");
  }
  int64_t rows = 0;
  for (const WeightView& w : parts) rows += w.rows;
  // The shaders address weight bytes with 32-bit offsets.
  if (d.row_bytes * static_cast<size_t>(rows) > 0xFFFFFFFFu) {
    return make_error(ErrorKind::kUnsupported, "upload_weights: more than 4 GiB of weights in one matrix");
  }
  d.rows = rows;
  auto buf = ctx_.alloc(std::max<size_t>(d.row_bytes * static_cast<size_t>(rows), 4));
  if (!buf.ok()) return buf.error();
  d.storage = std::make_shared<device::Buffer>(std::move(*buf));
  int64_t first = 0;
  for (const WeightView& w : parts) {
    HEARTH_TRY(write_rows(w, d, first));
    first += w.rows;
  }
  return d;
}

// Workgroups for `rows` rows at per_group a workgroup: rows beyond 65535 workgroups go on in
// z (the shaders skip the excess).
static void row_groups(uint32_t rows, uint32_t per_group, uint32_t* gx, uint32_t* gz) {
  const uint32_t groups = (rows + per_group - 1) / per_group;
  *gx = std::max(std::min(groups, kMaxGroupsX), 1u);
  *gz = std::max((groups + *gx - 1) / *gx, 1u);
}

Status VulkanOps::matmul(device::Recorder& rec, const DeviceWeight& w, DeviceSpan x, uint32_t x_stride, uint32_t n_tokens,
                         DeviceSpan y, uint32_t y_stride) {
  const char* name = matmul_shader(w.type);
  if (name == nullptr) return make_error(ErrorKind::kInternal, "device weight of a type with no shader");
  if (!w.valid()) return make_error(ErrorKind::kInvalidArgument, "device matmul: no weights");
  const auto rows = static_cast<uint32_t>(w.rows);
  // One token: several rows per subgroup sharing the inputs (matvec.comp), every row into y.
  if (use_matvec() && n_tokens == 1) return matvec(rec, w, x, y, *y.buffer, *y.buffer, rows, rows);
  // The kernel for the batch size, its rows per workgroup and its token tiles (dispatch y).
  std::string shader = name;
  bool reduces = true;
  uint32_t per_group = matmul_rows_per_group();
  uint32_t token_tiles = (n_tokens + kMatmulTile - 1) / kMatmulTile;
  if (tiled_ && n_tokens > kMatmulTile && (rows + kTiledRows - 1) / kTiledRows <= kMaxGroupsX) {
    // A batch: shared-memory tiles, each weight decoded once per kTiledTokens tokens (only
    // chosen when its groups fit in x).
    shader = "matmul_tiled_" + std::string(name).substr(std::string_view("matmul_").size());
    reduces = false;
    per_group = kTiledRows;
    token_tiles = (n_tokens + kTiledTokens - 1) / kTiledTokens;
  }
  auto p = pipeline(shader, reduces, 3, sizeof(MatmulPush));
  if (!p.ok()) return p.error();
  MatmulPush push{static_cast<uint32_t>(w.cols), rows, n_tokens, static_cast<uint32_t>(w.row_bytes),
                  x.offset, x_stride, y.offset, y_stride, per_group, static_cast<uint32_t>(w.byte_offset), rows, rows};
  uint32_t gx = 0, gz = 0;
  row_groups(rows, per_group, &gx, &gz);
  return rec.dispatch(**p, {{w.storage.get()}, {x.buffer}, {y.buffer, 0, 0, true}}, &push, sizeof push, gx, token_tiles,
                      gz);
}

Status VulkanOps::matvec_split(device::Recorder& rec, const DeviceWeight& w, DeviceSpan x,
                               std::span<const RowsInto> parts, const device::Buffer* norm_weight, float eps) {
  if (!fused_matvec(w) || !w.valid() || parts.empty() || parts.size() > 3) {
    return make_error(ErrorKind::kInvalidArgument, "device matvec_split: needs matvec kernels and 1 to 3 outputs");
  }
  uint32_t total = 0;
  for (const RowsInto& r : parts) total += r.count;
  if (total != static_cast<uint64_t>(w.rows)) {
    return make_error(ErrorKind::kInvalidArgument, "device matvec_split: the outputs' rows do not add up to the matrix's");
  }
  const uint32_t split1 = parts[0].count;
  const uint32_t split2 = parts.size() > 1 ? split1 + parts[1].count : total;
  const auto out = [&](size_t i) -> const device::Buffer& { return *parts[std::min(i, parts.size() - 1)].y; };
  return matvec(rec, w, x, {&out(0), 0}, out(1), out(2), split1, split2, norm_weight != nullptr ? kMatvecNormX : 0,
                norm_weight, eps);
}

Status VulkanOps::matvec_add(device::Recorder& rec, const DeviceWeight& w, DeviceSpan x, const device::Buffer& y) {
  if (!fused_matvec(w) || !w.valid()) {
    return make_error(ErrorKind::kInvalidArgument, "device matvec_add: needs matvec kernels");
  }
  const auto rows = static_cast<uint32_t>(w.rows);
  return matvec(rec, w, x, {&y, 0}, y, y, rows, rows, kMatvecAddY);
}

Status VulkanOps::matvec(device::Recorder& rec, const DeviceWeight& w, DeviceSpan x, DeviceSpan y,
                         const device::Buffer& y1, const device::Buffer& y2, uint32_t split1, uint32_t split2,
                         uint32_t flags, const device::Buffer* norm_weight, float eps) {
  std::string shader = matmul_shader(w.type);  // matmul_<type> -> matvec_<type>
  shader.replace(0, std::string_view("matmul").size(), "matvec");
  auto p = pipeline(shader, false, 6, sizeof(MatvecPush));
  if (!p.ok()) return p.error();
  const auto rows = static_cast<uint32_t>(w.rows);
  const uint32_t sg = ctx_.info().subgroup_size;
  const uint32_t team = matvec_team(static_cast<uint32_t>(w.cols), rows, sg);
  const uint32_t per_group = kMatvecRows * (kMatvecGroup / sg / team);
  MatvecPush push{{static_cast<uint32_t>(w.cols), rows, 1, static_cast<uint32_t>(w.row_bytes), x.offset, 0, y.offset,
                   0, per_group, static_cast<uint32_t>(w.byte_offset), split1, split2},
                  team, flags, eps};
  uint32_t gx = 0, gz = 0;
  row_groups(rows, per_group, &gx, &gz);
  const device::Buffer* nw = norm_weight != nullptr ? norm_weight : x.buffer;
  return rec.dispatch(
      **p, {{w.storage.get()}, {x.buffer}, {y.buffer, 0, 0, true}, {&y1, 0, 0, true}, {&y2, 0, 0, true}, {nw}}, &push,
      sizeof push, gx, 1, gz);
}

uint32_t matvec_team(uint32_t cols, uint32_t rows, uint32_t subgroup_size) {
  const uint32_t units = (cols + 31) / 32;
  const uint32_t most = std::max(kMatvecGroup / std::max(subgroup_size, 1u), 1u);
  const uint32_t row_groups = (rows + kMatvecRows - 1) / kMatvecRows;
  uint32_t team = 1;
  while (team * 2 <= most && team * 2 * subgroup_size <= units && row_groups * team < kMatvecBusySubgroups) team *= 2;
  return team;
}

uint32_t VulkanOps::matmul_rows_per_group() const {
  // One subgroup per row: as many rows as a workgroup of kReduceGroup invocations has subgroups.
  return subgroups_ ? kReduceGroup / ctx_.info().subgroup_size : 1;
}

Status VulkanOps::rms_norm(device::Recorder& rec, const device::Buffer& x, const device::Buffer* weight,
                           const device::Buffer& y, uint32_t n, uint32_t n_rows, float eps,
                           const device::Buffer* residual) {
  if (residual != nullptr && &x == &y) {
    return make_error(ErrorKind::kInvalidArgument, "device rms_norm: a residual add needs y apart from x");
  }
  auto p = pipeline("rms_norm", true, 4, sizeof(NormPush));
  if (!p.ok()) return p.error();
  NormPush push{n, weight != nullptr ? 1u : 0u, eps, residual != nullptr ? 1u : 0u};
  return rec.dispatch(**p,
                      {{&x, 0, 0, residual != nullptr}, {weight != nullptr ? weight : &x}, {&y, 0, 0, true},
                       {residual != nullptr ? residual : &x}},
                      &push, sizeof push, n_rows);
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
Status VulkanOps::silu_mul(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n) {
  return pointwise(rec, y, x, n, 6, 0.0f);
}
Status VulkanOps::gelu_mul(device::Recorder& rec, const device::Buffer& y, const device::Buffer& x, uint32_t n) {
  return pointwise(rec, y, x, n, 7, 0.0f);
}

Status VulkanOps::rope(device::Recorder& rec, const device::Buffer& x, const device::Buffer& positions, uint32_t n_tokens,
                       uint32_t n_heads, uint32_t head_dim, const RopeParams& rp, const device::Buffer* freq_factors,
                       const device::Buffer* x2, uint32_t n_heads2) {
  if (x2 == nullptr) n_heads2 = 0;
  if (x2 == &x) return make_error(ErrorKind::kInvalidArgument, "device rope: the second rows must be another buffer");
  if (rp.freq_factors != nullptr && freq_factors == nullptr) {
    return make_error(ErrorKind::kInvalidArgument, "device rope: frequency factors must be in a device buffer");
  }
  if (rp.rope_dims <= 0 || static_cast<uint32_t>(rp.rope_dims) > head_dim || rp.rope_dims % 2 != 0) {
    return make_error(ErrorKind::kInvalidArgument, "device rope: rope_dims must be even and at most head_dim");
  }
  if (freq_factors != nullptr && freq_factors->bytes() < static_cast<size_t>(rp.rope_dims / 2) * sizeof(float)) {
    return make_error(ErrorKind::kInvalidArgument, "device rope: fewer frequency factors than rotated pairs");
  }
  auto p = pipeline("rope", false, 4, sizeof(RopePush));
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
                n_heads2};
  const uint32_t pairs = static_cast<uint32_t>(rp.rope_dims) / 2;
  const device::BufferRange second = x2 != nullptr ? device::BufferRange{x2, 0, 0, true} : device::BufferRange{&positions};
  return rec.dispatch(**p, {{&x, 0, 0, true}, {&positions}, {freq_factors != nullptr ? freq_factors : &positions}, second},
                      &push, sizeof push, (pairs + 63) / 64, n_heads + n_heads2, n_tokens);
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
  return kv_rows(rec, x, nullptr, positions, first_token, n_tokens, row_elems, 0, kv, values);
}

Status VulkanOps::kv_store_pair(device::Recorder& rec, const device::Buffer& k, const device::Buffer& v,
                                const device::Buffer& positions, uint32_t first_token, uint32_t n_tokens,
                                uint32_t k_elems, uint32_t v_elems, const DeviceKv& kv) {
  return kv_rows(rec, k, &v, positions, first_token, n_tokens, k_elems, v_elems, kv, false);
}

Status VulkanOps::kv_rows(device::Recorder& rec, const device::Buffer& x, const device::Buffer* v,
                          const device::Buffer& positions, uint32_t first_token, uint32_t n_tokens, uint32_t row_elems,
                          uint32_t v_elems, const DeviceKv& kv, bool values) {
  if (row_elems % 2 != 0 || v_elems % 2 != 0 || !kv_ok(kv)) {
    return make_error(ErrorKind::kInvalidArgument, "device kv_store: odd row or no block table");
  }
  auto p = pipeline("kv_store", false, 5, sizeof(KvStorePush));
  if (!p.ok()) return p.error();
  KvStorePush push{row_elems,     kv.block_tokens, first_token,  kv.table_offset, kv.blocks_per_chunk,
                   values ? kv.v_word : kv.k_word, kv.slot_words, v != nullptr ? 1u : 0u, v_elems, kv.v_word};
  // The rows go to chunk memory reached through the addresses in kv.chunks: that binding
  // stands for the write (the Recorder orders by bindings).
  const uint32_t widest = std::max(row_elems, v_elems);
  return rec.dispatch(**p, {{&x}, {kv.chunks, 0, 0, true}, {kv.table}, {&positions}, {v != nullptr ? v : &x}}, &push,
                      sizeof push, (widest / 2 + 63) / 64, n_tokens, v != nullptr ? 2u : 1u);
}

}  // namespace hearth::kernels::vulkan
