// Store mode (`hearth serve` without -m): which stored model a request names, loading it when
// another one is loaded, and how the model's Modelfile shapes the request: its PARAMETERs as
// default options, its SYSTEM as the default system prompt, its MESSAGEs before the request's,
// and its TEMPLATE (ollama's Go template syntax) instead of the GGUF's own chat template.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "api/generation_job.h"
#include "protocol/model_info.h"
#include "server/server_state.h"

namespace hearth::server {

struct LoadedModel {
  std::shared_ptr<protocol::InferenceBackend> backend;
  std::shared_ptr<const store::ModelDescription> description;
  // Router mode: holds the model loaded until the request is submitted (its streams then do).
  std::shared_ptr<router::ModelLease> lease = nullptr;
};

// The stored model `name` names, loaded (replacing the loaded one) if it is not the loaded one;
// nullopt after answering the error (400 bad name, 404 unknown model, 500 load failure). An
// empty name means the loaded model. `fallback_to_loaded`: a name that is not in the store gets
// the loaded model instead of 404 (the OpenAI and Anthropic routes, whose clients send any name).
// `keep_alive_ms` (router mode): how long the model stays loaded after this request.
std::optional<LoadedModel> require_stored_model(const RouteCall& call, const std::string& name, bool fallback_to_loaded,
                                                std::optional<int64_t> keep_alive_ms = std::nullopt);

// The model name in an ollama body's `key` (or the older `old_key`, may be nullptr), parsed and
// validated. Errors: missing, not a string, or not a valid name.
Result<store::ModelName> model_name_field(const api::Json& body, const char* key, const char* old_key);

// Router mode: /api/ps's models (loaded and loading) as ollama lists them.
api::Json routed_ps_response(State& s);
// Router mode: the backend of the loaded model the request names, or, when the name is empty,
// of the loaded model a request took most recently (/slots, /tokenize... without a model); null
// if none.
std::shared_ptr<protocol::InferenceBackend> routed_backend(State& s, const std::string& name);

// Unloads the loaded model if `name` names it.
void unload_stored_model(State& s, const std::string& name);

// Adds the named stored model's PARAMETERs to an ollama body's "options" where the request
// sets none. Does nothing for a name that is not in the store (the route answers that).
void merge_stored_options(const State& s, api::Json& body);

// Shapes every prompt of `job` by the model's SYSTEM, MESSAGEs and TEMPLATE.
void apply_stored_prompt(api::CompletionJob& job, const store::ModelDescription& d);

// What the listing routes report for a stored model.
protocol::ModelInfo stored_model_card(const store::ModelDescription& d);
// Every stored model, for /api/tags (models that cannot be read are skipped with a warning).
std::vector<protocol::ModelInfo> stored_model_cards(const State& s);
// /api/show for a stored model: ollama's fields, the Modelfile's parts included.
void show_stored_model(const RouteCall& call, const std::string& name, const api::Json& body);

}  // namespace hearth::server
