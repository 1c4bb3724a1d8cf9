// A model's hyper-parameters as read from GGUF metadata (<arch>.block_count and friends),
// with each architecture's defaults and quirks resolved, so the forward pass reads plain
// fields and never looks at metadata keys.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_file.h"
#include "kernels/ops.h"
#include "util/result.h"

namespace hearth::model {

enum class Arch { kLlama, kQwen2, kQwen3, kGemma2, kPhi3, kBert };

enum class PoolingType { kNone = 0, kMean = 1, kCls = 2, kLast = 3 };

struct ModelHparams {
  Arch arch = Arch::kLlama;
  std::string arch_name;
  int32_t n_vocab = 0;
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  int32_t n_ff = 0;
  int32_t n_ctx_train = 0;
  float norm_eps = 1e-5f;           // RMSNorm eps, or LayerNorm eps for bert
  kernels::RopeParams rope;         // style, dims, base, scale, YaRN
  bool use_rope = true;
  float attn_softcap = 0.0f;        // gemma2
  float final_softcap = 0.0f;       // gemma2
  int32_t sliding_window = 0;       // 0: none
  int32_t swa_period = 0;           // layer il is sliding when il % swa_period == 0 (gemma2: 2)
  float embed_scale = 1.0f;         // gemma: sqrt(n_embd)
  float attn_scale = 0.0f;          // 0: 1/sqrt(head_dim_k)
  bool causal = true;
  PoolingType pooling = PoolingType::kNone;

  bool layer_is_sliding(int32_t il) const {
    return sliding_window > 0 && swa_period > 0 && il % swa_period == 0;
  }
};

// Supported values of general.architecture.
Result<Arch> arch_from_name(const std::string& name);
const char* arch_name(Arch arch);

// Reads and checks the hyper-parameters (positive sizes, head counts that divide, ...).
// n_vocab comes from the token embedding's shape, so the caller passes it.
Result<ModelHparams> load_hparams(const gguf::File& file, int32_t n_vocab);

}  // namespace hearth::model
