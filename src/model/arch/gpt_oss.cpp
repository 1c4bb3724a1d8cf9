// gpt-oss: biased Q/K/V/O projections, a learned attention sink per head, sliding-window
// attention on every other layer, and a mixture-of-experts FFN (biased router, softmax over
// the chosen experts' logits, biased experts with the clamped SwiGLU). The FFN's input norm
// is stored as post_attention_norm.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_gpt_oss(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  HEARTH_TRY(bind_decoder_common(h, b, w, true, true, "post_attention_norm.weight"));
  for (int32_t il = 0; il < h.n_layer; ++il) {
    LayerWeights& L = w.layers[static_cast<size_t>(il)];
    HEARTH_ASSIGN(L.bq, b.vector(layer_tensor(il, "attn_q.bias"), L.wq.rows));
    HEARTH_ASSIGN(L.bk, b.vector(layer_tensor(il, "attn_k.bias"), L.wk.rows));
    HEARTH_ASSIGN(L.bv, b.vector(layer_tensor(il, "attn_v.bias"), L.wv.rows));
    HEARTH_ASSIGN(L.bo, b.vector(layer_tensor(il, "attn_output.bias"), h.n_embd));
    HEARTH_ASSIGN(L.attn_sinks, b.vector(layer_tensor(il, "attn_sinks.weight"), h.n_head));
  }
  return ok_status();
}

}  // namespace hearth::model
