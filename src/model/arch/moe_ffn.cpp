// The mixture-of-experts FFN tensors every MoE decoder names the same way (qwen3moe, gpt-oss;
// qwen2moe, deepseek2 and llama4 add the shared expert): the router, the 3-D expert tensors
// sliced into one matrix per expert, and the optional biases.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_moe_ffn(const ModelHparams& h, WeightBinder& b, int32_t il, MoeWeights& moe) {
  const int64_t d = h.n_embd;
  const int64_t ne = h.moe.n_expert;
  const int64_t ff = h.moe.n_ff_expert;
  HEARTH_ASSIGN(moe.gate_inp, b.matrix(layer_tensor(il, "ffn_gate_inp.weight"), d, ne));
  HEARTH_ASSIGN(moe.gate_inp_b, b.optional_vector(layer_tensor(il, "ffn_gate_inp.bias"), ne));
  HEARTH_ASSIGN(moe.gate, b.experts(layer_tensor(il, "ffn_gate_exps.weight"), d, ff, ne));
  HEARTH_ASSIGN(moe.up, b.experts(layer_tensor(il, "ffn_up_exps.weight"), d, ff, ne));
  HEARTH_ASSIGN(moe.down, b.experts(layer_tensor(il, "ffn_down_exps.weight"), ff, d, ne));
  HEARTH_ASSIGN(moe.gate_b, b.optional_vector(layer_tensor(il, "ffn_gate_exps.bias"), ne * ff));
  HEARTH_ASSIGN(moe.up_b, b.optional_vector(layer_tensor(il, "ffn_up_exps.bias"), ne * ff));
  HEARTH_ASSIGN(moe.down_b, b.optional_vector(layer_tensor(il, "ffn_down_exps.bias"), ne * d));
  if (h.moe.n_ff_shared > 0) {
    const int64_t fs = h.moe.n_ff_shared;
    HEARTH_ASSIGN(moe.gate_shexp, b.matrix(layer_tensor(il, "ffn_gate_shexp.weight"), d, fs));
    HEARTH_ASSIGN(moe.up_shexp, b.matrix(layer_tensor(il, "ffn_up_shexp.weight"), d, fs));
    HEARTH_ASSIGN(moe.down_shexp, b.matrix(layer_tensor(il, "ffn_down_shexp.weight"), fs, d));
  }
  return ok_status();
}

}  // namespace hearth::model
