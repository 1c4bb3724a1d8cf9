// The model geometries make-model writes: realistic sizes of popular small models (Llama-3.2-1B,
// Llama-3.2-3B, Qwen2.5-0.5B), the mixture-of-experts models (Qwen3-30B-A3B, gpt-oss-20b:
// their real expert sizes, usually with fewer layers) and tiny ones for tests. Weight values are random; only sizes,
// names and metadata follow the real models, which is all that speed depends on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace hearth::devtools {

struct ModelShape {
  std::string arch;   // "llama", "qwen2", "qwen3moe" or "gpt-oss" (GGUF general.architecture)
  std::string name;   // "1b", "0.5b", "3b", "tiny"
  std::string label;  // the real model the shape copies
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_ff = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;
  float rope_freq_base = 10000.0f;
  float norm_eps = 1e-5f;
  bool qkv_bias = false;       // qwen2: biases on Q, K and V
  bool llama3_rope = false;    // rope_freqs.weight with Llama 3.1+ frequency scaling
  // Mixture of experts (n_expert 0: a dense FFN of n_ff).
  int32_t n_expert = 0;
  int32_t n_expert_used = 0;
  int32_t n_ff_expert = 0;
  bool qk_norm = false;        // qwen3: per-head RMS norms of Q and K
  bool gpt_oss = false;        // biased Q/K/V/O, router and experts, attention sinks, post_attention_norm
  int32_t sliding_window = 0;  // gpt-oss: every other layer slides
  bool tied_output = true;     // false: an output.weight of its own
  bool experts_mxfp4 = false;  // gpt-oss ships its experts in MXFP4, whatever the file type
  // YaRN context extension (gpt-oss): factor over the original context (0: none).
  float yarn_factor = 0.0f;
  int32_t yarn_original_ctx = 0;
  std::string tokenizer_pre;   // tokenizer.ggml.pre
  bool add_bos = false;
  // Special tokens at the end of the vocabulary, in order (the rest of the tail is filled with
  // reserved control tokens); bos/eos/pad name one of them.
  std::vector<std::string> specials;
  std::string bos, eos, pad;
  int32_t n_special = 0;       // size of the control-token tail
};

// The shape for an architecture and size name (or a shape named "<arch>-<size>", such as
// "qwen3moe-30b-a3b", whatever `arch` says); the error lists the valid pairs.
Result<ModelShape> find_model_shape(const std::string& arch, const std::string& shape);
// "llama/1b, llama/3b, ..." for help texts.
std::string model_shape_names();

}  // namespace hearth::devtools
