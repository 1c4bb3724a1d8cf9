// Memory needed to serve a model, from its GGUF header (see memory_estimate.h).
#include "engine/memory_estimate.h"

#include <algorithm>

#include "gguf/gguf_file.h"
#include "model/hparams.h"
#include "util/system_memory.h"

namespace hearth::engine {
namespace {

struct HeaderFacts {
  model::ModelHparams h;
  uint64_t weights_bytes = 0;
};

Result<HeaderFacts> read_header(const std::string& path) {
  HEARTH_ASSIGN(gguf::File file, gguf::File::open(path));
  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr || embd->shape.size() < 2) {
    return make_error(ErrorKind::kNotFound, path + ": model is missing tensor 'token_embd.weight'");
  }
  HeaderFacts f;
  HEARTH_ASSIGN(f.h, model::load_hparams(file, static_cast<int32_t>(embd->shape[1])));
  for (const auto& t : file.tensors()) f.weights_bytes += t.size_bytes;
  return f;
}

// A mixture-of-experts FFN keeps, per token, each chosen expert's output row and its gathered
// input, gate and up rows, plus the router scores.
uint64_t moe_floats_per_token(const model::ModelHparams& h) {
  if (!h.is_moe()) return 0;
  const auto k = static_cast<uint64_t>(h.moe.n_expert_used);
  return k * (2u * static_cast<uint64_t>(h.n_embd) + 2u * static_cast<uint64_t>(h.moe.n_ff_expert)) +
         static_cast<uint64_t>(h.moe.n_expert);
}

}  // namespace

std::string MemoryEstimate::describe(DType kv_type) const {
  return "weights " + format_bytes(weights_bytes) + " + KV cache " + format_bytes(kv_bytes) + " (" +
         std::to_string(n_ctx) + " tokens, " + std::string(dtype_name(kv_type)) + ") + working buffers " + format_bytes(work_bytes);
}

Result<int32_t> read_train_context(const std::string& path) {
  HEARTH_ASSIGN(HeaderFacts f, read_header(path));
  return f.h.n_ctx_train;
}

Result<MemoryEstimate> estimate_memory(const std::string& path, const ContextOptions& o, int32_t step_tokens) {
  HEARTH_ASSIGN(HeaderFacts f, read_header(path));
  const model::ModelHparams& h = f.h;
  MemoryEstimate e;
  e.weights_bytes = f.weights_bytes;
  e.n_ctx_train = h.n_ctx_train;
  e.n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min(h.n_ctx_train, 4096);
  const auto k_elems = static_cast<uint64_t>(h.n_head_kv) * static_cast<uint64_t>(h.head_dim_k);
  const auto v_elems = static_cast<uint64_t>(h.n_head_kv) * static_cast<uint64_t>(h.head_dim_v);
  HEARTH_ASSIGN(uint64_t k_row, dtype_row_bytes(o.kv_type, k_elems));
  HEARTH_ASSIGN(uint64_t v_row, dtype_row_bytes(o.kv_type, v_elems));
  e.kv_bytes = static_cast<uint64_t>(h.n_layer) * static_cast<uint64_t>(e.n_ctx) * (k_row + v_row);
  // One step's float buffers: hidden states and their copies, Q/K/V, the FFN's gate and up
  // rows, the logits of every output token; attention scores of one head per thread over the
  // whole context; plus a fixed allowance for the tokenizer, grammar tables and the runtime.
  const auto n = static_cast<uint64_t>(std::max(step_tokens, 1));
  const uint64_t per_token = 6u * static_cast<uint64_t>(h.n_embd) + 3u * static_cast<uint64_t>(h.n_ff) +
                             static_cast<uint64_t>(h.n_head) * static_cast<uint64_t>(h.head_dim_k) * 2u +
                             static_cast<uint64_t>(h.n_vocab) + moe_floats_per_token(h);
  const uint64_t threads = static_cast<uint64_t>(std::max(o.n_threads, 1));
  e.work_bytes = 4u * (n * per_token + threads * static_cast<uint64_t>(e.n_ctx)) + (64u << 20);
  return e;
}

Status check_memory_fits(const MemoryEstimate& need, DType kv_type, std::optional<uint64_t> available) {
  if (!available || need.total() <= *available) return ok_status();
  return make_error(ErrorKind::kOutOfRange,
                    "not enough memory: the model needs about " + format_bytes(need.total()) + " (" +
                        need.describe(kv_type) + ") but " + format_bytes(*available) +
                        " is available (MemAvailable in /proc/meminfo); lower --ctx-size or --parallel, use a "
                        "smaller quantization, or pass --no-memory-check to load it anyway");
}

}  // namespace hearth::engine
