// llama (Llama 2/3, Mistral, SmolLM, TinyLlama): the plain decoder, RoPE in normal style,
// optional separate output matrix.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_llama(const ModelHparams& h, WeightBinder& b, ModelWeights& w) {
  return bind_decoder_common(h, b, w, /*separate_qkv=*/true, /*gated_ffn=*/true);
}

}  // namespace hearth::model
