// The attention block of every layer, decoder or encoder, as the steps it runs in order:
// Q/K/V projection, per-head QK norm, RoPE, the K/V store into the paged cache, attention over
// each token's sequence, and the output projection. Architecture differences are fields of the
// hyper-parameters and optional weights (see hparams.h, weights.h).
#include <algorithm>
#include <cmath>

#include "model/forward.h"

namespace hearth::model {

int32_t attention_head_chunks(int64_t n_tokens, int32_t n_head, int n_threads) {
  if (n_tokens <= 0 || n_threads <= 1 || n_tokens >= n_threads || n_head <= 1) return 1;
  return static_cast<int32_t>(std::min<int64_t>((n_threads + n_tokens - 1) / n_tokens, n_head));
}

void ForwardPass::attention_block(int32_t il, std::span<const BatchToken> batch, kv::KvCache& kv) {
  const LayerWeights& L = model_.weights().layers[static_cast<size_t>(il)];
  const int64_t n = static_cast<int64_t>(batch.size());
  const AttentionDims dims = attention_dims();
  project_qkv(L, n, dims);
  for (int64_t t = 0; t < n; ++t) {
    const BatchToken& token = batch[static_cast<size_t>(t)];
    float* q = q_.data() + t * dims.q;
    float* k = k_.data() + t * dims.k;
    norm_qk_heads(L, q, k);
    rope_qk(il, q, k, token.pos);
    store_kv(il, token, k, v_.data() + t * dims.v, kv, dims);
  }
  attend(il, batch, kv, dims);
  project_output(L, n);
}

ForwardPass::AttentionDims ForwardPass::attention_dims() const {
  const auto& h = model_.hparams();
  return {static_cast<int64_t>(h.n_head) * h.head_dim_k, static_cast<int64_t>(h.n_head_kv) * h.head_dim_k,
          static_cast<int64_t>(h.n_head_kv) * h.head_dim_v, static_cast<int64_t>(h.n_head) * h.head_dim_v};
}

void ForwardPass::project_qkv(const LayerWeights& L, int64_t n, const AttentionDims& dims) {
  if (L.wqkv.data != nullptr) {
    const int64_t all = dims.q + dims.k + dims.v;
    if (qkv_.size() < static_cast<size_t>(n * all)) qkv_.resize(static_cast<size_t>(n * all));
    if (auto st = matmul(L.wqkv, xn_.data(), n, qkv_.data()); !st.ok()) status_ = st;
    for (int64_t t = 0; t < n; ++t) {
      const float* row = qkv_.data() + t * all;
      std::copy(row, row + dims.q, q_.data() + t * dims.q);
      std::copy(row + dims.q, row + dims.q + dims.k, k_.data() + t * dims.k);
      std::copy(row + dims.q + dims.k, row + all, v_.data() + t * dims.v);
    }
  } else {
    const kernels::MatmulJob jobs[] = {{&L.wq, q_.data()}, {&L.wk, k_.data()}, {&L.wv, v_.data()}};
    if (auto st = kernels::matmul_multi(jobs, xn_.data(), n, pool_, mm_scratch_); !st.ok()) status_ = st;
  }
  add_bias_rows(q_.data(), L.bq, n, dims.q);
  add_bias_rows(k_.data(), L.bk, n, dims.k);
  add_bias_rows(v_.data(), L.bv, n, dims.v);
}

void ForwardPass::norm_qk_heads(const LayerWeights& L, float* q, float* k) const {
  if (L.q_norm == nullptr) return;
  const auto& h = model_.hparams();
  for (int32_t hd = 0; hd < h.n_head; ++hd) {
    float* p = q + static_cast<int64_t>(hd) * h.head_dim_k;
    kernels::rms_norm(p, L.q_norm, p, h.head_dim_k, h.norm_eps);
  }
  for (int32_t hd = 0; hd < h.n_head_kv; ++hd) {
    float* p = k + static_cast<int64_t>(hd) * h.head_dim_k;
    kernels::rms_norm(p, L.k_norm, p, h.head_dim_k, h.norm_eps);
  }
}

void ForwardPass::rope_qk(int32_t il, float* q, float* k, int32_t pos) const {
  const auto& h = model_.hparams();
  if (h.position_encoding != PositionEncoding::kRope) return;
  const kernels::RopeParams& rope = h.layer_is_sliding(il) ? rope_swa_ : rope_;
  kernels::rope(q, h.n_head, h.head_dim_k, pos, rope);
  kernels::rope(k, h.n_head_kv, h.head_dim_k, pos, rope);
}

void ForwardPass::store_kv(int32_t il, const BatchToken& token, const float* k, const float* v, kv::KvCache& kv,
                           const AttentionDims& dims) {
  const DType kv_type = kv.pool().layout().type;
  if (kv_type == DType::kBF16) {  // pairs: the token's place in its blocks
    const int32_t offset = token.pos % kv.block_tokens();
    kernels::kv_store_key_paired(k, kv.k_block_at(il, token.seq, token.pos), kv.block_tokens(), offset, dims.k);
    kernels::kv_store_value_paired(v, kv.v_block_at(il, token.seq, token.pos), kv.block_tokens(),
                                   model_.hparams().head_dim_v, offset, dims.v);
    return;
  }
  if (kv.pool().layout().by_head) {  // K by element, V by head
    const int32_t offset = token.pos % kv.block_tokens();
    kernels::kv_store_key_transposed(k, kv.k_block_at(il, token.seq, token.pos), kv.block_tokens(), offset, dims.k);
    kernels::kv_store_value_by_head(v, kv.v_block_at(il, token.seq, token.pos), kv.block_tokens(),
                                    model_.hparams().head_dim_v, offset, dims.v);
    return;
  }
  (void)kernels::kv_store_row(kv_type, k, kv.k_row(il, token.seq, token.pos), dims.k);
  (void)kernels::kv_store_row(kv_type, v, kv.v_row(il, token.seq, token.pos), dims.v);
}

void ForwardPass::attend(int32_t il, std::span<const BatchToken> batch, kv::KvCache& kv, const AttentionDims& dims) {
  const auto& h = model_.hparams();
  const int64_t n = static_cast<int64_t>(batch.size());
  kernels::AttentionParams ap;
  ap.n_head = h.n_head;
  ap.n_head_kv = h.n_head_kv;
  ap.head_dim_k = h.head_dim_k;
  ap.head_dim_v = h.head_dim_v;
  ap.scale = h.attn_scale > 0 ? h.attn_scale : 1.0f / std::sqrt(static_cast<float>(h.head_dim_k));
  ap.softcap = h.attn_softcap;
  ap.window = h.layer_is_sliding(il) ? h.sliding_window : 0;
  ap.causal = h.causal;
  ap.sinks = model_.weights().layers[static_cast<size_t>(il)].attn_sinks;

  if (attn_scratch_.size() < static_cast<size_t>(pool_.size())) attn_scratch_.resize(static_cast<size_t>(pool_.size()));
  // Work items: prefill runs as (tile, KV head), the rest as (token, head chunk). Tiles are
  // listed from the end of each run, where causal tiles see the most keys, so that the dynamic
  // split hands out the longest items first.
  attend_items_.clear();
  split_tokens_.clear();
  int32_t n_slots = 0;
  // Attention sinks (gpt-oss) add a term to each softmax that the tile kernel does not know:
  // such layers take the per-token path (split by keys like any other, the merge adding the sink).
  const bool sinks = ap.sinks != nullptr;
  const bool tiles = !sinks && h.n_head_kv > 0 && h.n_head % h.n_head_kv == 0;
  int64_t loose_tokens = 0;
  for (int64_t t = 0; t < n;) {
    int64_t e = t + 1;
    while (e < n && batch[static_cast<size_t>(e)].seq == batch[static_cast<size_t>(t)].seq &&
           batch[static_cast<size_t>(e)].pos == batch[static_cast<size_t>(e - 1)].pos + 1) {
      ++e;
    }
    if (!tiles || e - t < kAttentionTileMinRun) loose_tokens += e - t;
    t = e;
  }
  const int32_t head_chunks = attention_head_chunks(loose_tokens, h.n_head, pool_.size());
  for (int64_t t = 0; t < n;) {
    int64_t e = t + 1;
    while (e < n && batch[static_cast<size_t>(e)].seq == batch[static_cast<size_t>(t)].seq &&
           batch[static_cast<size_t>(e)].pos == batch[static_cast<size_t>(e - 1)].pos + 1) {
      ++e;
    }
    if (tiles && e - t >= kAttentionTileMinRun) {
      for (int64_t tile_end = e; tile_end > t; tile_end -= kAttentionTileTokens) {
        const int64_t tile_begin = std::max(t, tile_end - kAttentionTileTokens);
        for (int32_t kvh = 0; kvh < h.n_head_kv; ++kvh) {
          attend_items_.push_back({static_cast<int32_t>(tile_begin), static_cast<int32_t>(tile_end - tile_begin), kvh});
        }
      }
    } else {
      for (int64_t i = t; i < e; ++i) {
        const BatchToken& bt = batch[static_cast<size_t>(i)];
        const int32_t n_kv = h.causal ? bt.pos + 1 : kv.seq_length(bt.seq);
        const int32_t n_parts = n_kv > kAttentionKeyPart ? (n_kv + kAttentionKeyPart - 1) / kAttentionKeyPart : 1;
        const int32_t first_slot = n_parts > 1 ? n_slots : -1;
        if (n_parts > 1) {
          split_tokens_.push_back({static_cast<int32_t>(i), n_slots, n_parts});
          n_slots += n_parts;
        }
        // With a key part per thread or more, each item takes every head of its part, so the
        // part's K and V rows are read whole, front to back, by one thread (split by heads as
        // well, two threads read alternate halves of the same rows).
        const int32_t chunks = n_parts >= pool_.size() ? 1 : head_chunks;
        for (int32_t kp = n_parts - 1; kp >= 0; --kp) {
          for (int32_t c = 0; c < chunks; ++c) {
            attend_items_.push_back({static_cast<int32_t>(i), 1, c, kp, n_parts > 1 ? first_slot + kp : -1, chunks});
          }
        }
      }
    }
    t = e;
  }
  if (part_out_.size() < static_cast<size_t>(n_slots) * static_cast<size_t>(dims.o)) {
    part_out_.resize(static_cast<size_t>(n_slots) * static_cast<size_t>(dims.o));
  }
  if (part_stats_.size() < static_cast<size_t>(n_slots) * 2 * static_cast<size_t>(h.n_head)) {
    part_stats_.resize(static_cast<size_t>(n_slots) * 2 * static_cast<size_t>(h.n_head));
  }
  // Everything the workers need, captured by one reference so the std::function the pool
  // takes does not allocate.
  struct Work {
    ForwardPass* self;
    std::span<const BatchToken> batch;
    kv::KvCache* kv;
    int32_t il;
    DType kv_type;
    const kernels::AttentionParams* ap;
    int64_t q_dim, o_dim;
    uint64_t call;
  } work{this, batch, &kv, il, kv.pool().layout().type, &ap, dims.q, dims.o, ++attend_calls_};
  pool_.parallel_for_dynamic(attend_items_.size(), 1, [&work](size_t begin, size_t end, int thread) {
    const auto& hp = work.self->model_.hparams();
    kv::KvBlockPool& blocks = work.kv->pool();
    AttentionScratch& scratch = work.self->attn_scratch_[static_cast<size_t>(thread)];
    int32_t span_seq = -1;  // the sequence whose blocks scratch.k_blocks/v_blocks hold
    kernels::KvSpan span;
    for (size_t i = begin; i < end; ++i) {
      const AttendItem& item = work.self->attend_items_[i];
      const auto& bt = work.batch[static_cast<size_t>(item.first)];
      if (bt.seq != span_seq) {
        if (scratch.tables_call != work.call || scratch.tables_seq != bt.seq) {
          auto table = work.kv->block_table(bt.seq, work.il);  // sliding layers: their own table
          scratch.k_blocks.resize(table.size());
          scratch.v_blocks.resize(table.size());
          for (size_t b = 0; b < table.size(); ++b) {
            scratch.k_blocks[b] = work.kv->k_block(work.il, table[b]);
            scratch.v_blocks[b] = work.kv->v_block(work.il, table[b]);
          }
          scratch.tables_call = work.call;
          scratch.tables_seq = bt.seq;
        }
        span.k_blocks = scratch.k_blocks.data();
        span.v_blocks = scratch.v_blocks.data();
        span.block_tokens = work.kv->block_tokens();
        span.k_row_bytes = blocks.k_row_bytes();
        span.v_row_bytes = blocks.v_row_bytes();
        span.type = work.kv_type;
        span.by_head = blocks.layout().by_head;
        span_seq = bt.seq;
      }
      const float* q = work.self->q_.data() + static_cast<int64_t>(item.first) * work.q_dim;
      float* out = work.self->attn_.data() + static_cast<int64_t>(item.first) * work.o_dim;
      if (item.n_q > 1) {
        kernels::AttentionTile tile;
        tile.q = q;
        tile.q_stride = work.q_dim;
        tile.out = out;
        tile.out_stride = work.o_dim;
        tile.q_pos0 = bt.pos;
        tile.n_q = item.n_q;
        // Causal: the keys up to the tile's last position; otherwise the whole sequence.
        tile.n_kv = hp.causal ? bt.pos + item.n_q : work.kv->seq_length(bt.seq);
        tile.kv_head = item.part;
        kernels::attention_tile(tile, span, *work.ap, scratch.scores);
        continue;
      }
      const int32_t n_kv = hp.causal ? bt.pos + 1 : work.kv->seq_length(bt.seq);
      const auto head_begin = static_cast<int32_t>(int64_t{item.part} * hp.n_head / item.head_chunks);
      const auto head_end = static_cast<int32_t>(int64_t{item.part + 1} * hp.n_head / item.head_chunks);
      if (item.slot < 0) {
        kernels::attention_heads(q, bt.pos, n_kv, span, *work.ap, head_begin, head_end, out, scratch.scores);
        continue;
      }
      const kernels::KeyPart key_part{item.key_part * kAttentionKeyPart, (item.key_part + 1) * kAttentionKeyPart,
                                      work.self->part_stats_.data() + static_cast<size_t>(item.slot) * 2 * hp.n_head};
      kernels::attention_heads_part(q, bt.pos, n_kv, span, *work.ap, head_begin, head_end, key_part,
                                    work.self->part_out_.data() + static_cast<size_t>(item.slot) * work.o_dim,
                                    scratch.scores);
    }
  });
  // The parts of split decode steps, merged head by head.
  const int32_t dv = h.head_dim_v;
  std::vector<const float*>& parts = merge_parts_;
  std::vector<const float*>& stats = merge_stats_;
  for (const SplitToken& st : split_tokens_) {
    for (int32_t hd = 0; hd < h.n_head; ++hd) {
      parts.clear();
      stats.clear();
      for (int32_t i = 0; i < st.n_parts; ++i) {
        const size_t slot = static_cast<size_t>(st.first_slot + i);
        parts.push_back(part_out_.data() + slot * static_cast<size_t>(dims.o) + static_cast<size_t>(hd) * dv);
        stats.push_back(part_stats_.data() + slot * 2 * static_cast<size_t>(h.n_head) + 2 * static_cast<size_t>(hd));
      }
      kernels::attention_merge(st.n_parts, parts.data(), stats.data(), dv,
                               attn_.data() + static_cast<int64_t>(st.index) * dims.o + static_cast<int64_t>(hd) * dv,
                               ap.sinks != nullptr ? ap.sinks[hd] : -INFINITY);
    }
  }
}

void ForwardPass::project_output(const LayerWeights& L, int64_t n) {
  if (auto st = matmul(L.wo, attn_.data(), n, tmp_.data()); !st.ok()) status_ = st;
  add_bias_rows(tmp_.data(), L.bo, n, model_.hparams().n_embd);
}

}  // namespace hearth::model
