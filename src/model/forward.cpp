// The decoder forward pass shared by llama, qwen2, qwen3, gemma2 and phi3; architecture
// differences are flags and optional weights (see forward.h, hparams.h, weights.h).
#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace hearth::model {
namespace {
void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}
void add_bias_rows(float* y, const float* bias, int64_t n, int64_t width) {
  if (bias == nullptr) return;
  for (int64_t t = 0; t < n; ++t) kernels::add(y + t * width, bias, width);
}
}  // namespace

int32_t attention_head_chunks(int64_t n_tokens, int32_t n_head, int n_threads) {
  if (n_tokens <= 0 || n_threads <= 1 || n_tokens >= n_threads || n_head <= 1) return 1;
  return static_cast<int32_t>(std::min<int64_t>((n_threads + n_tokens - 1) / n_tokens, n_head));
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
    if (h.arch == Arch::kBert && t.pos >= h.n_ctx_train) {
      return make_error(ErrorKind::kOutOfRange, "input longer than the model's " + std::to_string(h.n_ctx_train) +
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

void ForwardPass::embed(std::span<const BatchToken> batch) {
  const auto& h = model_.hparams();
  const auto& w = model_.weights();
  const int64_t d = h.n_embd;
  for (size_t t = 0; t < batch.size(); ++t) {
    float* row = x_.data() + static_cast<int64_t>(t) * d;
    auto st = kernels::get_row(w.token_embd, batch[t].token, row);
    if (!st.ok() && status_.ok()) status_ = st;
    if (h.embed_scale != 1.0f) kernels::scale(row, h.embed_scale, d);
  }
}

void ForwardPass::attention_block(int32_t il, std::span<const BatchToken> batch, kv::KvCache& kv) {
  const auto& h = model_.hparams();
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(il)];
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t q_dim = static_cast<int64_t>(h.n_head) * h.head_dim_k;
  const int64_t k_dim = static_cast<int64_t>(h.n_head_kv) * h.head_dim_k;
  const int64_t v_dim = static_cast<int64_t>(h.n_head_kv) * h.head_dim_v;
  const int64_t o_dim = static_cast<int64_t>(h.n_head) * h.head_dim_v;

  if (L.wqkv.data != nullptr) {
    const int64_t all = q_dim + k_dim + v_dim;
    grow(qkv_, static_cast<size_t>(n * all));
    if (auto st = matmul(L.wqkv, xn_.data(), n, qkv_.data()); !st.ok()) status_ = st;
    for (int64_t t = 0; t < n; ++t) {
      const float* row = qkv_.data() + t * all;
      std::copy(row, row + q_dim, q_.data() + t * q_dim);
      std::copy(row + q_dim, row + q_dim + k_dim, k_.data() + t * k_dim);
      std::copy(row + q_dim + k_dim, row + all, v_.data() + t * v_dim);
    }
  } else {
    const kernels::MatmulJob jobs[] = {{&L.wq, q_.data()}, {&L.wk, k_.data()}, {&L.wv, v_.data()}};
    if (auto st = kernels::matmul_multi(jobs, xn_.data(), n, pool_, mm_scratch_); !st.ok()) status_ = st;
  }
  add_bias_rows(q_.data(), L.bq, n, q_dim);
  add_bias_rows(k_.data(), L.bk, n, k_dim);
  add_bias_rows(v_.data(), L.bv, n, v_dim);

  const DType kv_type = kv.pool().layout().type;
  for (int64_t t = 0; t < n; ++t) {
    float* qt = q_.data() + t * q_dim;
    float* kt = k_.data() + t * k_dim;
    if (L.q_norm != nullptr) {
      for (int32_t hd = 0; hd < h.n_head; ++hd) {
        float* p = qt + static_cast<int64_t>(hd) * h.head_dim_k;
        kernels::rms_norm(p, L.q_norm, p, h.head_dim_k, h.norm_eps);
      }
      for (int32_t hd = 0; hd < h.n_head_kv; ++hd) {
        float* p = kt + static_cast<int64_t>(hd) * h.head_dim_k;
        kernels::rms_norm(p, L.k_norm, p, h.head_dim_k, h.norm_eps);
      }
    }
    if (h.use_rope) {
      kernels::rope(qt, h.n_head, h.head_dim_k, batch[static_cast<size_t>(t)].pos, rope_);
      kernels::rope(kt, h.n_head_kv, h.head_dim_k, batch[static_cast<size_t>(t)].pos, rope_);
    }
    const auto& bt = batch[static_cast<size_t>(t)];
    (void)kernels::kv_store_row(kv_type, kt, kv.k_row(il, bt.seq, bt.pos), k_dim);
    (void)kernels::kv_store_row(kv_type, v_.data() + t * v_dim, kv.v_row(il, bt.seq, bt.pos), v_dim);
  }

  kernels::AttentionParams ap;
  ap.n_head = h.n_head;
  ap.n_head_kv = h.n_head_kv;
  ap.head_dim_k = h.head_dim_k;
  ap.head_dim_v = h.head_dim_v;
  ap.scale = h.attn_scale > 0 ? h.attn_scale : 1.0f / std::sqrt(static_cast<float>(h.head_dim_k));
  ap.softcap = h.attn_softcap;
  ap.window = h.layer_is_sliding(il) ? h.sliding_window : 0;
  ap.causal = h.causal;

  if (attn_scratch_.size() < static_cast<size_t>(pool_.size())) attn_scratch_.resize(static_cast<size_t>(pool_.size()));
  const int32_t head_chunks = attention_head_chunks(n, h.n_head, pool_.size());
  // Everything the workers need, captured by one reference so the std::function the pool
  // takes does not allocate.
  struct Work {
    ForwardPass* self;
    std::span<const BatchToken> batch;
    kv::KvCache* kv;
    int32_t il;
    DType kv_type;
    int32_t head_chunks;
    const kernels::AttentionParams* ap;
    int64_t q_dim, o_dim;
  } work{this, batch, &kv, il, kv_type, head_chunks, &ap, q_dim, o_dim};
  pool_.parallel_for(static_cast<size_t>(n) * static_cast<size_t>(head_chunks),
                     [&work](size_t begin, size_t end, int thread) {
    const auto& hp = work.self->model_.hparams();
    kv::KvBlockPool& blocks = work.kv->pool();
    AttentionScratch& scratch = work.self->attn_scratch_[static_cast<size_t>(thread)];
    int32_t span_seq = -1;  // the sequence whose blocks scratch.k_blocks/v_blocks hold
    kernels::KvSpan span;
    for (size_t item = begin; item < end; ++item) {
      const size_t t = item / static_cast<size_t>(work.head_chunks);
      const int64_t chunk = static_cast<int64_t>(item % static_cast<size_t>(work.head_chunks));
      const auto& bt = work.batch[t];
      if (bt.seq != span_seq) {
        auto table = work.kv->block_table(bt.seq);
        scratch.k_blocks.resize(table.size());
        scratch.v_blocks.resize(table.size());
        for (size_t b = 0; b < table.size(); ++b) {
          scratch.k_blocks[b] = blocks.k_block(work.il, table[b]);
          scratch.v_blocks[b] = blocks.v_block(work.il, table[b]);
        }
        span.k_blocks = scratch.k_blocks.data();
        span.v_blocks = scratch.v_blocks.data();
        span.block_tokens = work.kv->block_tokens();
        span.k_row_bytes = blocks.k_row_bytes();
        span.v_row_bytes = blocks.v_row_bytes();
        span.type = work.kv_type;
        span_seq = bt.seq;
      }
      const int32_t n_kv = hp.causal ? bt.pos + 1 : work.kv->seq_length(bt.seq);
      const auto head_begin = static_cast<int32_t>(chunk * hp.n_head / work.head_chunks);
      const auto head_end = static_cast<int32_t>((chunk + 1) * hp.n_head / work.head_chunks);
      kernels::attention_heads(work.self->q_.data() + static_cast<int64_t>(t) * work.q_dim, bt.pos, n_kv, span,
                               *work.ap, head_begin, head_end,
                               work.self->attn_.data() + static_cast<int64_t>(t) * work.o_dim, scratch.scores);
    }
  });
  if (auto st = matmul(L.wo, attn_.data(), n, tmp_.data()); !st.ok()) status_ = st;
  add_bias_rows(tmp_.data(), L.bo, n, h.n_embd);
}

void ForwardPass::ffn_block(int32_t il, int64_t n) {
  const auto& h = model_.hparams();
  const auto& w = model_.weights();
  const LayerWeights& L = w.layers[static_cast<size_t>(il)];
  const int64_t ff = h.n_ff;
  const bool gelu_act = h.arch == Arch::kGemma2 || h.arch == Arch::kBert;
  if (w.fused_gate_up) {
    grow(up_, static_cast<size_t>(n * 2 * ff));
    if (auto st = matmul(L.ffn_up, xn_.data(), n, up_.data()); !st.ok()) status_ = st;
    for (int64_t t = 0; t < n; ++t) {
      float* g = up_.data() + t * 2 * ff;
      float* u = g + ff;
      gelu_act ? kernels::gelu(g, ff) : kernels::silu(g, ff);
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
      gelu_act ? kernels::gelu(gate_.data() + lo, hi - lo) : kernels::silu(gate_.data() + lo, hi - lo);
      kernels::mul(gate_.data() + lo, up_.data() + lo, hi - lo);
    });
  } else {
    if (auto st = matmul(L.ffn_up, xn_.data(), n, gate_.data()); !st.ok()) status_ = st;
    add_bias_rows(gate_.data(), L.ffn_up_b, n, ff);
    gelu_act ? kernels::gelu(gate_.data(), n * ff) : kernels::silu(gate_.data(), n * ff);
  }
  if (auto st = matmul(L.ffn_down, gate_.data(), n, tmp_.data()); !st.ok()) status_ = st;
  add_bias_rows(tmp_.data(), L.ffn_down_b, n, h.n_embd);
}

Status ForwardPass::run(std::span<const BatchToken> batch, kv::KvCache& kv, std::vector<float>* logits,
                        std::vector<float>* hidden) {
  const auto& h = model_.hparams();
  const auto& w = model_.weights();
  HEARTH_TRY(validate_and_reserve(batch, kv));
  status_ = ok_status();
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t d = h.n_embd;

  if (model_.is_encoder()) {
    reserve_scratch(n);
    embed(batch);
    const kernels::WeightView& pos = w.position_embd;
    std::vector<float> row(static_cast<size_t>(d));
    for (int64_t t = 0; t < n; ++t) {
      float* xt = x_.data() + t * d;
      if (w.token_types.data != nullptr) {
        (void)kernels::get_row(w.token_types, 0, row.data());
        kernels::add(xt, row.data(), d);
      }
      (void)kernels::get_row(pos, batch[static_cast<size_t>(t)].pos, row.data());
      kernels::add(xt, row.data(), d);
      kernels::layer_norm(xt, w.embd_norm, w.embd_norm_b, xt, d, h.norm_eps);
    }
    for (int32_t il = 0; il < h.n_layer && status_.ok(); ++il) bert_layer(il, batch, kv);
    if (!status_.ok()) return status_;
    if (hidden != nullptr) hidden->assign(x_.begin(), x_.begin() + n * d);
    return ok_status();
  }

  // Decoders run the batch in micro-batches: the cache already holds room for every token, and a
  // token only attends to positions up to its own, written by its own or an earlier micro-batch,
  // so the results are those of one pass while the scratch buffers stay micro-batch sized.
  int64_t n_out = 0;
  for (const auto& t : batch) n_out += t.output ? 1 : 0;
  if (logits != nullptr) logits->resize(static_cast<size_t>(n_out * h.n_vocab));
  if (hidden != nullptr) hidden->resize(static_cast<size_t>(n * d));
  int64_t out_done = 0;
  for (int64_t start = 0; start < n; start += kMicroBatchTokens) {
    const int64_t len = std::min(kMicroBatchTokens, n - start);
    const auto sub = batch.subspan(static_cast<size_t>(start), static_cast<size_t>(len));
    HEARTH_TRY(run_decoder(sub, kv));
    if (hidden != nullptr) std::copy(x_.begin(), x_.begin() + len * d, hidden->begin() + start * d);
    if (logits != nullptr) HEARTH_TRY(compute_logits(sub, logits->data() + out_done * h.n_vocab, &out_done));
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
  grow(gate_, static_cast<size_t>(n * h.n_ff));
  grow(up_, static_cast<size_t>(n * h.n_ff));
}

Status ForwardPass::run_decoder(std::span<const BatchToken> batch, kv::KvCache& kv) {
  const auto& h = model_.hparams();
  const auto& w = model_.weights();
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t d = h.n_embd;
  reserve_scratch(n);
  embed(batch);
  // Per-token steps between the matmuls, split over the pool when the batch has several tokens.
  auto each_token = [&](auto&& fn) {
    if (n == 1) {
      fn(int64_t{0});
      return;
    }
    pool_.parallel_for(static_cast<size_t>(n), [&](size_t begin, size_t end, int) {
      for (size_t t = begin; t < end; ++t) fn(static_cast<int64_t>(t));
    });
  };
  for (int32_t il = 0; il < h.n_layer && status_.ok(); ++il) {
    const LayerWeights& L = w.layers[static_cast<size_t>(il)];
    each_token([&](int64_t t) { kernels::rms_norm(x_.data() + t * d, L.attn_norm, xn_.data() + t * d, d, h.norm_eps); });
    attention_block(il, batch, kv);
    each_token([&](int64_t t) {
      float* a = tmp_.data() + t * d;
      if (L.post_attn_norm != nullptr) kernels::rms_norm(a, L.post_attn_norm, a, d, h.norm_eps);
      kernels::add(x_.data() + t * d, a, d);
      kernels::rms_norm(x_.data() + t * d, L.ffn_norm, xn_.data() + t * d, d, h.norm_eps);
    });
    ffn_block(il, n);
    each_token([&](int64_t t) {
      float* f = tmp_.data() + t * d;
      if (L.post_ffw_norm != nullptr) kernels::rms_norm(f, L.post_ffw_norm, f, d, h.norm_eps);
      kernels::add(x_.data() + t * d, f, d);
    });
  }
  return status_;
}

Status ForwardPass::compute_logits(std::span<const BatchToken> batch, float* out, int64_t* n_done) {
  const auto& h = model_.hparams();
  const auto& w = model_.weights();
  const int64_t d = h.n_embd;
  int64_t n_out = 0;
  grow(out_rows_, batch.size() * static_cast<size_t>(d));
  for (size_t t = 0; t < batch.size(); ++t) {
    if (!batch[t].output) continue;
    kernels::rms_norm(x_.data() + static_cast<int64_t>(t) * d, w.output_norm, out_rows_.data() + n_out * d, d,
                      h.norm_eps);
    ++n_out;
  }
  if (n_out == 0) return ok_status();
  HEARTH_TRY(matmul(w.output, out_rows_.data(), n_out, out));
  if (h.final_softcap > 0) kernels::softcap(out, h.final_softcap, n_out * h.n_vocab);
  *n_done += n_out;
  return ok_status();
}

}  // namespace hearth::model
