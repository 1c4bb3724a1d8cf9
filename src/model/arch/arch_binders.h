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

// The parts every decoder shares: embeddings, final norm, output (tied when absent), and
// per layer the attention/FFN norms, separate Q/K/V/O and gate/up/down projections.
Status bind_decoder_common(const ModelHparams& h, WeightBinder& b, ModelWeights& w, bool separate_qkv,
                           bool gated_ffn);

}  // namespace hearth::model
