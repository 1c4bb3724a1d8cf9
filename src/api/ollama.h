// ollama's native API (docs/api.md of ollama): /api/generate, /api/chat, /api/embed, the
// legacy /api/embeddings, and the model listings /api/tags, /api/show, /api/ps, /api/version.
// Requests become jobs; responses use ollama's exact field names (durations in nanoseconds,
// created_at in RFC 3339 with nanoseconds).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "api/generation_job.h"
#include "api/json_fields.h"
#include "protocol/model_info.h"

namespace hearth::api {

Result<CompletionJob> parse_ollama_generate(const Json& body);
Result<CompletionJob> parse_ollama_chat(const Json& body);
// /api/embed (legacy = false) or /api/embeddings (legacy = true).
Result<EmbeddingJob> parse_ollama_embed(const Json& body, bool legacy);

// The model name a /api/* body names ("model", or the older "name"); "" when absent.
std::string ollama_model_field(const Json& body);

// "2024-05-01T10:11:12.123456789Z"
std::string rfc3339_nano(std::chrono::system_clock::time_point t);

// The answer to a generate/chat that only loads (empty prompt or messages): done_reason
// "load", or "unload" when keep_alive is 0 (CompletionJob::unload).
Json ollama_load_response(const std::string& model, bool chat, bool unload);

Json ollama_embed_response(const EmbeddingJob& job, const std::vector<std::vector<float>>& embeddings,
                           int32_t prompt_tokens, int64_t total_ns);
Json ollama_version_response(const std::string& version);
Json ollama_tags_response(const protocol::ModelInfo& card);
Json ollama_tags_response(const std::vector<protocol::ModelInfo>& cards);
// /api/ps with no model loaded.
Json ollama_ps_empty_response();
Json ollama_show_response(const protocol::ModelInfo& card, bool tools_in_template);
Json ollama_ps_response(const protocol::ModelInfo& card);
// One entry of /api/ps's "models": `size` bytes in memory, unloaded at `expires_at` (RFC 3339).
Json ollama_ps_entry(const protocol::ModelInfo& card, uint64_t size, const std::string& expires_at);

}  // namespace hearth::api
