// The forward pass: runs one batch of tokens (from one or several sequences, each at its own
// positions) through the model, writing K/V into the paged cache and producing logits for the
// tokens that ask for them (decoders) or hidden states for every token (encoders). Scratch
// buffers are owned here and reused, so steady-state decoding does not allocate.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/ops.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "util/result.h"
#include "util/thread_pool.h"

namespace hearth::model {

struct BatchToken {
  int32_t token = 0;
  int32_t seq = 0;
  int32_t pos = 0;      // must continue the sequence: its first token here is at seq_length(seq)
  bool output = false;  // produce logits for this token
};

// Sees each token's expert choice in each mixture-of-experts layer and may replace it: tracing
// records the routing, and a comparison with another engine imposes that engine's choices so
// that a near-tie in the router (a discontinuity) does not hide how close the rest is.
class RouterObserver {
 public:
  virtual ~RouterObserver() = default;
  // scores: the router's n_expert selection scores for the token (after the gating function,
  // before any bias-free renormalisation); chosen: the k experts picked, best first. The
  // observer may overwrite chosen with other distinct expert ids; their weights then follow
  // from the scores as for the original choice.
  virtual void on_route(int32_t layer, const BatchToken& token, std::span<const float> scores,
                        std::span<int32_t> chosen) = 0;
};
class DeviceOffload;

class ForwardPass {
 public:
  // n_ctx_per_seq: the most tokens one sequence may hold in this context (0: the model's
  // training context); it selects LongRoPE factors (see Model::rope_params).
  ForwardPass(const Model& model, ThreadPool& pool, int32_t n_ctx_per_seq = 0)
      : model_(model), pool_(pool), rope_(model.rope_params(n_ctx_per_seq)),
        rope_swa_(model.hparams().swa_rope_differs ? model.hparams().rope_swa : rope_) {}

  // Decoders: logits of the output tokens, in batch order, n_vocab floats each.
  // Encoders: `hidden` gets every token's final hidden state (n_embd floats each).
  // On error nothing is appended to the cache.
  Status run(std::span<const BatchToken> batch, kv::KvCache& kv, std::vector<float>* logits,
             std::vector<float>* hidden = nullptr);

  // Called for every routed token of every MoE layer (null: none). Not owned.
  void set_router_observer(RouterObserver* observer) { router_observer_ = observer; }
  // Runs the first offload->n_layers() layers on its device (null: every layer on the CPU).
  // The offload must have been made for this model and for kv's pool; it outlives the pass.
  void set_offload(DeviceOffload* offload) { offload_ = offload; }

  // Bytes the pass's reusable scratch buffers hold now (their capacities, every thread's
  // attention scratch included). Prefill runs in micro-batches with flash tiles, so this stays
  // flat as prompts grow, but for a few block pointers per 16 tokens: nothing grows with n^2.
  size_t scratch_bytes() const;

 private:
  // Largest run of tokens of a causal model sent through the layers together (see run()).
  static constexpr int64_t kMicroBatchTokens = 128;

  // Widths of one token's attention rows: queries, keys, values and the heads' outputs.
  struct AttentionDims {
    int64_t q, k, v, o;
  };

  Status validate_and_reserve(std::span<const BatchToken> batch, kv::KvCache& kv);
  void reserve_scratch(int64_t n);
  // One micro-batch through the embeddings and every layer (hidden states left in x_).
  // device_logits: the offload runs every layer and the output layer and leaves the batch's
  // logits there (x_ then holds the embeddings only).
  Status run_layers(std::span<const BatchToken> batch, kv::KvCache& kv, float* device_logits = nullptr);
  // Logits of the batch's output tokens into out; adds their count to *n_done.
  Status compute_logits(std::span<const BatchToken> batch, float* out, int64_t* n_done);
  // Token embeddings into x_ (scaled, plus learned positions and token types, normed when the
  // model has an embedding norm).
  void embed(std::span<const BatchToken> batch);
  // y = norm(x) with the model's norm kind over n_embd floats; bias is read by LayerNorm only.
  void norm_row(const float* x, const float* weight, const float* bias, float* y) const;
  // x += attn(norm(x)); x += ffn(norm(x)) (each block's output optionally normed first).
  void pre_norm_layer(int32_t il, std::span<const BatchToken> batch, kv::KvCache& kv);
  // x = norm(x + attn(x)); x = norm(x + ffn(x)) (post_norm_layer.cpp).
  void post_norm_layer(int32_t il, std::span<const BatchToken> batch, kv::KvCache& kv);

