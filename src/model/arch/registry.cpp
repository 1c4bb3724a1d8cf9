// Maps each architecture to its binder.
#include "model/arch/arch_binders.h"

namespace hearth::model {

Status bind_weights(const ModelHparams& h, WeightBinder& binder, ModelWeights& out) {
  switch (h.arch) {
    case Arch::kLlama: return bind_llama(h, binder, out);
    case Arch::kQwen2: return bind_qwen2(h, binder, out);
    case Arch::kQwen3: return bind_qwen3(h, binder, out);
    case Arch::kGemma2: return bind_gemma2(h, binder, out);
    case Arch::kPhi3: return bind_phi3(h, binder, out);
    case Arch::kBert: return bind_bert(h, binder, out);
    case Arch::kQwen3Moe: return bind_qwen3moe(h, binder, out);
    case Arch::kGemma3: return bind_gemma3(h, binder, out);
    case Arch::kGptOss: return bind_gpt_oss(h, binder, out);
  }
  return make_error(ErrorKind::kUnsupported, "no weight binder for this architecture");
}

}  // namespace hearth::model
