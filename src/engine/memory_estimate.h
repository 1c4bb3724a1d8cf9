// The start-up memory check: what loading a model with given context options will take
// (weights + KV cache at the full configured context + working buffers), estimated from the
// GGUF header alone, before a byte of weights is read, and compared with the memory the
// machine has available. A model that cannot fit is refused at once with the numbers, instead
// of reporting ready and then stalling in swap (or being killed) minutes later.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/inference_context.h"
#include "util/result.h"

namespace hearth::engine {

struct MemoryEstimate {
  uint64_t weights_bytes = 0;  // tensor data (resident whether interleaved or mapped)
  uint64_t kv_bytes = 0;       // the KV cache with every slot's context full
  uint64_t work_bytes = 0;     // activations, logits and attention scratch of one step
  int32_t n_ctx = 0;           // the context the KV figure is for
  int32_t n_ctx_train = 0;     // the model's training context (for defaults and warnings)
  uint64_t total() const { return weights_bytes + kv_bytes + work_bytes; }
  // "weights 4.1 GiB + KV cache 1.0 GiB (8192 tokens, f16) + working buffers 0.2 GiB"
  std::string describe(DType kv_type) const;
};

// Reads `path`'s header only. `o.n_ctx` 0 means what InferenceContext::load makes of it;
// `step_tokens` is the engine's batch (--batch-tokens). Errors: a file that is not a model GGUF.
Result<MemoryEstimate> estimate_memory(const std::string& path, const ContextOptions& o, int32_t step_tokens);

// kOutOfRange naming needed vs available when `need` exceeds `available`; ok otherwise or when
// the available figure is unknown.
Status check_memory_fits(const MemoryEstimate& need, DType kv_type, std::optional<uint64_t> available);

// The training context from the header alone (0 when the file does not say).
Result<int32_t> read_train_context(const std::string& path);

}  // namespace hearth::engine
