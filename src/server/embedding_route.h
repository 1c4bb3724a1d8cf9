// Runs an embeddings request on the engine for the three dialects' embedding routes: one
// engine request per input, results in input order, optional dimension cut (renormalised).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "api/generation_job.h"
#include "protocol/backend.h"

namespace hearth::server {

struct EmbeddingResult {
  std::vector<std::vector<float>> vectors;
  int32_t n_tokens = 0;   // tokens over all inputs
  int64_t total_ns = 0;
};

// Errors: inputs that do not fit (400), the client leaving (the work is cancelled), engine errors.
// `keep_going` is asked while waiting; false cancels the work (client gone, server stopping).
Result<EmbeddingResult> run_embeddings(protocol::InferenceBackend& model, const api::EmbeddingJob& job,
                                       const std::function<bool()>& keep_going);

}  // namespace hearth::server
