// The forward pass shared by every architecture: validation, embeddings, the pre-norm layer of
// the decoders, the FFN block, logits and the micro-batch loop. Architecture differences are
// fields of the hyper-parameters and optional weights (see hparams.h, weights.h); the attention
// block is in attention_block.cpp, the post-norm layer in post_norm_layer.cpp.
#include "model/forward.h"

#include "model/device_offload.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace hearth::model {
namespace {
// A mixture-of-experts model runs longer micro-batches: each expert sees only n_expert_used of
// n_expert of the tokens (Qwen3-30B-A3B: 8 of 128), so at 128 tokens an expert's matrices
// served about 8 tokens per read; at 512 about 32, as llama.cpp's default micro-batch gives.
constexpr int64_t kMoeMicroBatchTokens = 512;

void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}
void activate(ActivationKind kind, float* x, int64_t n) {
  kind == ActivationKind::kGelu ? kernels::gelu(x, n) : kernels::silu(x, n);
}
// Runs fn(t) for every token t of a batch of n, split over the pool when n > 1: the per-token
// steps between the matmuls.
template <typename Fn>
void for_each_token(ThreadPool& pool, int64_t n, Fn&& fn) {
  if (n == 1) {
    fn(int64_t{0});
    return;
  }
  pool.parallel_for(static_cast<size_t>(n), [&](size_t begin, size_t end, int) {
    for (size_t t = begin; t < end; ++t) fn(static_cast<int64_t>(t));
  });
}
}  // namespace

void ForwardPass::add_bias_rows(float* y, const float* bias, int64_t n, int64_t width) {
  if (bias == nullptr) return;
  for (int64_t t = 0; t < n; ++t) kernels::add(y + t * width, bias, width);
}

void ForwardPass::norm_row(const float* x, const float* weight, const float* bias, float* y) const {
  const auto& h = model_.hparams();
  if (h.norm_kind == NormKind::kLayer) {
    kernels::layer_norm(x, weight, bias, y, h.n_embd, h.norm_eps);
  } else {
    kernels::rms_norm(x, weight, y, h.n_embd, h.norm_eps);
  }
}

Status ForwardPass::matmul(const kernels::WeightView& w, const float* x, int64_t n, float* y) {
  return kernels::matmul(w, x, n, y, pool_, mm_scratch_);
}

Status ForwardPass::validate_and_reserve(std::span<const BatchToken> batch, kv::KvCache& kv) {
  const auto& h = model_.hparams();
  if (batch.empty()) return make_error(ErrorKind::kInvalidArgument, "empty batch");
  std::map<int32_t, int32_t> next_pos;  // seq -> expected position
  for (const auto& t : batch) {
    if (t.token < 0 || t.token >= h.n_vocab) {
      return make_error(ErrorKind::kInvalidArgument,
                        "token id " + std::to_string(t.token) + " is outside the vocabulary (" + std::to_string(h.n_vocab) + ")");
    }
    if (!kv.seq_valid(t.seq)) return make_error(ErrorKind::kInvalidArgument, "unknown sequence " + std::to_string(t.seq));
    auto it = next_pos.find(t.seq);
    int32_t expected = it == next_pos.end() ? kv.seq_length(t.seq) : it->second;
    if (t.pos != expected) {
      return make_error(ErrorKind::kInvalidArgument, "sequence " + std::to_string(t.seq) + ": position " +
                                                         std::to_string(t.pos) + " given, " + std::to_string(expected) +
                                                         " expected");
    }
    if (h.n_pos_max > 0 && t.pos >= h.n_pos_max) {
      return make_error(ErrorKind::kOutOfRange, "input longer than the model's " + std::to_string(h.n_pos_max) +
                                                    " positions");
    }
    next_pos[t.seq] = expected + 1;
  }
  std::vector<std::pair<int32_t, int32_t>> done;
  for (const auto& [seq, end] : next_pos) {
    int32_t start = kv.seq_length(seq);
    auto st = kv.seq_append(seq, end - start);
    if (!st.ok()) {
      for (const auto& [s, len] : done) (void)kv.seq_truncate(s, len);
      return st;
    }
    done.push_back({seq, start});
  }
  return ok_status();
}

