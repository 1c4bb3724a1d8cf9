// Tensors shared by the decoder architectures (llama, qwen2, qwen3, gemma2, phi3, and the
// MoE and gemma3 decoders on top of them).
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_decoder_common(const ModelHparams& h, WeightBinder& b, ModelWeights& w, bool separate_qkv,
                           bool gated_ffn, const char* ffn_norm_name) {
  const int64_t d = h.n_embd;
  const int64_t q_dim = static_cast<int64_t>(h.n_head) * h.head_dim_k;
  const int64_t k_dim = static_cast<int64_t>(h.n_head_kv) * h.head_dim_k;
  const int64_t v_dim = static_cast<int64_t>(h.n_head_kv) * h.head_dim_v;
  const int64_t o_dim = static_cast<int64_t>(h.n_head) * h.head_dim_v;
  HEARTH_ASSIGN(w.token_embd, b.matrix("token_embd.weight", d, h.n_vocab));
  HEARTH_ASSIGN(w.output_norm, b.vector("output_norm.weight", d));
  if (b.has("output.weight")) {
    HEARTH_ASSIGN(w.output, b.matrix("output.weight", d, h.n_vocab));
  } else {
    w.output = w.token_embd;
  }
  HEARTH_ASSIGN(w.rope_freqs, b.optional_rope_factors("rope_freqs.weight", h.rope.rope_dims / 2));
  w.layers.resize(static_cast<size_t>(h.n_layer));
  for (int32_t il = 0; il < h.n_layer; ++il) {
    LayerWeights& L = w.layers[static_cast<size_t>(il)];
    HEARTH_ASSIGN(L.attn_norm, b.vector(layer_tensor(il, "attn_norm.weight"), d));
    if (separate_qkv) {
      HEARTH_ASSIGN(L.wq, b.matrix(layer_tensor(il, "attn_q.weight"), d, q_dim));
      HEARTH_ASSIGN(L.wk, b.matrix(layer_tensor(il, "attn_k.weight"), d, k_dim));
      HEARTH_ASSIGN(L.wv, b.matrix(layer_tensor(il, "attn_v.weight"), d, v_dim));
    } else {
      HEARTH_ASSIGN(L.wqkv, b.matrix(layer_tensor(il, "attn_qkv.weight"), d, q_dim + k_dim + v_dim));
    }
    HEARTH_ASSIGN(L.wo, b.matrix(layer_tensor(il, "attn_output.weight"), o_dim, d));
    HEARTH_ASSIGN(L.ffn_norm, b.vector(layer_tensor(il, ffn_norm_name), d));
    if (h.is_moe()) {
      HEARTH_TRY(bind_moe_ffn(h, b, il, L.moe));
      continue;
    }
    if (gated_ffn) {
      HEARTH_ASSIGN(L.ffn_gate, b.matrix(layer_tensor(il, "ffn_gate.weight"), d, h.n_ff));
      HEARTH_ASSIGN(L.ffn_up, b.matrix(layer_tensor(il, "ffn_up.weight"), d, h.n_ff));
    } else {
      HEARTH_ASSIGN(L.ffn_up, b.matrix(layer_tensor(il, "ffn_up.weight"), d, 2 * static_cast<int64_t>(h.n_ff)));
    }
    HEARTH_ASSIGN(L.ffn_down, b.matrix(layer_tensor(il, "ffn_down.weight"), h.n_ff, d));
  }
  return ok_status();
}

}  // namespace hearth::model
