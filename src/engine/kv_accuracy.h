// What a KV cache type costs in accuracy: a text run through one model with an F16 cache and
// with the type under test, next-token distributions compared position by position (KL
// divergence, top-1 agreement, largest logit difference) and the text's perplexity under each.
// The first half of the tokens is one prefill batch (the flash tile) and the rest are decode
// steps (the per-token kernel), so both attention paths read the quantized cache.
#pragma once

#include <string>
#include <vector>

#include "engine/inference_context.h"
#include "util/result.h"

namespace hearth::engine {

struct KvAccuracy {
  DType type = DType::kF16;
  int32_t n_positions = 0;    // next-token distributions compared
  double mean_kl = 0.0;       // mean KL(F16 cache || this type), nats
  double max_kl = 0.0;
  double top1_agreement = 0.0;  // fraction of positions whose most likely token is the F16 cache's
  double max_logit_error = 0.0; // largest |logit - F16 cache's logit|
  double ppl = 0.0;           // perplexity of the text's tokens with this type
  double ppl_f16 = 0.0;       // and with an F16 cache
};

// One entry per type in `types`, against an F16 cache, for the model at `path` and `tokens`
// (at least 4). `base` gives the threads; the context is sized to the tokens.
Result<std::vector<KvAccuracy>> kv_accuracy(const std::string& path, const std::vector<int32_t>& tokens,
                                            const std::vector<DType>& types, const ContextOptions& base = {});

}  // namespace hearth::engine
