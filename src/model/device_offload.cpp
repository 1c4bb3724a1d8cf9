// Layer offload (see device_offload.h): uploads layers until the count is reached or the device
// is full, and runs a micro-batch through them with one command buffer, the same steps as the
// CPU's pre-norm layer (forward.cpp, attention_block.cpp) in the same order.
#include "model/device_offload.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/forward.h"
#include "util/log.h"

namespace hearth::model {

namespace vk = kernels::vulkan;

namespace {

// The GGUF rows of a layer matrix, even when the model moved its copy into the interleaved
// layout: the device takes the file's layout.
Result<kernels::WeightView> file_rows(const Model& model, const std::string& name, const kernels::WeightView& bound) {
  const gguf::TensorInfo* t = model.file().find_tensor(name);
  if (t == nullptr) return make_error(ErrorKind::kNotFound, "model is missing tensor '" + name + "'");
  kernels::WeightView w;
  w.type = t->type;
  w.data = t->data;
  w.cols = bound.cols;
  w.rows = bound.rows;
  auto rb = dtype_row_bytes(t->type, static_cast<uint64_t>(bound.cols));
  if (!rb.ok()) return rb.error();
  w.row_bytes = *rb;
  return w;
}

}  // namespace

// A matrix read from the file's mapping for upload: its pages stop counting as this process's
// resident memory (the device holds the copy; a CPU read, such as a tied embedding's rows,
// reads them back from the page cache).
void DeviceOffload::release_file_rows(const kernels::WeightView& w) const {
  model_.file().release_bytes(w.data, static_cast<size_t>(w.rows) * w.row_bytes);
}

namespace {

// Rows [first, first + count) of a matrix in the file's layout.
kernels::WeightView row_range(const kernels::WeightView& w, int64_t first, int64_t count) {
  kernels::WeightView r = w;
  r.data = w.data + static_cast<size_t>(first) * w.row_bytes;
  r.rows = count;
  return r;
}

// Bytes a matrix takes on the device (types without a shader go up as F16).
uint64_t device_matrix_bytes(const kernels::WeightView& w) {
  if (vk::native_weight_type(w.type)) return static_cast<uint64_t>(w.row_bytes) * static_cast<uint64_t>(w.rows);
  return static_cast<uint64_t>(w.cols) * 4 * static_cast<uint64_t>(w.rows);  // F16, or F32 when odd
}

Result<device::Buffer> upload_vector(device::Context& ctx, const float* v, int64_t n) {
  auto b = ctx.alloc(static_cast<size_t>(n) * sizeof(float));
  if (!b.ok()) return b.error();
  if (Status s = ctx.upload(*b, 0, v, static_cast<size_t>(n) * sizeof(float)); !s.ok()) return s.error();
  return std::move(*b);
}

Status grow(device::Context& ctx, device::Buffer& b, size_t bytes) {
  if (b.valid() && b.bytes() >= bytes) return ok_status();
  b = device::Buffer();
  auto nb = ctx.alloc(std::max<size_t>(bytes, 4));
  if (!nb.ok()) return nb.error();
  b = std::move(*nb);
  return ok_status();
}

}  // namespace

std::string device_unsupported_reason(const Model& model, const kernels::RopeParams& rope, DType kv_type) {
  const ModelHparams& h = model.hparams();
  const ModelWeights& w = model.weights();
  if (h.output != ModelOutput::kLogits) return "embedding models run on the CPU";
  if (h.norm_kind != NormKind::kRms || h.norm_placement != NormPlacement::kPre) return "LayerNorm / post-norm layers";
  if (h.position_encoding != PositionEncoding::kRope) return "learned positions";
  if (kv_type != DType::kF16) return "a KV cache type other than F16";
  if (h.ffn_activation == ActivationKind::kSwigluClamped) return "a clamped SwiGLU";
  if ((h.n_head_kv * h.head_dim_k) % 2 != 0 || (h.n_head_kv * h.head_dim_v) % 2 != 0) return "odd KV rows";
  for (const LayerWeights& L : w.layers) {
    if (L.attn_norm_b) return "norm biases";
    if (L.attn_sinks) return "attention sinks";
    if (L.moe.present()) return "a mixture of experts";
    if ((L.q_norm == nullptr) != (L.k_norm == nullptr)) return "a QK norm on one side only";
    if (L.attn_out_norm || L.out_norm) return "post-LayerNorm";
    if ((L.ffn_gate.data == nullptr && !w.fused_gate_up) || L.ffn_up_b || L.ffn_down_b) {
      return "an FFN without a gate or with biases";
    }
  }
  return "";
}

Result<std::unique_ptr<DeviceOffload>> DeviceOffload::create(const Model& model, device::Context& ctx, int32_t n_layers,
                                                             kv::KvBlockPool& kv_pool, const kernels::RopeParams& rope) {
  HEARTH_ASSIGN(auto off, create_unattached(model, ctx, n_layers, kv_pool.layout(), kv_pool.n_blocks(), rope));
  HEARTH_TRY(off->attach_kv(kv_pool));
  return off;
}

Result<std::unique_ptr<DeviceOffload>> DeviceOffload::create_unattached(const Model& model, device::Context& ctx,
                                                                        int32_t n_layers, const kv::KvLayout& layout,
                                                                        int32_t kv_blocks, const kernels::RopeParams& rope) {
  const ModelHparams& h = model.hparams();
  std::unique_ptr<DeviceOffload> off(new DeviceOffload(model, ctx, layout, rope));
  std::string why = device_unsupported_reason(model, rope, layout.type);
  if (why.empty() && !ctx.buffer_addresses()) why = "no buffer device addresses (the paged KV needs them)";
  if (!why.empty()) {
    log_warn("layers stay on the CPU", {{"device", ctx.info().name}, {"reason", why}});
    return off;
  }
  const uint64_t pool_bytes =
      static_cast<uint64_t>(kv_blocks) * layout.block_tokens * (layout.k_row_elems + layout.v_row_elems) * 2;
  int32_t want = n_layers < 0 ? h.n_layer : std::min(n_layers, h.n_layer);
  bool want_output = n_layers > h.n_layer;
  if (n_layers < 0) {
    // Automatic fit: layers (weights + KV) into the free memory, less scratch for a
    // 128-token micro-batch and a margin for the driver.
    const ModelWeights& w = model.weights();
    const int64_t t = 128;
    const uint64_t n_ctx = static_cast<uint64_t>(kv_blocks) * layout.block_tokens;
    const uint64_t scratch =
        4 * (static_cast<uint64_t>(t) * (3 * h.n_embd + 2 * static_cast<uint64_t>(h.n_ff) +
                                         2 * static_cast<uint64_t>(h.n_head) * h.head_dim_k + layout.k_row_elems +
                                         layout.v_row_elems) +
             static_cast<uint64_t>(t) * h.n_head * n_ctx);
    const uint64_t free_bytes = ctx.available_bytes();
    const uint64_t margin = free_bytes / 20;
    uint64_t budget = free_bytes > scratch + margin ? free_bytes - scratch - margin : 0;
    int32_t fit = 0;
    for (int32_t il = 0; il < h.n_layer; ++il) {
      const LayerWeights& L = w.layers[static_cast<size_t>(il)];
      uint64_t bytes = pool_bytes + 8 * static_cast<uint64_t>(h.n_embd);
      for (const kernels::WeightView* m : {&L.wq, &L.wk, &L.wv, &L.wqkv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down}) {
        bytes += device_matrix_bytes(*m);
      }
      if (bytes > budget) break;
      budget -= bytes;
      ++fit;
    }
    want = fit;
    // The output layer: its matrix, its norm, and logits scratch for a micro-batch.
    const uint64_t output_bytes = device_matrix_bytes(w.output) + 4 * static_cast<uint64_t>(h.n_embd) +
                                  4 * static_cast<uint64_t>(t) * (2 * static_cast<uint64_t>(h.n_embd) + h.n_vocab);
    want_output = fit == h.n_layer && output_bytes <= budget;
  }
  if (want > 0 && rope.freq_factors != nullptr) {
    // Llama 3's rope_freqs (or phi3's long/short factors): one per rotated pair, shared by the layers.
    auto ff = upload_vector(ctx, rope.freq_factors, std::max(rope.rope_dims / 2, 1));
    if (!ff.ok()) {
      if (ff.error().kind != ErrorKind::kUnavailable) return ff.error();
      want = 0;
    } else {
      off->rope_freqs_ = std::move(*ff);
    }
  }
  for (int32_t il = 0; il < want; ++il) {
    auto layer = off->upload_layer(il);
    if (!layer.ok()) {
      if (layer.error().kind != ErrorKind::kUnavailable) return layer.error();
      // The device filled up midway: what went up stays, the rest runs on the CPU.
      log_warn("device memory ran out while offloading; the remaining layers run on the CPU",
               {{"device", ctx.info().name}, {"layers", il}, {"asked", want}, {"error", layer.error().message}});
      break;
    }
    off->layers_.push_back(std::move(*layer));
  }
  if (want_output && off->n_layers() == h.n_layer) {
    if (Status s = off->upload_output(); !s.ok()) {
      if (s.error().kind != ErrorKind::kUnavailable) return s.error();
      off->output_norm_ = device::Buffer();
      off->output_ = vk::DeviceWeight();
      log_warn("device memory ran out for the output layer; it runs on the CPU",
               {{"device", ctx.info().name}, {"error", s.error().message}});
    }
  }
  log_info("layers offloaded", {{"device", ctx.info().name},
                                {"layers", off->n_layers()},
                                {"of", h.n_layer},
                                {"output_layer", off->has_output()},
                                {"device_bytes", static_cast<unsigned long long>(ctx.allocated_bytes())}});
  return off;
}

Status DeviceOffload::attach_kv(kv::KvBlockPool& kv_pool) {
  if (layers_.empty()) return ok_status();
  const kv::KvLayout& l = kv_pool.layout();
  if (l.offloaded_layers != 0 && l.offloaded_layers != n_layers()) {
    return make_error(ErrorKind::kInvalidArgument, "the KV pool leaves out " + std::to_string(l.offloaded_layers) +
                                                       " layers, the device holds " + std::to_string(n_layers()));
  }
  if (attached_ != nullptr) HEARTH_TRY(attached_->attach_mirror(nullptr));
  attached_ = nullptr;
  kv_.reset();
  HEARTH_ASSIGN(kv_, DeviceKvPool::create(ctx_, kv_pool, n_layers()));
  HEARTH_TRY(kv_pool.attach_mirror(kv_.get()));
  attached_ = &kv_pool;
  return ok_status();
}

DeviceOffload::~DeviceOffload() {
  if (attached_ != nullptr) (void)attached_->attach_mirror(nullptr);
}

Result<DeviceOffload::Layer> DeviceOffload::upload_layer(int32_t il) {
  const ModelHparams& h = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(il)];
  const std::string blk = "blk." + std::to_string(il) + ".";
  Layer out;
  HEARTH_ASSIGN(out.attn_norm, upload_vector(ctx_, L.attn_norm, h.n_embd));
  HEARTH_ASSIGN(out.ffn_norm, upload_vector(ctx_, L.ffn_norm, h.n_embd));
  // qwen2's Q/K/V biases, qwen3's per-head QK norms.
  if (L.bq != nullptr) {
    HEARTH_ASSIGN(out.bq, upload_vector(ctx_, L.bq, int64_t{h.n_head} * h.head_dim_k));
  }
  if (L.bk != nullptr) {
    HEARTH_ASSIGN(out.bk, upload_vector(ctx_, L.bk, int64_t{h.n_head_kv} * h.head_dim_k));
  }
  if (L.bv != nullptr) {
    HEARTH_ASSIGN(out.bv, upload_vector(ctx_, L.bv, int64_t{h.n_head_kv} * h.head_dim_v));
  }
  if (L.q_norm != nullptr) {
    HEARTH_ASSIGN(out.q_norm, upload_vector(ctx_, L.q_norm, h.head_dim_k));
  }
  if (L.k_norm != nullptr) {
    HEARTH_ASSIGN(out.k_norm, upload_vector(ctx_, L.k_norm, h.head_dim_k));
  }
  struct M {
    const char* name;
    const kernels::WeightView* bound;
    vk::DeviceWeight* dst;
  };
  // Q, K and V go up into one buffer where they share a type and width, and so do gate and
  // up: a decode step then runs each group as one matrix x vector. Fused matrices in the file
  // (phi3's QKV, its gate/up) come as row ranges of that one matrix.
  std::vector<M> mats = {{"attn_output", &L.wo, &out.wo}, {"ffn_down", &L.ffn_down, &out.down}};
  for (const M& m : mats) {
    HEARTH_ASSIGN(kernels::WeightView rows, file_rows(model_, blk + m.name + ".weight", *m.bound));
    HEARTH_ASSIGN(*m.dst, ops_.upload_weight(rows));
    release_file_rows(rows);
  }
  std::vector<kernels::WeightView> file;  // what to return to the OS once uploaded
  std::vector<kernels::WeightView> qkv_parts, gate_up_parts;
  if (L.wqkv.data != nullptr) {
    HEARTH_ASSIGN(kernels::WeightView qkv, file_rows(model_, blk + "attn_qkv.weight", L.wqkv));
    const int64_t q = int64_t{h.n_head} * h.head_dim_k, k = int64_t{h.n_head_kv} * h.head_dim_k;
    const int64_t v = int64_t{h.n_head_kv} * h.head_dim_v;
    if (qkv.rows != q + k + v) return make_error(ErrorKind::kInvalidArgument, blk + "attn_qkv has the wrong row count");
    qkv_parts = {row_range(qkv, 0, q), row_range(qkv, q, k), row_range(qkv, q + k, v)};
    file.push_back(qkv);
  } else {
    for (const auto& [name, bound] : {std::pair{"attn_q", &L.wq}, std::pair{"attn_k", &L.wk}, std::pair{"attn_v", &L.wv}}) {
      HEARTH_ASSIGN(kernels::WeightView rows, file_rows(model_, blk + name + ".weight", *bound));
      qkv_parts.push_back(rows);
      file.push_back(rows);
    }
  }
  if (model_.weights().fused_gate_up) {
    HEARTH_ASSIGN(kernels::WeightView gu, file_rows(model_, blk + "ffn_up.weight", L.ffn_up));
    if (gu.rows != 2 * int64_t{h.n_ff}) return make_error(ErrorKind::kInvalidArgument, blk + "ffn_up is not gate and up");
    gate_up_parts = {row_range(gu, 0, h.n_ff), row_range(gu, h.n_ff, h.n_ff)};
    file.push_back(gu);
  } else {
    for (const auto& [name, bound] : {std::pair{"ffn_gate", &L.ffn_gate}, std::pair{"ffn_up", &L.ffn_up}}) {
      HEARTH_ASSIGN(kernels::WeightView rows, file_rows(model_, blk + name + ".weight", *bound));
      gate_up_parts.push_back(rows);
      file.push_back(rows);
    }
  }
  HEARTH_TRY(upload_group(qkv_parts, {&out.wq, &out.wk, &out.wv}, &out.qkv));
  HEARTH_TRY(upload_group(gate_up_parts, {&out.gate, &out.up}, &out.gate_up));
  for (const kernels::WeightView& w : file) release_file_rows(w);
  // The attention output's bias; gemma2's norms of the attention and FFN outputs.
  if (L.bo != nullptr) {
    HEARTH_ASSIGN(out.bo, upload_vector(ctx_, L.bo, h.n_embd));
  }
  if (L.post_attn_norm != nullptr) {
    HEARTH_ASSIGN(out.post_attn_norm, upload_vector(ctx_, L.post_attn_norm, h.n_embd));
  }
  if (L.post_ffw_norm != nullptr) {
    HEARTH_ASSIGN(out.post_ffw_norm, upload_vector(ctx_, L.post_ffw_norm, h.n_embd));
  }
  return out;
}

