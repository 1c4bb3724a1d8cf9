// phi3: fused QKV projection (Q rows, then K, then V) and fused gate/up projection (gate rows
// first), NeoX RoPE.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_phi3(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  const bool separate_qkv = b.has("blk.0.attn_q.weight");
  const bool gated_ffn = b.has("blk.0.ffn_gate.weight");
  HEARTH_TRY(bind_decoder_common(h, b, w, separate_qkv, gated_ffn));
  w.fused_gate_up = !b.has("blk.0.ffn_gate.weight");
  if (b.has("rope_factors_long.weight") || b.has("rope_factors_short.weight")) {
    return make_error(ErrorKind::kUnsupported, "phi3 LongRoPE (rope_factors_*) is not supported yet");
  }
  return ok_status();
}

}  // namespace hearth::model
