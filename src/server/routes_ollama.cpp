// ollama's native routes: /api/generate, /api/chat, /api/embed, /api/embeddings, /api/tags,
// /api/show, /api/ps, /api/version. An /api/* request naming another model gets ollama's 404.
// In store mode the model comes from the store (stored_models.h) and the listings list it.
#include "api/ollama.h"
#include "server/completion_route.h"
#include "server/embedding_route.h"
#include "server/stored_models.h"

namespace hearth::server {
namespace {

void embed(const RouteCall& call, bool legacy) {
  auto body = require_json(call);
  if (!body) return;
  auto job = api::parse_ollama_embed(*body, legacy);
  if (!job.ok()) {
    send_status_error(call, job.error());
    return;
  }
  std::shared_ptr<protocol::InferenceBackend> model;
  std::shared_ptr<router::ModelLease> lease;
  if (call.state.store_mode()) {
    auto chosen = require_stored_model(call, job->request.model, false, job->keep_alive_ms);
    if (!chosen) return;
    model = chosen->backend;
    lease = chosen->lease;
  } else {
    model = require_model(call);
    if (!model) return;
    if (!model->model_info().answers_to(job->request.model)) {
      send_error(call.res, call.dialect, http_model_not_found(job->request.model));
      return;
    }
  }
  auto result = run_embeddings(*model, *job, [&call] { return call.state.keep_serving(); });
  if (!result.ok()) {
    send_status_error(call, result.error());
    return;
  }
  send_json(call.res, api::ollama_embed_response(*job, result->vectors, result->n_tokens, result->total_ns));
}

}  // namespace

void register_ollama_routes(State& s) {
  constexpr api::Dialect kDialect = api::Dialect::kOllama;
  add_route(s, kDialect, "POST", "/api/generate", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    merge_stored_options(call.state, *body);
    serve_completion(call, api::parse_ollama_generate(*body), api::make_ollama_generate_encoder, "");
  });
  add_route(s, kDialect, "POST", "/api/chat", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    merge_stored_options(call.state, *body);
    serve_completion(call, api::parse_ollama_chat(*body), api::make_ollama_chat_encoder, "");
  });
  add_route(s, kDialect, "POST", "/api/embed", [](const RouteCall& call) {
    embed(call, false);
  });
  add_route(s, kDialect, "POST", "/api/embeddings", [](const RouteCall& call) {
    embed(call, true);
  });
  add_route(s, kDialect, "GET", "/api/version", [](const RouteCall& call) {
    send_json(call.res, api::ollama_version_response(call.state.options.version));
  });
  add_route(s, kDialect, "GET", "/api/tags", [](const RouteCall& call) {
    if (call.state.store_mode()) {
      send_json(call.res, api::ollama_tags_response(stored_model_cards(call.state)));
      return;
    }
    auto model = require_model(call);
    if (!model) return;
    protocol::ModelInfo card = model->model_info();
    card.digest = model->digest();
    send_json(call.res, api::ollama_tags_response(card));
  });
  add_route(s, kDialect, "GET", "/api/ps", [](const RouteCall& call) {
    if (call.state.router) {
      send_json(call.res, routed_ps_response(call.state));
      return;
    }
    if (call.state.store_mode() && !call.state.model()) {
      send_json(call.res, api::ollama_ps_empty_response());
      return;
    }
    auto model = require_model(call);
    if (!model) return;
    protocol::ModelInfo card = model->model_info();
    card.digest = model->digest();
    send_json(call.res, api::ollama_ps_response(card));
  });
  add_route(s, kDialect, "POST", "/api/show", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    const std::string name = api::ollama_model_field(*body);
    if (name.empty()) {
      send_error(call.res, call.dialect, HttpError{400, "model is required"});
      return;
    }
    if (call.state.store_mode()) {
      show_stored_model(call, name, *body);
      return;
    }
    auto model = require_model(call);
    if (!model) return;
    if (!model->model_info().answers_to(name)) {
      send_error(call.res, call.dialect, http_model_not_found(name));
      return;
    }
    send_json(call.res, api::ollama_show_response(model->model_info(), model->model_info().supports_tools));
  });
}

}  // namespace hearth::server