// A row of a table still in the file is read with pread, not through the mapping: a page fault
// there maps the page cache around the row too (fault-around, large folios; measured on Linux
// 6.18: ~146 KiB resident per random row), so a decode's random token ids would leave most of a
// large vocabulary's table resident (Qwen3-30B-A3B's Q4_K table: ~150 MiB after a benchmark)
// for the ~1 KiB rows it needs.
Status ForwardPass::embedding_row(const kernels::WeightView& table, int64_t row, float* out) {
  if (table.interleaved || row < 0 || row >= table.rows) return kernels::get_row(table, row, out);
  if (embd_row_.size() < table.row_bytes) embd_row_.resize(table.row_bytes);
  HEARTH_TRY(model_.file().read_bytes(table.data + static_cast<size_t>(row) * table.row_bytes, table.row_bytes,
                                      embd_row_.data()));
  kernels::WeightView one = table;
  one.data = embd_row_.data();
  one.rows = 1;
  return kernels::get_row(one, 0, out);
}

void ForwardPass::embed(std::span<const BatchToken> batch) {
  const auto& h = model_.hparams();
  const auto& w = model_.weights();
  const int64_t d = h.n_embd;
  for (size_t t = 0; t < batch.size(); ++t) {
    float* row = x_.data() + static_cast<int64_t>(t) * d;
    auto st = embedding_row(w.token_embd, batch[t].token, row);
    if (!st.ok() && status_.ok()) status_ = st;
    if (h.embed_scale != 1.0f) kernels::scale(row, h.embed_scale, d);
    float* extra = tmp_.data() + static_cast<int64_t>(t) * d;  // free until the first layer
    if (w.token_types.data != nullptr) {
      (void)kernels::get_row(w.token_types, 0, extra);
      kernels::add(row, extra, d);
    }
    if (h.position_encoding == PositionEncoding::kLearned) {
      (void)kernels::get_row(w.position_embd, batch[t].pos, extra);
      kernels::add(row, extra, d);
    }
    if (w.embd_norm != nullptr) norm_row(row, w.embd_norm, w.embd_norm_b, row);
  }
}

void ForwardPass::pre_norm_layer(int32_t il, std::span<const BatchToken> batch, kv::KvCache& kv) {
  const auto& h = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(il)];
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t d = h.n_embd;
  for_each_token(pool_, n, [&](int64_t t) { norm_row(x_.data() + t * d, L.attn_norm, L.attn_norm_b, xn_.data() + t * d); });
  attention_block(il, batch, kv);
  for_each_token(pool_, n, [&](int64_t t) {
    float* a = tmp_.data() + t * d;
    if (L.post_attn_norm != nullptr) norm_row(a, L.post_attn_norm, nullptr, a);
    kernels::add(x_.data() + t * d, a, d);
    norm_row(x_.data() + t * d, L.ffn_norm, nullptr, xn_.data() + t * d);
  });
  if (L.moe.present()) {
    moe_block(il, batch);
  } else {
    ffn_block(il, n);
  }
  for_each_token(pool_, n, [&](int64_t t) {
    float* f = tmp_.data() + t * d;
    if (L.post_ffw_norm != nullptr) norm_row(f, L.post_ffw_norm, nullptr, f);
    kernels::add(x_.data() + t * d, f, d);
  });
}

void ForwardPass::gated_activation(float* gate, const float* up, int64_t n) const {
  const auto& h = model_.hparams();
  if (h.ffn_activation != ActivationKind::kSwigluClamped) {
    activate(h.ffn_activation, gate, n);
    kernels::mul(gate, up, n);
    return;
  }
  // g * sigmoid(alpha * g) = silu(alpha * g) / alpha: the kernels' vector silu rather than one
  // libm exp per element (~92k per gpt-oss-20b decode token over 8 layers).
  const float limit = h.swiglu_limit, alpha = h.swiglu_alpha;
  for (int64_t i = 0; i < n; ++i) gate[i] = alpha * std::min(gate[i], limit);
  kernels::silu(gate, n);
  const float inv_alpha = 1.0f / alpha;
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] * inv_alpha * (std::clamp(up[i], -limit, limit) + 1.0f);
}

