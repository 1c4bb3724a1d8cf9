// Anthropic's Messages API: POST /v1/messages (system as a string or text blocks, content
// blocks, stop_sequences, temperature/top_p/top_k, streaming events) and
// /v1/messages/count_tokens, translated to jobs; the encoder is in response_encoder.h.
#pragma once

#include "api/generation_job.h"
#include "api/json_fields.h"

namespace hearth::api {

// count_tokens bodies have no max_tokens; /v1/messages requires it.
Result<CompletionJob> parse_anthropic_messages(const Json& body, bool require_max_tokens = true);

// {"input_tokens": n}
Json anthropic_count_tokens_response(int32_t input_tokens);

}  // namespace hearth::api