Status DeviceOffload::upload_group(std::span<const kernels::WeightView> parts,
                                   std::initializer_list<kernels::vulkan::DeviceWeight*> dst,
                                   kernels::vulkan::DeviceWeight* together) {
  auto* d = dst.begin();
  if (!ops_.can_store_together(parts)) {
    for (const kernels::WeightView& w : parts) {
      HEARTH_ASSIGN(**d, ops_.upload_weight(w));
      ++d;
    }
    return ok_status();
  }
  HEARTH_ASSIGN(*together, ops_.upload_weights(parts));
  int64_t first = 0;
  for (const kernels::WeightView& w : parts) {
    **d++ = together->row_range(first, w.rows);
    first += w.rows;
  }
  return ok_status();
}

Status DeviceOffload::upload_output() {
  const ModelWeights& w = model_.weights();
  const char* name = model_.file().find_tensor("output.weight") != nullptr ? "output.weight" : "token_embd.weight";
  HEARTH_ASSIGN(kernels::WeightView rows, file_rows(model_, name, w.output));
  HEARTH_ASSIGN(output_norm_, upload_vector(ctx_, w.output_norm, model_.hparams().n_embd));
  HEARTH_ASSIGN(output_, ops_.upload_weight(rows));
  release_file_rows(rows);
  return ok_status();
}