void ForwardPass::ffn_block(int32_t il, int64_t n) {
  const auto& h = model_.hparams();
  const auto& w = model_.weights();
  const LayerWeights& L = w.layers[static_cast<size_t>(il)];
  const int64_t ff = h.n_ff;
  const ActivationKind act = h.ffn_activation;
  grow(gate_, static_cast<size_t>(n * ff));
  grow(up_, static_cast<size_t>(n * ff));
  if (w.fused_gate_up) {
    grow(up_, static_cast<size_t>(n * 2 * ff));
    if (auto st = matmul(L.ffn_up, xn_.data(), n, up_.data()); !st.ok()) status_ = st;
    for (int64_t t = 0; t < n; ++t) {
      float* g = up_.data() + t * 2 * ff;
      float* u = g + ff;
      activate(act, g, ff);
      kernels::mul(g, u, ff);
      std::copy(g, g + ff, gate_.data() + t * ff);
    }
  } else if (L.ffn_gate.data != nullptr) {
    const kernels::MatmulJob jobs[] = {{&L.ffn_gate, gate_.data()}, {&L.ffn_up, up_.data()}};
    if (auto st = kernels::matmul_multi(jobs, xn_.data(), n, pool_, mm_scratch_); !st.ok()) status_ = st;
    // act(gate) * up, split over the pool by tokens (by columns for a single token)
    const int64_t total = n * ff;
    const size_t pieces = n > 1 ? static_cast<size_t>(n) : static_cast<size_t>(pool_.size());
    pool_.parallel_for(pieces, [&](size_t begin, size_t end, int) {
      const int64_t lo = total * static_cast<int64_t>(begin) / static_cast<int64_t>(pieces);
      const int64_t hi = total * static_cast<int64_t>(end) / static_cast<int64_t>(pieces);
      gated_activation(gate_.data() + lo, up_.data() + lo, hi - lo);
    });
  } else {
    if (auto st = matmul(L.ffn_up, xn_.data(), n, gate_.data()); !st.ok()) status_ = st;
    add_bias_rows(gate_.data(), L.ffn_up_b, n, ff);
    activate(act, gate_.data(), n * ff);
  }
  if (auto st = matmul(L.ffn_down, gate_.data(), n, tmp_.data()); !st.ok()) status_ = st;
  add_bias_rows(tmp_.data(), L.ffn_down_b, n, h.n_embd);
}

Status ForwardPass::run(std::span<const BatchToken> batch, kv::KvCache& kv, std::vector<float>* logits,
                        std::vector<float>* hidden) {
  const auto& h = model_.hparams();
  HEARTH_TRY(validate_and_reserve(batch, kv));
  status_ = ok_status();
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t d = h.n_embd;
  const bool want_logits = logits != nullptr && h.output == ModelOutput::kLogits;

  // A causal model runs the batch in micro-batches: the cache already holds room for every
  // token, and a token only attends to positions up to its own, written by its own or an earlier
  // micro-batch, so the results are those of one pass while the scratch buffers stay micro-batch
  // sized. Without causality a token attends to its whole sequence, so the batch is one pass.
  int64_t micro_batch = !h.causal ? n : h.is_moe() ? kMoeMicroBatchTokens : kMicroBatchTokens;
  if (h.causal && offload_ != nullptr && offload_->n_layers() == h.n_layer) {
    // Every layer on the device: larger micro-batches there (DeviceOffload::micro_batch_tokens).
    int32_t last_pos = 0;
    for (const auto& t : batch) last_pos = std::max(last_pos, t.pos);
    micro_batch = offload_->micro_batch_tokens(int64_t{last_pos} + 1, micro_batch);
  }
  int64_t n_out = 0;
  for (const auto& t : batch) n_out += t.output ? 1 : 0;
  if (want_logits) logits->resize(static_cast<size_t>(n_out * h.n_vocab));
  if (hidden != nullptr) hidden->resize(static_cast<size_t>(n * d));
  int64_t out_done = 0;
  for (int64_t start = 0; start < n; start += micro_batch) {
    const int64_t len = std::min(micro_batch, n - start);
    const auto sub = batch.subspan(static_cast<size_t>(start), static_cast<size_t>(len));
    float* out = want_logits ? logits->data() + out_done * h.n_vocab : nullptr;
    // Every layer and the output layer on the device: the logits come back with the layers,
    // in the step's one submission (the hidden states stay there).
    const bool device_logits = out != nullptr && hidden == nullptr && offload_ != nullptr && offload_->has_output();
    HEARTH_TRY(run_layers(sub, kv, device_logits ? out : nullptr));
    if (hidden != nullptr) std::copy(x_.begin(), x_.begin() + len * d, hidden->begin() + start * d);
    if (device_logits) {
      int64_t rows = 0;
      for (const auto& t : sub) rows += t.output ? 1 : 0;
      if (h.final_softcap > 0) kernels::softcap(out, h.final_softcap, rows * h.n_vocab);
      out_done += rows;
    } else if (want_logits) {
      HEARTH_TRY(compute_logits(sub, out, &out_done));
    }
  }
  return ok_status();
}

