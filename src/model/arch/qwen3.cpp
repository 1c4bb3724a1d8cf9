// qwen3: the llama graph with a per-head RMSNorm of Q and K before RoPE (NeoX style).
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_qk_norms(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  for (int32_t il = 0; il < h.n_layer; ++il) {
    LayerWeights& L = w.layers[static_cast<size_t>(il)];
    HEARTH_ASSIGN(L.q_norm, b.vector(layer_tensor(il, "attn_q_norm.weight"), h.head_dim_k));
    HEARTH_ASSIGN(L.k_norm, b.vector(layer_tensor(il, "attn_k_norm.weight"), h.head_dim_k));
  }
  return ok_status();
}

Status bind_qwen3(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  HEARTH_TRY(bind_decoder_common(h, b, w, true, true));
  return bind_qk_norms(h, b, w);
}

}  // namespace hearth::model