bool DeviceOffload::fuses_decode_step(const Layer& L) const {
  for (const kernels::vulkan::DeviceWeight* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.gate, &L.up, &L.down}) {
    if (!w->valid() || !ops_.fused_matvec(*w)) return false;
  }
  return !L.bo.valid() && !L.post_attn_norm.valid() && !L.post_ffw_norm.valid();
}

Status DeviceOffload::ensure_output_scratch(int64_t n_rows) {
  if (n_rows <= out_rows_) return ok_status();
  const ModelHparams& h = model_.hparams();
  const size_t n = static_cast<size_t>(n_rows);
  HEARTH_TRY(grow(ctx_, out_x_, n * static_cast<size_t>(h.n_embd) * 4));
  HEARTH_TRY(grow(ctx_, out_xn_, n * static_cast<size_t>(h.n_embd) * 4));
  HEARTH_TRY(grow(ctx_, out_logits_, n * static_cast<size_t>(h.n_vocab) * 4));
  out_rows_ = n_rows;
  return ok_status();
}

Status DeviceOffload::record_output(device::Recorder& rec, uint32_t n_rows, float* out) {
  const ModelHparams& h = model_.hparams();
  const auto d = static_cast<uint32_t>(h.n_embd);
  const auto vocab = static_cast<uint32_t>(h.n_vocab);
  HEARTH_TRY(ops_.rms_norm(rec, out_x_, &output_norm_, out_xn_, d, n_rows, h.norm_eps));
  HEARTH_TRY(ops_.matmul(rec, output_, {&out_xn_, 0}, d, n_rows, {&out_logits_, 0}, vocab));
  return rec.download(out_logits_, 0, out, size_t{n_rows} * vocab * 4);
}

