// Turns a job's prompt sources into token ids on the HTTP worker: renders the chat template,
// applies an ollama Go template's output or raw text, builds fill-in-the-middle prompts,
// tokenizes, and checks the result against the model (ids in range, length within a slot's
// context unless the request asked to truncate). Also resolves the sampler fields that need
// the vocabulary (logit_bias ids, DRY sequence breakers). The output is ready to submit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/generation_job.h"
#include "api/response_encoder.h"
#include "server/model_backend.h"

namespace hearth::server {

struct BuiltPrompt {
  std::vector<int32_t> tokens;
  std::string text;  // the prompt as text (for OpenAI's echo)
};

Result<BuiltPrompt> build_prompt(const ModelBackend& model, const api::PromptSource& source);

// One engine request per choice (prompt-major: all choices of prompt 0, then prompt 1, ...),
// plus the prompt facts the encoder reports. Choice j > 0 of a seeded request gets seed + j,
// so n choices differ but stay reproducible.
struct PreparedCompletion {
  std::vector<engine::CompletionRequest> requests;
  std::vector<int32_t> prompt_tokens;
  std::vector<std::vector<int32_t>> prompt_ids;
  std::vector<std::string> prompt_texts;
};

Result<PreparedCompletion> prepare_completion(const ModelBackend& model, const api::CompletionJob& job);

// Token ids of each embedding input, checked against the context unless truncating.
Result<std::vector<std::vector<int32_t>>> prepare_embedding_inputs(const ModelBackend& model, const api::EmbeddingJob& job);

}  // namespace hearth::server