void ForwardPass::reserve_scratch(int64_t n) {
  const auto& h = model_.hparams();
  const int64_t d = h.n_embd;
  grow(x_, static_cast<size_t>(n * d));
  grow(xn_, static_cast<size_t>(n * d));
  grow(tmp_, static_cast<size_t>(n * d));
  grow(q_, static_cast<size_t>(n * h.n_head * h.head_dim_k));
  grow(k_, static_cast<size_t>(n * h.n_head_kv * h.head_dim_k));
  grow(v_, static_cast<size_t>(n * h.n_head_kv * h.head_dim_v));
  grow(attn_, static_cast<size_t>(n * h.n_head * h.head_dim_v));
  // gate_ and up_ (the dense FFN's) grow in ffn_block: a model whose every layer is a mixture
  // of experts never touches them (Qwen3-30B-A3B's unused n_ff 6144 would hold 24 MiB at 512
  // tokens).
}

size_t ForwardPass::scratch_bytes() const {
  size_t total = mm_scratch_.activations.capacity() + mm_scratch_.plan.capacity() * sizeof(int64_t) +
                 embd_row_.capacity() + moe_route_.capacity() * sizeof(int32_t) +
                 moe_rows_.capacity() * sizeof(int32_t) + moe_jobs_.capacity() * sizeof(kernels::GroupedMatmulJob) +
                 attend_items_.capacity() * sizeof(AttendItem) + split_tokens_.capacity() * sizeof(SplitToken) +
                 (merge_parts_.capacity() + merge_stats_.capacity()) * sizeof(const float*);
  for (const auto* v : {&x_, &xn_, &q_, &k_, &v_, &qkv_, &attn_, &tmp_, &gate_, &up_, &out_rows_, &moe_scores_,
                        &moe_weight_, &moe_x_, &moe_gate_, &moe_up_, &moe_y_, &moe_slots_, &part_out_, &part_stats_}) {
    total += v->capacity() * sizeof(float);
  }
  for (const AttentionScratch& a : attn_scratch_) {
    total += a.scores.capacity() * sizeof(float) + (a.k_blocks.capacity() + a.v_blocks.capacity()) * sizeof(const uint8_t*);
  }
  return total;
}

Status ForwardPass::run_layers(std::span<const BatchToken> batch, kv::KvCache& kv, float* device_logits) {
  const auto& h = model_.hparams();
  reserve_scratch(static_cast<int64_t>(batch.size()));
  embed(batch);
  int32_t first_cpu_layer = 0;
  if (offload_ != nullptr && offload_->n_layers() > 0) {
    HEARTH_TRY(offload_->run(batch, kv, x_.data(), device_logits));
    first_cpu_layer = offload_->n_layers();
  }
  for (int32_t il = first_cpu_layer; il < h.n_layer && status_.ok(); ++il) {
    if (h.norm_placement == NormPlacement::kPost) {
      post_norm_layer(il, batch, kv);
    } else {
      pre_norm_layer(il, batch, kv);
    }
  }
  return status_;
}

Status ForwardPass::compute_logits(std::span<const BatchToken> batch, float* out, int64_t* n_done) {
  const auto& h = model_.hparams();
  const auto& w = model_.weights();
  const int64_t d = h.n_embd;
  int64_t n_out = 0;
  grow(out_rows_, batch.size() * static_cast<size_t>(d));
  // With the output layer on the device the rows go there un-normed: the device norms them.
  const bool on_device = offload_ != nullptr && offload_->has_output();
  for (size_t t = 0; t < batch.size(); ++t) {
    if (!batch[t].output) continue;
    const float* x = x_.data() + static_cast<int64_t>(t) * d;
    if (on_device) {
      std::copy(x, x + d, out_rows_.data() + n_out * d);
    } else {
      norm_row(x, w.output_norm, w.output_norm_b, out_rows_.data() + n_out * d);
    }
    ++n_out;
  }
  if (n_out == 0) return ok_status();
  if (on_device) {
    HEARTH_TRY(offload_->logits(out_rows_.data(), n_out, out));
  } else {
    HEARTH_TRY(matmul(w.output, out_rows_.data(), n_out, out));
  }
  if (h.final_softcap > 0) kernels::softcap(out, h.final_softcap, n_out * h.n_vocab);
  *n_done += n_out;
  return ok_status();
}

}  // namespace hearth::model