Status DeviceOffload::logits(const float* rows, int64_t n_rows, float* out) {
  if (!has_output()) return make_error(ErrorKind::kInternal, "the output layer is not on the device");
  if (n_rows <= 0) return ok_status();
  HEARTH_TRY(ensure_output_scratch(n_rows));
  const auto n = static_cast<uint32_t>(n_rows);
  device::Recorder rec(ctx_);
  HEARTH_TRY(rec.upload(out_x_, 0, rows, size_t{n} * static_cast<size_t>(model_.hparams().n_embd) * 4));
  HEARTH_TRY(record_output(rec, n, out));
  return rec.run();
}

int64_t DeviceOffload::micro_batch_tokens(int64_t n_kv, int64_t cpu_tokens) const {
  constexpr int64_t kMostTokens = 512;
  constexpr int64_t kScoreBytes = int64_t{256} << 20;
  const int64_t per_token = 4 * static_cast<int64_t>(model_.hparams().n_head) * std::max<int64_t>(n_kv, 1);
  return std::max(cpu_tokens, std::min(kMostTokens, kScoreBytes / per_token));
}

Status DeviceOffload::ensure_scratch(int64_t n, int64_t table_entries, int64_t score_floats) {
  const ModelHparams& h = model_.hparams();
  if (n > s_.tokens) {
    const size_t t = static_cast<size_t>(n) * 4;
    HEARTH_TRY(grow(ctx_, s_.x, t * h.n_embd));
    HEARTH_TRY(grow(ctx_, s_.xn, t * h.n_embd));
    HEARTH_TRY(grow(ctx_, s_.tmp, t * h.n_embd));
    HEARTH_TRY(grow(ctx_, s_.q, t * h.n_head * h.head_dim_k));
    HEARTH_TRY(grow(ctx_, s_.k, t * layout_.k_row_elems));
    HEARTH_TRY(grow(ctx_, s_.v, t * layout_.v_row_elems));
    HEARTH_TRY(grow(ctx_, s_.attn, t * h.n_head * h.head_dim_v));
    HEARTH_TRY(grow(ctx_, s_.gate, t * h.n_ff));
    HEARTH_TRY(grow(ctx_, s_.up, t * h.n_ff));
    HEARTH_TRY(grow(ctx_, s_.positions, t));
    s_.tokens = n;
  }
  if (table_entries > s_.table_entries) {
    HEARTH_TRY(grow(ctx_, s_.tables, static_cast<size_t>(table_entries) * 4));
    s_.table_entries = table_entries;
  }
  if (score_floats > s_.score_floats) {
    HEARTH_TRY(grow(ctx_, s_.scores, static_cast<size_t>(score_floats) * 4));
    s_.score_floats = score_floats;
  }
  return ok_status();
}

