// Text generation and perplexity over an InferenceContext for programs without HTTP (the CLI's
// generate, tests). Generation is one request on a serving engine of one slot, so stop strings,
// end-of-generation tokens, length limits, UTF-8 hold-back, admission checks and timings are
// the served path's own; there is no second generation loop.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/inference_context.h"
#include "engine/text_streamer.h"
#include "sampler/sampler_params.h"

namespace hearth::engine {

struct GenerateOptions {
  int32_t n_predict = 128;     // -1: until the context is full
  sampler::SamplerParams sampling;
  bool add_special = true;     // the model's BOS/EOS rules for the prompt
  bool parse_special = false;  // match special-token text in the prompt
  bool stop_at_eog = true;
  std::vector<std::string> stop;
  std::string grammar;         // GBNF the output must match; empty: free text
  int32_t n_batch = 512;       // tokens per engine step (prompt chunks)
};

struct GenerateResult {
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> tokens;  // generated ids (the stop string's and the end-of-generation token included)
  std::string text;             // generated text, cut before a stop string
  std::string stop_reason;      // "length", "eog" (also: the grammar is complete), "stop", "context", "cancelled"
  double prompt_ms = 0.0;
  double generation_ms = 0.0;
};

// Called with each newly complete piece of text; return false to stop generating.
using PieceCallback = std::function<bool(std::string_view piece)>;

Result<GenerateResult> generate(InferenceContext& ctx, std::string_view prompt, const GenerateOptions& options,
                                const PieceCallback& on_piece = nullptr);
Result<GenerateResult> generate_from_tokens(InferenceContext& ctx, std::vector<int32_t> prompt_tokens,
                                            const GenerateOptions& options, const PieceCallback& on_piece = nullptr);

struct PerplexityResult {
  double ppl = 0.0;
  int32_t n_chunks = 0;
  int32_t n_scored = 0;
  std::vector<double> running_ppl;  // after each chunk
};

// The usual chunked perplexity: the tokens are cut into chunks of n_chunk; each chunk starts
// with BOS from an empty cache, and the second half of each chunk is scored.
Result<PerplexityResult> perplexity(InferenceContext& ctx, const std::vector<int32_t>& tokens, int32_t n_chunk);

}  // namespace hearth::engine
