// One binder per architecture (one file each under arch/): which tensors the architecture
// has and their shapes. The forward pass is shared; these files are the data that differs.
#pragma once

#include "model/weights.h"

namespace hearth::model {

Status bind_llama(const ModelHparams& h, WeightBinder& b, ModelWeights& w);
Status bind_qwen2(const ModelHparams& h, WeightBinder& b, ModelWeights& w);
Status bind_qwen3(const ModelHparams& h, WeightBinder& b, ModelWeights& w);
Status bind_gemma2(const ModelHparams& h, WeightBinder& b, ModelWeights& w);
Status bind_phi3(const ModelHparams& h, WeightBinder& b, ModelWeights& w);
Status bind_bert(const ModelHparams& h, WeightBinder& b, ModelWeights& w);
Status bind_qwen3moe(const ModelHparams& h, WeightBinder& b, ModelWeights& w);
Status bind_gemma3(const ModelHparams& h, WeightBinder& b, ModelWeights& w);
Status bind_gpt_oss(const ModelHparams& h, WeightBinder& b, ModelWeights& w);

// The parts every decoder shares: embeddings, final norm, output (tied when absent), and
// per layer the attention/FFN norms, separate Q/K/V/O and gate/up/down projections; for a
// mixture-of-experts model (h.moe.n_expert > 0) the router and experts instead of the dense FFN.
Status bind_decoder_common(const ModelHparams& h, WeightBinder& b, ModelWeights& w, bool separate_qkv,
                           bool gated_ffn, const char* ffn_norm_name = "ffn_norm.weight");

// The mixture-of-experts FFN of layer il (moe_ffn.cpp): router ffn_gate_inp, experts
// ffn_{gate,up,down}_exps, their optional biases, and the optional shared expert *_shexp.
Status bind_moe_ffn(const ModelHparams& h, WeightBinder& b, int32_t il, MoeWeights& moe);

// Per layer, the per-head RMSNorm weights of Q and K (qwen3, qwen3moe, gemma3).
Status bind_qk_norms(const ModelHparams& h, WeightBinder& b, ModelWeights& w);

}  // namespace hearth::model
