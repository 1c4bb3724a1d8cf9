// gemma2: scaled input embeddings, norms after attention and FFN, GELU-gated FFN, soft-capped
// attention scores and logits, sliding-window attention on every other layer.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_gemma2(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  HEARTH_TRY(bind_decoder_common(h, b, w, true, true));
  for (int32_t il = 0; il < h.n_layer; ++il) {
    LayerWeights& L = w.layers[static_cast<size_t>(il)];
    HEARTH_ASSIGN(L.post_attn_norm, b.vector(layer_tensor(il, "post_attention_norm.weight"), h.n_embd));
    HEARTH_ASSIGN(L.post_ffw_norm, b.vector(layer_tensor(il, "post_ffw_norm.weight"), h.n_embd));
  }
  return ok_status();
}

}  // namespace hearth::model
