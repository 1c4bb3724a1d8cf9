// The generation and sampler fields the dialects share. llama-server's body, ollama's
// `options` object and OpenAI's body use the same names for most knobs (temperature, top_k,
// top_p, min_p, repeat_penalty, seed, stop, ...), so one table reads them all; each dialect
// then reads its own extra fields (OpenAI max_tokens, Anthropic stop_sequences, ...).
#pragma once

#include <cstdint>
#include <string_view>

#include "api/generation_job.h"
#include "api/json_fields.h"
#include "protocol/sampling_options.h"

namespace hearth::api {

// The largest context a request may ask for (ollama's options.num_ctx): 16M tokens, above the
// longest training context of published models (10M) and far beyond any machine's KV memory
// for them; a bigger number is a typo or an attack, not a wish (docs/decisions.md).
constexpr int64_t kNumCtxMax = int64_t{1} << 24;

// ollama's defaults (temperature 0.8, top_k 40, top_p 0.9, repeat_penalty 1.1 over 64 tokens).
protocol::SamplingOptions ollama_default_sampling();
// llama-server's defaults (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, no penalty),
// used by the OpenAI and Anthropic routes.
protocol::SamplingOptions llama_server_default_sampling();

// Reads every shared field present in `obj` into job.request (and job.request.dry_sequence_breakers); keys it
// does not know are left for the caller. `where` prefixes field names in errors ("options.").
// Accepted names: temperature, top_k, top_p, min_p, typical_p, top_n_sigma, min_keep,
// repeat_last_n, repeat_penalty, presence_penalty, frequency_penalty, mirostat, mirostat_tau,
// mirostat_eta, dynatemp_range, dynatemp_exponent, xtc_probability, xtc_threshold,
// dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers,
// seed, stop, num_predict / n_predict, num_keep / n_keep, n_probs, ignore_eos, logit_bias,
// samplers, cache_prompt, num_ctx (1 to kNumCtxMax, into request.num_ctx). ollama's other runner
// options (num_batch, num_gpu, num_thread, use_mmap, ...) are accepted and have no effect in
// single-model serving. Ranges that differ by API are checked by job.dialect, which the caller
// sets first: temperature 0 to 2 (OpenAI), 0 to 1 (Anthropic), 0 or more (ollama); top_k 0 or
// more on Anthropic, any integer elsewhere (0 or less: off, as llama-server reads it).
Status read_generation_options(const Json& obj, std::string_view where, CompletionJob& job);

// `logprobs` (a boolean) and `top_logprobs` (0 to 20, as OpenAI and ollama document; more than 0
// implies logprobs), for the dialects that have them at the top level of the body.
Status read_logprobs(const Json& body, CompletionJob& job);

// The final checks once every field is read (sampler ranges, top_logprobs, n_predict).
Status validate_completion_job(const CompletionJob& job);

}  // namespace hearth::api
