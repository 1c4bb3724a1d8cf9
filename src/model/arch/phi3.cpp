// phi3: fused QKV projection (Q rows, then K, then V) and fused gate/up projection (gate rows
// first), NeoX RoPE; LongRoPE models (Phi-3 128k, Phi-3.5, Phi-4-mini) add long and short
// per-dimension frequency factors.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_phi3(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  const bool separate_qkv = b.has("blk.0.attn_q.weight");
  const bool gated_ffn = b.has("blk.0.ffn_gate.weight");
  HEARTH_TRY(bind_decoder_common(h, b, w, separate_qkv, gated_ffn));
  w.fused_gate_up = !b.has("blk.0.ffn_gate.weight");
  HEARTH_ASSIGN(w.rope_factors_long, b.optional_rope_factors("rope_factors_long.weight", h.rope.rope_dims / 2));
  HEARTH_ASSIGN(w.rope_factors_short, b.optional_rope_factors("rope_factors_short.weight", h.rope.rope_dims / 2));
  return ok_status();
}

}  // namespace hearth::model