  // The attention block, from xn_ to tmp_ (attention_block.cpp), in the order it runs:
  void attention_block(int32_t il, std::span<const BatchToken> batch, kv::KvCache& kv);
  AttentionDims attention_dims() const;
  // xn_ -> q_, k_, v_ (one fused matrix or three), plus biases.
  void project_qkv(const LayerWeights& L, int64_t n, const AttentionDims& dims);
  // Per-head RMSNorm of one token's query and key heads (when the layer has QK norms).
  void norm_qk_heads(const LayerWeights& L, float* q, float* k) const;
  // Rotates one token's query and key heads by its position, with the layer's RoPE settings.
  void rope_qk(int32_t il, float* q, float* k, int32_t pos) const;
  // Writes one token's key and value rows into the cache at its position.
  void store_kv(int32_t il, const BatchToken& token, const float* k, const float* v, kv::KvCache& kv,
                const AttentionDims& dims);
  // q_ and the cache -> attn_: every token's heads over its sequence, split over the pool.
  void attend(int32_t il, std::span<const BatchToken> batch, kv::KvCache& kv, const AttentionDims& dims);
  // attn_ -> tmp_ through the output projection, plus its bias.
  void project_output(const LayerWeights& L, int64_t n);

  // x_ normed in xn_ -> tmp_: act(gate) * up, or act(up) without a gate, then down.
  void ffn_block(int32_t il, int64_t n);
  // The mixture-of-experts FFN (moe_block.cpp), xn_ -> tmp_: route every token, run each
  // expert once over the tokens that chose it, combine with the routing weights.
  void moe_block(int32_t il, std::span<const BatchToken> batch);
  // Router logits -> each token's k experts (best first) and weights in moe_route_/moe_weight_.
  void route_tokens(int32_t il, std::span<const BatchToken> batch);
  // Decode-sized batches: all chosen experts at once (gate and up of every expert in one pass
  // over the pool, then down in another), leaving each (token, slot)'s output in moe_slots_.
  void run_experts_grouped(const MoeWeights& moe, int64_t n_tokens);
  // One expert (gate/up/down views plus optional bias rows) over the n_rows rows of x;
  // leaves n_rows rows of n_embd floats in moe_y_.
  void run_expert(const kernels::WeightView& gate, const kernels::WeightView& up, const kernels::WeightView& down,
                  const float* gate_b, const float* up_b, const float* down_b, const float* x, int64_t n_rows);
  // Row `row` of an embedding table, dequantized into out (see forward.cpp for why it reads).
  Status embedding_row(const kernels::WeightView& table, int64_t row, float* out);
  // gate = act(gate) * up over n floats (or the clamped SwiGLU of both).
  void gated_activation(float* gate, const float* up, int64_t n) const;
  Status matmul(const kernels::WeightView& w, const float* x, int64_t n, float* y);
  // y[t] += bias for each of n rows of width floats (nothing when bias is null).
  static void add_bias_rows(float* y, const float* bias, int64_t n, int64_t width);

