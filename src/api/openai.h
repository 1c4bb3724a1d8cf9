// OpenAI-compatible requests (as llama-server accepts them): /v1/chat/completions,
// /v1/completions, /v1/embeddings and the stateless /v1/responses, translated into jobs.
// Besides OpenAI's own fields, the llama-server sampler extras (top_k, min_p, repeat_penalty,
// mirostat, dry_*, xtc_*, ...) are accepted (generation_options.h). Responses are built by the
// encoders in response_encoder.h and the JSON helpers below.
#pragma once

#include <string>
#include <vector>

#include "api/generation_job.h"
#include "api/json_fields.h"
#include "protocol/model_info.h"

namespace hearth::api {

Result<CompletionJob> parse_openai_chat(const Json& body);
Result<CompletionJob> parse_openai_completion(const Json& body);
Result<CompletionJob> parse_openai_responses(const Json& body);
Result<EmbeddingJob> parse_openai_embeddings(const Json& body);

// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}
// embedding is a float array, or base64 of little-endian float32 when job.base64.
Json openai_embeddings_response(const EmbeddingJob& job, const std::vector<std::vector<float>>& embeddings,
                                int32_t prompt_tokens);

// GET /v1/models (OpenAI's list), GET /v1/models/{id} (one model object), and the list in
// Anthropic's shape ({data: [{type: "model", id, display_name, created_at}], has_more, ...})
// for clients that send anthropic-version.
Json openai_models_response(const protocol::ModelInfo& card);
Json openai_models_response(const std::vector<protocol::ModelInfo>& cards);
Json openai_model_object(const protocol::ModelInfo& card);
Json anthropic_models_response(const protocol::ModelInfo& card);

// Base64 of little-endian float32 values (OpenAI's encoding_format "base64").
std::string base64_floats(const std::vector<float>& values);

}  // namespace hearth::api
