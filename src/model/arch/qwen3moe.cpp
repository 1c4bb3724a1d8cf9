// qwen3moe (Qwen3-30B-A3B, Qwen3-235B-A22B): the qwen3 attention (per-head QK norm, NeoX RoPE)
// with a mixture-of-experts FFN: softmax router, top-k renormalised over the chosen experts.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_qwen3moe(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  HEARTH_TRY(bind_decoder_common(h, b, w, true, true));
  return bind_qk_norms(h, b, w);
}

}  // namespace hearth::model
