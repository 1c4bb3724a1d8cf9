// Every knob of the sampler chain, with the defaults ollama and llama-server use, and the
// order in which the truncating/transforming samplers run. Plain data that crosses from the
// HTTP side to the engine inside a protocol::CompletionRequest; the sampler chain reads it.
// Ranges are checked in one place, validate_sampling_options, when the sampler chain is built.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace hearth::protocol {


enum class SamplerKind {
  kPenalties,    // repeat / presence / frequency over repeat_last_n
  kDry,          // "don't repeat yourself" n-gram penalty
  kTopNSigma,
  kTopK,
  kTypicalP,
  kTopP,
  kMinP,
  kXtc,
  kTemperature,  // also dynamic temperature when dynatemp_range > 0
};

std::string_view sampler_kind_name(SamplerKind kind);
// Parses "top_k", "top-k", "min_p", ... (as llama-server's `samplers` list names them).
Result<SamplerKind> sampler_kind_from_name(std::string_view name);

struct SamplingOptions {
  uint64_t seed = 0xFFFFFFFFu;  // 0xFFFFFFFF: pick a random seed
  float temperature = 0.8f;     // <= 0: greedy
  float dynatemp_range = 0.0f;
  float dynatemp_exponent = 1.0f;
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.9f;           // >= 1: off
  float min_p = 0.0f;           // <= 0: off
  float typical_p = 1.0f;       // >= 1: off
  float top_n_sigma = -1.0f;    // <= 0: off
  float xtc_probability = 0.0f;
  float xtc_threshold = 0.1f;   // > 0.5: off
  int32_t repeat_last_n = 64;   // 0: off, -1: whole history
  float repeat_penalty = 1.0f;  // 1: off
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float dry_multiplier = 0.0f;  // 0: off
  float dry_base = 1.75f;
  int32_t dry_allowed_length = 2;
  int32_t dry_last_n = -1;      // -1: whole history
  std::vector<int32_t> dry_breakers;  // token ids that end a DRY match (engine side: prompt
                                      //   preparation tokenizes CompletionRequest::dry_sequence_breakers)
  int32_t mirostat = 0;         // 0 off, 1 or 2
  float mirostat_tau = 5.0f;
  float mirostat_eta = 0.1f;
  size_t min_keep = 1;
  int32_t n_probs = 0;          // top-n log-probabilities to report per token
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to logits; -inf bans a token
  std::vector<SamplerKind> order = {SamplerKind::kPenalties, SamplerKind::kDry,  SamplerKind::kTopNSigma,
                                    SamplerKind::kTopK,      SamplerKind::kTypicalP, SamplerKind::kTopP,
                                    SamplerKind::kMinP,      SamplerKind::kXtc,  SamplerKind::kTemperature};
};

// Range checks with messages naming the field ("top_p must be in [0, 1]").
Status validate_sampling_options(const SamplingOptions& p);

}  // namespace hearth::protocol
