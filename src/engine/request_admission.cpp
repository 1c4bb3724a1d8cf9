// Submission checks of a generation request (see request_admission.h).
#include "engine/request_admission.h"

#include <string>

namespace hearth::engine {
namespace {

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

}  // namespace

Error grammar_error(const GenerationRequest& request, const Error& error) {
  if (request.grammar_field.empty()) return error;
  return make_error(error.kind, "'" + request.grammar_field + "': " + error.message);
}

Status check_token_ids(const std::vector<int32_t>& tokens, int32_t n_vocab) {
  for (int32_t t : tokens) {
    if (t < 0 || t >= n_vocab) {
      return invalid("token id " + std::to_string(t) + " is outside the vocabulary (" + std::to_string(n_vocab) + ")");
    }
  }
  return ok_status();
}

Result<int32_t> admit_generation(GenerationRequest& request, const AdmissionLimits& limits) {
  if (request.prompt.empty()) return invalid("the prompt is empty");
  HEARTH_TRY(check_token_ids(request.prompt, limits.n_vocab));
  for (const auto& [id, bias] : request.sampling.logit_bias) {
    if (id < 0 || id >= limits.n_vocab) {
      return invalid("logit_bias names token " + std::to_string(id) + ", outside the vocabulary of " +
                     std::to_string(limits.n_vocab) + " tokens");
    }
  }
  if (request.slot < -1 || request.slot >= limits.n_slots) {
    return invalid("slot " + std::to_string(request.slot) + " does not exist (there are " +
                   std::to_string(limits.n_slots) + ")");
  }
  if (request.top_logprobs < 0 || request.top_logprobs > limits.n_vocab) {
    return invalid("top_logprobs must be in [0, " + std::to_string(limits.n_vocab) + "]");
  }
  HEARTH_TRY(sampler::validate_sampler_params(request.sampling));
  // Asking for alternatives implies asking for log-probabilities; without either none are
  // computed, whatever n_probs says.
  if (request.top_logprobs > 0) request.logprobs = true;
  HEARTH_ASSIGN(FittedPrompt fitted, fit_prompt(std::move(request.prompt), limits.n_ctx_slot, request.truncate,
                                                request.n_keep, request.n_predict));
  request.prompt = std::move(fitted.tokens);
  return fitted.truncated_n;
}

}  // namespace hearth::engine
