// bert: an encoder for embeddings: token + position + token-type embeddings, LayerNorm, then
// post-LN layers with biased projections and a GELU FFN; no RoPE, bidirectional attention.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_bert(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  const int64_t d = h.n_embd;
  HEARTH_ASSIGN(w.token_embd, b.matrix("token_embd.weight", d, h.n_vocab));
  HEARTH_ASSIGN(w.position_embd, b.matrix("position_embd.weight", d, h.n_ctx_train));
  if (b.has("token_types.weight")) {
    // The number of token types is whatever the file holds (usually 2); type 0 is used.
    HEARTH_ASSIGN(w.token_types, b.optional_matrix("token_types.weight", d, 2));
  }
  HEARTH_ASSIGN(w.embd_norm, b.vector("token_embd_norm.weight", d));
  HEARTH_ASSIGN(w.embd_norm_b, b.vector("token_embd_norm.bias", d));
  w.layers.resize(static_cast<size_t>(h.n_layer));
  const int64_t qd = static_cast<int64_t>(h.n_head) * h.head_dim_k;
  const int64_t kd = static_cast<int64_t>(h.n_head_kv) * h.head_dim_k;
  const int64_t vd = static_cast<int64_t>(h.n_head_kv) * h.head_dim_v;
  for (int32_t il = 0; il < h.n_layer; ++il) {
    LayerWeights& L = w.layers[static_cast<size_t>(il)];
    HEARTH_ASSIGN(L.wq, b.matrix(layer_tensor(il, "attn_q.weight"), d, qd));
    HEARTH_ASSIGN(L.bq, b.vector(layer_tensor(il, "attn_q.bias"), qd));
    HEARTH_ASSIGN(L.wk, b.matrix(layer_tensor(il, "attn_k.weight"), d, kd));
    HEARTH_ASSIGN(L.bk, b.vector(layer_tensor(il, "attn_k.bias"), kd));
    HEARTH_ASSIGN(L.wv, b.matrix(layer_tensor(il, "attn_v.weight"), d, vd));
    HEARTH_ASSIGN(L.bv, b.vector(layer_tensor(il, "attn_v.bias"), vd));
    HEARTH_ASSIGN(L.wo, b.matrix(layer_tensor(il, "attn_output.weight"), static_cast<int64_t>(h.n_head) * h.head_dim_v, d));
    HEARTH_ASSIGN(L.bo, b.vector(layer_tensor(il, "attn_output.bias"), d));
    HEARTH_ASSIGN(L.attn_out_norm, b.vector(layer_tensor(il, "attn_output_norm.weight"), d));
    HEARTH_ASSIGN(L.attn_out_norm_b, b.vector(layer_tensor(il, "attn_output_norm.bias"), d));
    HEARTH_ASSIGN(L.ffn_up, b.matrix(layer_tensor(il, "ffn_up.weight"), d, h.n_ff));
    HEARTH_ASSIGN(L.ffn_up_b, b.vector(layer_tensor(il, "ffn_up.bias"), h.n_ff));
    HEARTH_ASSIGN(L.ffn_down, b.matrix(layer_tensor(il, "ffn_down.weight"), h.n_ff, d));
    HEARTH_ASSIGN(L.ffn_down_b, b.vector(layer_tensor(il, "ffn_down.bias"), d));
    HEARTH_ASSIGN(L.out_norm, b.vector(layer_tensor(il, "layer_output_norm.weight"), d));
    HEARTH_ASSIGN(L.out_norm_b, b.vector(layer_tensor(il, "layer_output_norm.bias"), d));
  }
  return ok_status();
}

}  // namespace hearth::model