  DeviceOffload* offload_ = nullptr;
  const Model& model_;
  ThreadPool& pool_;
  kernels::RopeParams rope_;  // the model's RoPE with the frequency factors for this context
  kernels::MatmulScratch mm_scratch_;
  std::vector<uint8_t> embd_row_;  // one row of the token embedding, read from the file
  std::vector<float> x_, xn_, q_, k_, v_, qkv_, attn_, tmp_, gate_, up_, out_rows_;
  kernels::RopeParams rope_swa_;  // the sliding-window layers' RoPE (equals rope_ unless it differs)
  // MoE scratch: router outputs, each token's chosen experts and weights (k per token), the
  // gathered rows of one expert, its intermediate and output rows, each (token, slot) output.
  std::vector<float> moe_scores_, moe_weight_, moe_x_, moe_gate_, moe_up_, moe_y_, moe_slots_;
  std::vector<int32_t> moe_route_, moe_rows_;
  std::vector<kernels::GroupedMatmulJob> moe_jobs_;
  RouterObserver* router_observer_ = nullptr;
  // Per-thread attention scratch: softmax scores and the block pointers of one sequence's KV
  // span in the current layer (rebuilt when a thread moves to another sequence).
  struct AttentionScratch {
    std::vector<float> scores;
    std::vector<const uint8_t*> k_blocks, v_blocks;
    // The attend() call and sequence whose blocks k_blocks/v_blocks hold: a layer's tables are
    // built once per thread, not once per work item (at 16k keys, 17 items of 1,024 blocks).
    uint64_t tables_call = 0;
    int32_t tables_seq = -1;
  };
  uint64_t attend_calls_ = 0;  // attend() calls so far (AttentionScratch::tables_call)
  std::vector<AttentionScratch> attn_scratch_;  // one per pool thread
  // One unit of attend()'s work: n_q > 1 consecutive tokens of one sequence from batch index
  // `first` for KV head `part` (a flash tile), or one token (n_q == 1) for head chunk `part`.
  // A single token may further cover only keys [key_part * kAttentionKeyPart, +kAttentionKeyPart)
  // into partial-result slot `slot` (-1: the whole span, straight into attn_).
  struct AttendItem {
    int32_t first = 0;
    int32_t n_q = 0;
    int32_t part = 0;
    int32_t key_part = 0;
    int32_t slot = -1;
    int32_t head_chunks = 1;  // a single-token item's heads: chunk `part` of this many
  };
  std::vector<AttendItem> attend_items_;
  // Decode steps split by keys: per (token, key part) slot, the part's output heads and per-head
  // {max, sum}; merged into attn_ after the parallel pass. split_tokens_: {batch index, first
  // slot, number of parts}.
  std::vector<float> part_out_, part_stats_;
  struct SplitToken {
    int32_t index, first_slot, n_parts;
  };
  std::vector<SplitToken> split_tokens_;
  std::vector<const float*> merge_parts_, merge_stats_;
  Status status_;                               // first error inside a block
};

// How attend() splits a batch over threads: each token's query heads are cut into this
// many contiguous ranges (chunk c of k covers heads [c*n_head/k, (c+1)*n_head/k)), so that a
// batch of fewer tokens than threads (a decode step has one) still gives every thread work.
// Heads are computed independently, so the split never changes the numbers.
int32_t attention_head_chunks(int64_t n_tokens, int32_t n_head, int n_threads);

// Runs of at least this many consecutive tokens of one sequence (prefill) take the flash tile
// path (kernels::attention_tile) in tiles of kAttentionTileTokens tokens, one work item per
// (tile, KV head); shorter runs (decode steps) take the per-token path. Both sizes are fixed,
// so the split, and the numbers, never depend on the thread count.
inline constexpr int32_t kAttentionTileMinRun = 2;
inline constexpr int32_t kAttentionTileTokens = 16;
// A per-token (decode) item whose sequence holds more keys than this is split into parts of
// this many keys, each over its own items, merged after (attention_merge), so that one long
// sequence's step keeps each part's scores in cache and spreads over every thread. Fixed, so
// results do not depend on the thread count.
inline constexpr int32_t kAttentionKeyPart = 1024;

}  // namespace hearth::model
