// A model's hyper-parameters as read from GGUF metadata (<arch>.block_count and friends),
// with each architecture's defaults and quirks resolved, so the forward pass reads plain
// fields and never looks at metadata keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/ops.h"
#include "util/result.h"

namespace hearth::model {

enum class Arch { kLlama, kQwen2, kQwen3, kGemma2, kPhi3, kBert, kQwen3Moe, kGemma3, kGptOss };

enum class PoolingType { kNone = 0, kMean = 1, kCls = 2, kLast = 3 };

// The activation of the FFN's gate (or of its up projection when it has no gate).
// kSwigluClamped (gpt-oss): g = min(gate, limit), act = g * sigmoid(alpha * g) * (clamp(up,
// -limit, limit) + 1), applied to gate and up together (see ForwardPass::gated_activation).
enum class ActivationKind { kSilu, kGelu, kSwigluClamped };

// How a mixture-of-experts router turns its logits into the chosen experts' weights.
enum class ExpertGating {
  kSoftmax,         // softmax over all experts, top-k of the probabilities (qwen3moe, deepseek2 v2)
  kSigmoid,         // sigmoid per expert, top-k of those (deepseek2 v3, llama4)
  kSoftmaxOfTopK,   // top-k of the logits, softmax over the chosen k only (gpt-oss)
};

// The mixture-of-experts FFN of a model (n_expert == 0: the FFN is dense). Shared experts
// (deepseek2, llama4, qwen2moe) run on every token beside the routed ones.
struct MoeHparams {
  int32_t n_expert = 0;
  int32_t n_expert_used = 0;     // k of the top-k
  int32_t n_ff_expert = 0;       // rows of each expert's gate and up matrices
  int32_t n_ff_shared = 0;       // rows of the shared expert's matrices (0: none)
  ExpertGating gating = ExpertGating::kSoftmax;
  bool norm_weights = false;     // divide the chosen weights by their sum (kSoftmax, kSigmoid)
  float weights_scale = 1.0f;    // multiplies every chosen weight
};

// The normalisation every norm weight of the model applies (QK norms are always RMSNorm).
enum class NormKind {
  kRms,    // RMSNorm: weight only
  kLayer,  // LayerNorm: mean and variance, weight and bias
};

// Where a layer's norms sit around its attention and FFN blocks.
enum class NormPlacement {
  kPre,   // x += block(norm(x)) (the decoders)
  kPost,  // x = norm(x + block(x)) (bert)
};

// How a token's position enters the model.
enum class PositionEncoding {
  kRope,     // Q and K rotated by position (kernels::rope)
  kLearned,  // a row of position_embd added to the token's embedding (bert)
};

// What the forward pass leaves for the caller.
enum class ModelOutput {
  kLogits,        // next-token logits of the tokens that ask (decoders)
  kHiddenStates,  // every token's final hidden state, for pooling into embeddings (encoders)
};

// Every field is filled once by load_hparams, from the metadata and the architecture's row in
// its table of traits; the forward pass reads these fields and never asks which architecture
// it runs.
struct ModelHparams {
  Arch arch = Arch::kLlama;  // for loading (weight binding) and messages only
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
  float norm_eps = 1e-5f;           // eps of the norm_kind norms
  NormKind norm_kind = NormKind::kRms;
  NormPlacement norm_placement = NormPlacement::kPre;
  ActivationKind ffn_activation = ActivationKind::kSilu;
  PositionEncoding position_encoding = PositionEncoding::kRope;
  kernels::RopeParams rope;         // style, dims, base, scale, YaRN (position_encoding kRope)
  int32_t n_pos_max = 0;            // positions a token may take (0: no limit); kLearned: n_ctx_train
  ModelOutput output = ModelOutput::kLogits;
  float attn_softcap = 0.0f;        // gemma2
  float final_softcap = 0.0f;       // gemma2
  int32_t sliding_window = 0;       // 0: none
  // Which layers use the sliding window (n_layer entries, empty when none): from the
  // architecture's fixed pattern or <arch>.attention.sliding_window_pattern.
  std::vector<bool> sliding_layers;
  // RoPE of the sliding-window layers when it differs from `rope` (gemma3: base 10000, no
  // scaling); swa_rope_differs false: every layer uses `rope`.
  bool swa_rope_differs = false;
  kernels::RopeParams rope_swa;
  float swiglu_alpha = 1.702f;      // kSwigluClamped (gpt-oss's fixed values)
  float swiglu_limit = 7.0f;        // kSwigluClamped
  MoeHparams moe;
  float embed_scale = 1.0f;         // gemma: sqrt(n_embd)
  float attn_scale = 0.0f;          // 0: 1/sqrt(head_dim_k)
  bool causal = true;               // false: every token attends to its whole sequence
  PoolingType pooling = PoolingType::kNone;

  bool layer_is_sliding(int32_t il) const {
    return sliding_window > 0 && il >= 0 && static_cast<size_t>(il) < sliding_layers.size() &&
           sliding_layers[static_cast<size_t>(il)];
  }
  bool is_moe() const { return moe.n_expert > 0; }
};

// Supported values of general.architecture.
Result<Arch> arch_from_name(const std::string& name);
const char* arch_name(Arch arch);

// Reads and checks the hyper-parameters (positive sizes, head counts that divide, ...).
// n_vocab comes from the token embedding's shape, so the caller passes it.
Result<ModelHparams> load_hparams(const gguf::File& file, int32_t n_vocab);

}  // namespace hearth::model
