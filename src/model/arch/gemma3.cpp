// gemma3 (text): gemma2's layer (scaled embeddings, norms after attention and FFN, GELU-gated
// FFN) with per-head QK norms, five sliding-window layers per global one, and separate RoPE
// settings for the two kinds of layer (see load_hparams).
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_gemma3(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  HEARTH_TRY(bind_gemma2(h, b, w));
  return bind_qk_norms(h, b, w);
}

}  // namespace hearth::model