Status DeviceOffload::run(std::span<const BatchToken> batch, const kv::KvCache& kv, float* x, float* logits) {
  if (layers_.empty() || batch.empty()) return ok_status();
  if (logits != nullptr && !has_output()) return make_error(ErrorKind::kInternal, "the output layer is not on the device");
  const ModelHparams& h = model_.hparams();
  const auto n = static_cast<uint32_t>(batch.size());
  const auto d = static_cast<uint32_t>(h.n_embd);
  const auto qd = static_cast<uint32_t>(h.n_head * h.head_dim_k);
  const auto od = static_cast<uint32_t>(h.n_head * h.head_dim_v);
  const auto kd = static_cast<uint32_t>(layout_.k_row_elems);
  const auto vd = static_cast<uint32_t>(layout_.v_row_elems);
  const auto ff = static_cast<uint32_t>(h.n_ff);

  // Runs of consecutive tokens of one sequence, each with its block table.
  struct Run {
    uint32_t first, count, table_off, n_kv;
  };
  std::vector<Run> runs;
  std::vector<int32_t> positions(n);
  std::vector<uint32_t> tables;
  uint32_t max_kv = 1;
  for (uint32_t t = 0; t < n; ++t) {
    positions[t] = batch[t].pos;
    if (t > 0 && batch[t].seq == batch[t - 1].seq) {
      ++runs.back().count;
      continue;
    }
    const auto table = kv.block_table(batch[t].seq);
    const auto n_kv = static_cast<uint32_t>(kv.seq_length(batch[t].seq));
    runs.push_back({t, 1, static_cast<uint32_t>(tables.size()), n_kv});
    for (int32_t b : table) tables.push_back(static_cast<uint32_t>(b));
    max_kv = std::max(max_kv, n_kv);
  }
  HEARTH_TRY(ensure_scratch(n, static_cast<int64_t>(std::max<size_t>(tables.size(), 1)),
                            static_cast<int64_t>(n) * h.n_head * max_kv));
  // Room for a split attention's partial results (decode steps over long sequences).
  {
    kernels::AttentionParams dims;
    dims.n_head = h.n_head;
    dims.head_dim_v = h.head_dim_v;
    size_t part_floats = 0;
    for (const Run& r : runs) part_floats = std::max(part_floats, ops_.attention_partial_floats(r.count, r.n_kv, dims));
    if (part_floats > 0) HEARTH_TRY(grow(ctx_, s_.partials, part_floats * sizeof(float)));
  }
  // The step's output rows, as runs of consecutive rows of x.
  std::vector<device::Recorder::CopyRegion> out_rows;
  uint32_t n_out = 0;
  if (logits != nullptr) {
    for (uint32_t t = 0; t < n; ++t) {
      if (!batch[t].output) continue;
      const size_t from = size_t{t} * d * 4;
      if (!out_rows.empty() && out_rows.back().src_offset + out_rows.back().bytes == from) {
        out_rows.back().bytes += size_t{d} * 4;
      } else {
        out_rows.push_back({from, size_t{n_out} * d * 4, size_t{d} * 4});
      }
      ++n_out;
    }
    HEARTH_TRY(ensure_output_scratch(n_out));
  }

  // One command list for the whole step: inputs up, every layer, then the hidden states (or
  // the logits) down; one wait. It goes to the device in parts of kLayersPerSubmit layers, so
  // the device runs the first layers while the host records the next (recording a decode step
  // of a 16-layer model took ~1 ms on the host, with the GPU idle until the one submission).
  device::Recorder rec(ctx_);
  HEARTH_TRY(rec.upload(s_.x, 0, x, size_t{n} * d * 4));
  HEARTH_TRY(rec.upload(s_.positions, 0, positions.data(), positions.size() * 4));
  if (!tables.empty()) HEARTH_TRY(rec.upload(s_.tables, 0, tables.data(), tables.size() * 4));
  // Each residual add goes into the norm that reads its sum next (the feed-forward's output
  // into the next layer's attention norm): `pending` says s_.tmp still has to be added to s_.x.
  bool pending = false;
  for (size_t il = 0; il < layers_.size(); ++il) {
    const Layer& L = layers_[il];
    kernels::AttentionParams ap;
    ap.n_head = h.n_head;
    ap.n_head_kv = h.n_head_kv;
    ap.head_dim_k = h.head_dim_k;
    ap.head_dim_v = h.head_dim_v;
    ap.scale = h.attn_scale > 0 ? h.attn_scale : 1.0f / std::sqrt(static_cast<float>(h.head_dim_k));
    ap.softcap = h.attn_softcap;
    ap.window = h.layer_is_sliding(static_cast<int32_t>(il)) ? h.sliding_window : 0;
    ap.causal = h.causal;

    // One token through a plain pre-norm layer: the norms go into the matrix x vector
    // dispatches after them and the projections add straight into s_.x (fuses_decode_step).
    const bool fused = n == 1 && fuses_decode_step(L);
    if (fused) {
      if (pending) HEARTH_TRY(ops_.add(rec, s_.x, s_.tmp, d));
      pending = false;
      if (L.qkv.valid()) {
        const vk::RowsInto qkv[] = {{&s_.q, qd}, {&s_.k, kd}, {&s_.v, vd}};
        HEARTH_TRY(ops_.matvec_split(rec, L.qkv, {&s_.x, 0}, qkv, &L.attn_norm, h.norm_eps));
      } else {  // types apart (Q4_K_M files keep some V matrices in Q6_K): each with the norm
        const vk::RowsInto q[] = {{&s_.q, qd}}, k[] = {{&s_.k, kd}}, v[] = {{&s_.v, vd}};
        HEARTH_TRY(ops_.matvec_split(rec, L.wq, {&s_.x, 0}, q, &L.attn_norm, h.norm_eps));
        HEARTH_TRY(ops_.matvec_split(rec, L.wk, {&s_.x, 0}, k, &L.attn_norm, h.norm_eps));
        HEARTH_TRY(ops_.matvec_split(rec, L.wv, {&s_.x, 0}, v, &L.attn_norm, h.norm_eps));
      }
    } else {
      HEARTH_TRY(ops_.rms_norm(rec, s_.x, &L.attn_norm, s_.xn, d, n, h.norm_eps, pending ? &s_.tmp : nullptr));
      if (n == 1 && L.qkv.valid() && ops_.fused_matvec(L.qkv)) {
        const vk::RowsInto qkv[] = {{&s_.q, qd}, {&s_.k, kd}, {&s_.v, vd}};
        HEARTH_TRY(ops_.matvec_split(rec, L.qkv, {&s_.xn, 0}, qkv));
      } else {
        HEARTH_TRY(ops_.matmul(rec, L.wq, {&s_.xn, 0}, d, n, {&s_.q, 0}, qd));
        HEARTH_TRY(ops_.matmul(rec, L.wk, {&s_.xn, 0}, d, n, {&s_.k, 0}, kd));
        HEARTH_TRY(ops_.matmul(rec, L.wv, {&s_.xn, 0}, d, n, {&s_.v, 0}, vd));
      }
    }
    if (L.bq.valid()) HEARTH_TRY(ops_.add_rows(rec, s_.q, L.bq, qd, n));
    if (L.bk.valid()) HEARTH_TRY(ops_.add_rows(rec, s_.k, L.bk, kd, n));
    if (L.bv.valid()) HEARTH_TRY(ops_.add_rows(rec, s_.v, L.bv, vd, n));
    if (L.q_norm.valid()) {
      const auto hd = static_cast<uint32_t>(h.head_dim_k);
      HEARTH_TRY(ops_.rms_norm(rec, s_.q, &L.q_norm, s_.q, hd, n * static_cast<uint32_t>(h.n_head), h.norm_eps));
      HEARTH_TRY(ops_.rms_norm(rec, s_.k, &L.k_norm, s_.k, hd, n * static_cast<uint32_t>(h.n_head_kv), h.norm_eps));
    }
    const bool sliding = h.layer_is_sliding(static_cast<int32_t>(il));
    const kernels::RopeParams& rope = sliding ? rope_swa_ : rope_;
    // The frequency factors belong to the global layers' RoPE (the sliding one has none).
    const device::Buffer* freqs = rope.freq_factors != nullptr && rope_freqs_.valid() ? &rope_freqs_ : nullptr;
    HEARTH_TRY(ops_.rope(rec, s_.q, s_.positions, n, static_cast<uint32_t>(h.n_head), static_cast<uint32_t>(h.head_dim_k),
                         rope, freqs, &s_.k, static_cast<uint32_t>(h.n_head_kv)));
    for (const Run& r : runs) {
      const vk::DeviceKv dkv = kv_->view(static_cast<int32_t>(il), s_.tables, r.table_off);
      HEARTH_TRY(ops_.kv_store_pair(rec, s_.k, s_.v, s_.positions, r.first, r.count, kd, vd, dkv));
    }
    for (const Run& r : runs) {
      const vk::DeviceKv dkv = kv_->view(static_cast<int32_t>(il), s_.tables, r.table_off);
      HEARTH_TRY(ops_.attention(rec, s_.q, s_.positions, r.first, r.count, dkv, r.n_kv, ap, s_.scores, s_.attn,
                                s_.partials.valid() ? &s_.partials : nullptr));
    }
    if (fused) {
      HEARTH_TRY(ops_.matvec_add(rec, L.wo, {&s_.attn, 0}, s_.x));
      if (L.gate_up.valid()) {
        const vk::RowsInto gate_up[] = {{&s_.gate, ff}, {&s_.up, ff}};
        HEARTH_TRY(ops_.matvec_split(rec, L.gate_up, {&s_.x, 0}, gate_up, &L.ffn_norm, h.norm_eps));
      } else {
        const vk::RowsInto gate[] = {{&s_.gate, ff}}, up[] = {{&s_.up, ff}};
        HEARTH_TRY(ops_.matvec_split(rec, L.gate, {&s_.x, 0}, gate, &L.ffn_norm, h.norm_eps));
        HEARTH_TRY(ops_.matvec_split(rec, L.up, {&s_.x, 0}, up, &L.ffn_norm, h.norm_eps));
      }
    } else {
      HEARTH_TRY(ops_.matmul(rec, L.wo, {&s_.attn, 0}, od, n, {&s_.tmp, 0}, d));
      if (L.bo.valid()) HEARTH_TRY(ops_.add_rows(rec, s_.tmp, L.bo, d, n));
      if (L.post_attn_norm.valid()) HEARTH_TRY(ops_.rms_norm(rec, s_.tmp, &L.post_attn_norm, s_.tmp, d, n, h.norm_eps));
      HEARTH_TRY(ops_.rms_norm(rec, s_.x, &L.ffn_norm, s_.xn, d, n, h.norm_eps, &s_.tmp));
      if (n == 1 && L.gate_up.valid() && ops_.fused_matvec(L.gate_up)) {
        const vk::RowsInto gate_up[] = {{&s_.gate, ff}, {&s_.up, ff}};
        HEARTH_TRY(ops_.matvec_split(rec, L.gate_up, {&s_.xn, 0}, gate_up));
      } else {
        HEARTH_TRY(ops_.matmul(rec, L.gate, {&s_.xn, 0}, d, n, {&s_.gate, 0}, ff));
        HEARTH_TRY(ops_.matmul(rec, L.up, {&s_.xn, 0}, d, n, {&s_.up, 0}, ff));
      }
    }
    if (h.ffn_activation == ActivationKind::kGelu) {
      HEARTH_TRY(ops_.gelu_mul(rec, s_.gate, s_.up, n * ff));
    } else {
      HEARTH_TRY(ops_.silu_mul(rec, s_.gate, s_.up, n * ff));
    }
    if (fused) {
      HEARTH_TRY(ops_.matvec_add(rec, L.down, {&s_.gate, 0}, s_.x));
      pending = false;
    } else {
      HEARTH_TRY(ops_.matmul(rec, L.down, {&s_.gate, 0}, ff, n, {&s_.tmp, 0}, d));
      if (L.post_ffw_norm.valid()) HEARTH_TRY(ops_.rms_norm(rec, s_.tmp, &L.post_ffw_norm, s_.tmp, d, n, h.norm_eps));
      pending = true;
    }
    if ((il + 1) % kLayersPerSubmit == 0 && il + 1 < layers_.size()) HEARTH_TRY(rec.flush());
  }
  if (pending) HEARTH_TRY(ops_.add(rec, s_.x, s_.tmp, n * d));
  if (logits != nullptr) {
    if (n_out > 0) {
      HEARTH_TRY(rec.copy(s_.x, out_x_, out_rows));
      HEARTH_TRY(record_output(rec, n_out, logits));
    }
  } else {
    HEARTH_TRY(rec.download(s_.x, 0, x, size_t{n} * d * 4));
  }
  return rec.run();
}

}  // namespace hearth::model
