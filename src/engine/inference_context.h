// One loaded model ready to run: the model, its tokenizer, a paged KV cache, a thread pool
// and the forward pass. This is the engine's entry point for programs that do not need HTTP
// (the CLI's generate/embed/perplexity, tests, benchmarks); the server's engine thread drives
// the same object.
#pragma once

#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "device/device.h"
#include "model/device_offload.h"
#include "model/forward.h"
#include "model/model.h"
#include "sampler/sampler_chain.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"
#include "util/thread_pool.h"

namespace hearth::engine {

struct ContextOptions {
  int32_t n_threads = 0;        // 0: physical cores
  int32_t n_ctx = 0;            // tokens of KV cache in all; 0: min(context_length, 4096)
  DType kv_type = DType::kF16;  // F16, BF16, F32, Q8_0 or Q4_0
  int32_t block_tokens = 16;
  // Requests adopt KV blocks of any earlier request whose prompt began the same way (the
  // cross-request prefix cache); false: only a slot's own previous tokens are reused.
  bool prefix_sharing = true;
  kv::KvPoolOptions kv_pool;
  // See model::LoadOptions::interleave; HEARTH_WEIGHT_LAYOUT=gguf turns it off.
  bool interleave_weights = true;
  // Layers to run on a GPU (model::DeviceOffload): -1 as many as fit, 0 none, N at most N
  // (kAllGpuLayers: every layer and the output layer, llama-server's "-ngl all").
  // The device is the one HEARTH_GPU names, else the best listed (never a CPU driver).
  int32_t gpu_layers = -1;
  static constexpr int32_t kAllGpuLayers = std::numeric_limits<int32_t>::max();
  // The load's progress, 0..1, on the loading thread: the share of the weights' bytes prepared
  // (moved into the interleaved layout, the load's real pass over them), then 1 once the
  // context is ready. Values never decrease; the last is 1 (not called for a failed load).
  std::function<void(double fraction)> on_progress;
};

class InferenceContext {
 public:
  // mmaps and binds the model, builds its tokenizer, reserves the KV cache. Errors name the file.
  static Result<std::unique_ptr<InferenceContext>> load(const std::string& path, const ContextOptions& options = {});

  const model::Model& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  int32_t n_ctx() const { return n_ctx_; }
  int32_t n_vocab() const { return model_->hparams().n_vocab; }
  double load_ms() const { return load_ms_; }
  // Bytes of GPU memory the model holds (weights, KV, scratch of offloaded layers); 0 on the CPU.
  uint64_t device_bytes() const { return offload_ ? offload_->device_bytes() : 0; }
  int32_t gpu_layers() const { return offload_ ? offload_->n_layers() : 0; }
  // The GPU the offloaded layers run on (nullptr on the CPU path), and whether the output layer
  // went there too.
  const device::DeviceInfo* gpu() const { return offload_ ? &device_->info() : nullptr; }
  bool gpu_output() const { return offload_ && offload_->has_output(); }
  ThreadPool& pool() { return *pool_; }
  kv::KvCache& kv() { return *kv_; }
  const kv::KvCache& kv() const { return *kv_; }

  int32_t seq_create() { return kv_->seq_create(); }
  Result<int32_t> seq_fork(int32_t seq) { return kv_->seq_fork(seq); }
  void seq_free(int32_t seq) { kv_->seq_free(seq); }
  Status seq_truncate(int32_t seq, int32_t n_tokens) { return kv_->seq_truncate(seq, n_tokens); }
  int32_t seq_length(int32_t seq) const { return kv_->seq_length(seq); }

  // Runs one batch (tokens of one or several sequences, see model::BatchToken); logits of the
  // output tokens in batch order, n_vocab floats each.
  Status decode(std::span<const model::BatchToken> batch, std::vector<float>& logits);

  // Compiles GBNF text for sampling with this model's vocabulary (an empty text gives an empty
  // constraint: free text). The vocabulary's byte trie is built on first use and shared; the
  // last kGrammarCacheEntries compiled grammars are kept by their text, so a schema that every
  // request of a client carries is compiled once.
  // Errors: kInvalidArgument with the grammar's line, column and reason. Thread-safe.
  Result<sampler::GrammarConstraint> grammar_constraint(std::string_view gbnf) const;

  // Pooled embedding of a token sequence (the model's pooling; mean for decoders), optionally
  // L2-normalised. Uses a temporary sequence.
  Result<std::vector<float>> embed(const std::vector<int32_t>& tokens, bool normalize);

 private:
  InferenceContext() = default;
  // Opens the chosen GPU and moves up to gpu_layers layers there (offload_, device_), before
  // the cache exists: the caller makes the one cache for `layout` and n_blocks without the
  // offloaded layers' CPU rows and attaches it. No GPU, a missing or broken driver: a warning
  // and the CPU path (offload_ unset). A HEARTH_GPU that names no device is an error.
  Status offload_to_gpu(int32_t gpu_layers, const kv::KvLayout& layout, int32_t n_blocks);
  std::unique_ptr<model::Model> model_;
  Tokenizer tokenizer_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<kv::KvCache> kv_;
  std::unique_ptr<model::ForwardPass> forward_;
  std::unique_ptr<device::Context> device_;
  std::unique_ptr<model::DeviceOffload> offload_;
  int32_t n_ctx_ = 0;
  double load_ms_ = 0.0;
  static constexpr size_t kGrammarCacheEntries = 32;
  mutable std::mutex grammar_cache_mu_;
  mutable std::deque<std::pair<std::string, std::shared_ptr<const sampler::CompiledGrammar>>> grammar_cache_;
  mutable std::once_flag grammar_vocab_once_;
  mutable std::shared_ptr<const sampler::TokenTrie> grammar_vocab_;
};

}  // namespace hearth::engine
