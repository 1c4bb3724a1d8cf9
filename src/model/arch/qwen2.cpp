// qwen2: the llama graph with biases on the Q, K and V projections and NeoX RoPE.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_qwen2(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  HEARTH_TRY(bind_decoder_common(h, b, w, true, true));
  for (int32_t il = 0; il < h.n_layer; ++il) {
    LayerWeights& L = w.layers[static_cast<size_t>(il)];
    HEARTH_ASSIGN(L.bq, b.vector(layer_tensor(il, "attn_q.bias"), L.wq.rows));
    HEARTH_ASSIGN(L.bk, b.vector(layer_tensor(il, "attn_k.bias"), L.wk.rows));
    HEARTH_ASSIGN(L.bv, b.vector(layer_tensor(il, "attn_v.bias"), L.wv.rows));
  }
  return ok_status();
}

}  // namespace hearth::model
