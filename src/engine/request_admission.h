// The checks every generation request passes when it is submitted, in one place: the serving
// engine runs them on the submitting thread, and a test double of the engine runs the same
// function. Model facts only (the HTTP side checks the request's shape, nothing else).
#pragma once

#include <cstdint>

#include "engine/prompt_fit.h"
#include "engine/serving_types.h"

namespace hearth::engine {

struct AdmissionLimits {
  int32_t n_vocab = 0;
  int32_t n_ctx_slot = 0;
  int32_t n_slots = 0;
};

// A grammar compilation error, prefixed with the request field the grammar came from.
Error grammar_error(const GenerationRequest& request, const Error& error);

// Errors (kInvalidArgument) name the first id outside [0, n_vocab).
Status check_token_ids(const std::vector<int32_t>& tokens, int32_t n_vocab);

// Checks an empty prompt, token ids (prompt and logit_bias) against the vocabulary, the slot
// number, top_logprobs, the sampler options' ranges and the prompt's length (fitting or
// truncating it into a slot's context); applies the rule that asking for alternatives
// (top_logprobs) asks for log-probabilities. On success request.prompt is the fitted prompt.
Result<int32_t> admit_generation(GenerationRequest& request, const AdmissionLimits& limits);

}  // namespace hearth::engine
