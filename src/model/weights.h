// The model's weights bound by tensor name, with shapes checked against the hyper-parameters.
// Matrices are views into the mmapped file (until weight_interleaving.h moves them); 1-D
// tensors (norms, biases) are copied into owned float buffers. A missing or mis-shaped tensor is
// an error that names it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/ops.h"
#include "model/hparams.h"
#include "util/result.h"

namespace hearth::model {

// A mixture-of-experts FFN: the router and, per expert, views of its slice of the 3-D
// ffn_{gate,up,down}_exps tensors (expert e is slice e along the last dimension, a matrix
// like any other), with optional per-expert biases and an optional shared expert.
struct MoeWeights {
  kernels::WeightView gate_inp;  // router: n_expert rows of n_embd
  const float* gate_inp_b = nullptr;
  std::vector<kernels::WeightView> gate, up, down;  // n_expert each
  const float* gate_b = nullptr;  // n_expert rows of n_ff_expert (gpt-oss)
  const float* up_b = nullptr;
  const float* down_b = nullptr;  // n_expert rows of n_embd
  kernels::WeightView gate_shexp, up_shexp, down_shexp;  // shared expert (empty: none)
  bool present() const { return !gate.empty() || !up.empty(); }
};

struct LayerWeights {
  const float* attn_norm = nullptr;
  const float* attn_norm_b = nullptr;
  kernels::WeightView wq, wk, wv, wqkv, wo;  // wqkv: fused (phi3); wq/wk/wv empty then
  const float* bq = nullptr;
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* bo = nullptr;
  const float* q_norm = nullptr;  // per-head RMSNorm of Q and K (qwen3)
  const float* k_norm = nullptr;
  const float* post_attn_norm = nullptr;  // gemma2
  const float* attn_out_norm = nullptr;   // bert post-LN after attention
  const float* attn_out_norm_b = nullptr;
  const float* ffn_norm = nullptr;
  kernels::WeightView ffn_gate, ffn_up, ffn_down;  // ffn_gate empty: no gate, or fused in up (phi3)
  const float* ffn_up_b = nullptr;
  const float* ffn_down_b = nullptr;
  const float* post_ffw_norm = nullptr;  // gemma2
  const float* out_norm = nullptr;       // bert post-LN after the FFN
  const float* out_norm_b = nullptr;
  const float* attn_sinks = nullptr;     // gpt-oss: one sink logit per query head
  MoeWeights moe;                        // empty unless hparams.moe.n_expert > 0
};

struct ModelWeights {
  kernels::WeightView token_embd;
  kernels::WeightView position_embd;  // bert
  kernels::WeightView token_types;    // bert
  const float* embd_norm = nullptr;   // bert
  const float* embd_norm_b = nullptr;
  const float* output_norm = nullptr;
  const float* output_norm_b = nullptr;
  kernels::WeightView output;  // equals token_embd when tied
  bool fused_gate_up = false;  // phi3: ffn_up holds gate rows then up rows
  const float* rope_freqs = nullptr;  // per-dimension RoPE divisors (Llama 3.1+), rope_dims/2 floats
  // LongRoPE (phi3) per-dimension divisors, rope_dims/2 floats each: long for contexts beyond
  // the original training context, short otherwise (see Model::rope_params)
  const float* rope_factors_long = nullptr;
  const float* rope_factors_short = nullptr;
  std::vector<LayerWeights> layers;
};

// Looks tensors up by name and checks their shapes; owns float copies of the 1-D tensors.
class WeightBinder {
 public:
  explicit WeightBinder(const gguf::File& file) : file_(file) {}

  // A matrix with `cols` elements per row and `rows` rows (GGUF shape [cols, rows]).
  Result<kernels::WeightView> matrix(const std::string& name, int64_t cols, int64_t rows);
  Result<kernels::WeightView> optional_matrix(const std::string& name, int64_t cols, int64_t rows);
  // A 1-D tensor of n elements as floats.
  Result<const float*> vector(const std::string& name, int64_t n);
  Result<const float*> optional_vector(const std::string& name, int64_t n);
  // The n_expert matrices of a 3-D expert tensor (GGUF shape [cols, rows, n_expert]), one view
  // per expert; an error names the tensor when it is missing or its expert count differs.
  Result<std::vector<kernels::WeightView>> experts(const std::string& name, int64_t cols, int64_t rows,
                                                   int64_t n_expert);
  // An optional vector of RoPE frequency divisors: every element must be finite and positive.
  Result<const float*> optional_rope_factors(const std::string& name, int64_t n);
  bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

  std::vector<std::unique_ptr<std::vector<float>>> take_owned() { return std::move(owned_); }

 private:
  const gguf::File& file_;
  std::vector<std::unique_ptr<std::vector<float>>> owned_;
};

// Binds every tensor the architecture needs (dispatches to arch/<arch>.cpp).
Status bind_weights(const ModelHparams& h, WeightBinder& binder, ModelWeights& out);

std::string layer_tensor(int32_t il, const char* suffix);  // "blk.3.attn_q.weight"

}  // namespace hearth::model
