// A loaded model: the mmapped GGUF file, its hyper-parameters and bound weights. Immutable
// after load and shared by every request; request state lives in the KV cache and engine.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kv/kv_block_pool.h"
#include "kv/kv_cache.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "util/anonymous_memory.h"
#include "util/result.h"
#include "util/thread_pool.h"

namespace hearth::model {

struct LoadOptions {
  // Move the matrices the active kernels multiply faster interleaved into that layout (see
  // weight_interleaving.h); false keeps every matrix in the file mapping as GGUF stores it.
  bool interleave = true;
  ThreadPool* pool = nullptr;  // threads for interleaving (null: the loading thread alone)
};

class Model {
 public:
  // mmaps the file, reads hyper-parameters and binds every weight; errors name the file.
  static Result<std::unique_ptr<Model>> load(const std::string& path, const LoadOptions& options = {});
  static Result<std::unique_ptr<Model>> from_file(gguf::File file, const LoadOptions& options = {});

  // Moves the matrices into the interleaved layout (see LoadOptions::interleave), for a model
  // loaded without it. Only while nothing else uses the weights: a loader may run it alongside
  // work that reads the file's metadata (InferenceContext builds the tokenizer meanwhile).
  // `on_bytes`: see model::interleave_matrices (weight_interleaving.h).
  Status interleave_matrices(ThreadPool& pool, const std::function<void(size_t done, size_t total)>& on_bytes = {});

  // Gives back the host memory of layers [0, n_layers)'s matrices once they live on a device
  // that runs those layers for good (after the offload is attached): their interleaved copies'
  // pages go back to the system and their file pages stop counting as this process's
  // resident memory. Nothing on the CPU may run those layers afterwards (their interleaved
  // copies read zeros). Returns the bytes of interleaved copies given back.
  size_t release_layer_matrices(int32_t n_layers);

  const ModelHparams& hparams() const { return hparams_; }
  const ModelWeights& weights() const { return weights_; }
  const gguf::File& file() const { return file_; }
  double load_ms() const { return load_ms_; }
  // An embedding model: the forward pass leaves hidden states, not logits.
  bool is_encoder() const { return hparams_.output == ModelOutput::kHiddenStates; }

  // The RoPE parameters for a context in which one sequence may reach n_ctx_per_seq tokens
  // (0: the training context length). Llama 3.1 rope_freqs always apply; otherwise LongRoPE
  // models use their long factors when n_ctx_per_seq exceeds the original training context
  // (rope.scaling.original_context_length) and their short factors when it does not, as the
  // ecosystem does (chosen once per context, not per position).
  kernels::RopeParams rope_params(int32_t n_ctx_per_seq) const;

  // The KV cache layout for this model with the given cache element type.
  kv::KvLayout kv_layout(DType type = DType::kF16, int32_t block_tokens = 16) const;
  // Which layers slide and how far, for a KV cache that releases what falls out of the window.
  kv::KvSliding kv_sliding() const;

 private:
  Model() = default;
  gguf::File file_;
  ModelHparams hparams_;
  ModelWeights weights_;
  std::vector<std::unique_ptr<std::vector<float>>> owned_;
  AnonymousMemory interleaved_;  // the interleaved matrices (empty when none are)
  double load_ms_ = 0.0;
};

}  // namespace hearth::model
