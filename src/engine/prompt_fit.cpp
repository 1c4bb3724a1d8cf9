// Prompt length check and truncation (see prompt_fit.h).
#include "engine/prompt_fit.h"

#include <algorithm>
#include <string>

namespace hearth::engine {

int32_t truncation_room(int32_t n_ctx_slot, int32_t n_predict) {
  const int32_t room = n_predict > 0 ? n_predict : n_ctx_slot / 4;
  return std::max(1, std::min(room, n_ctx_slot / 2));
}

Result<FittedPrompt> fit_prompt(std::vector<int32_t> prompt, int32_t n_ctx_slot, bool truncate, int32_t n_keep,
                                int32_t n_predict) {
  const int32_t n = static_cast<int32_t>(prompt.size());
  FittedPrompt out;
  if (n < n_ctx_slot) {
    out.tokens = std::move(prompt);
    return out;
  }
  if (!truncate) {
    return make_error(ErrorKind::kOutOfRange, "the prompt is " + std::to_string(n) +
                                                  " tokens long, but a request's context holds " +
                                                  std::to_string(n_ctx_slot) +
                                                  " tokens (prompt and generated tokens); shorten it or start the "
                                                  "server with a larger --ctx-size");
  }
  const int32_t target = n_ctx_slot - truncation_room(n_ctx_slot, n_predict);
  const int32_t keep = std::clamp(n_keep, 0, n);
  if (keep >= target) {
    return make_error(ErrorKind::kOutOfRange, "cannot truncate the prompt of " + std::to_string(n) + " tokens to " +
                                                  std::to_string(target) + " while keeping its first " +
                                                  std::to_string(keep) + " (n_keep) tokens");
  }
  const int32_t tail = target - keep;
  out.tokens.reserve(static_cast<size_t>(target));
  out.tokens.insert(out.tokens.end(), prompt.begin(), prompt.begin() + keep);
  out.tokens.insert(out.tokens.end(), prompt.end() - tail, prompt.end());
  out.truncated_n = n - target;
  return out;
}

}  // namespace hearth::engine
