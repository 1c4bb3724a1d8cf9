// OpenAI-compatible routes: /v1/chat/completions, /v1/completions, /v1/responses,
// /v1/embeddings, /v1/models. Any model name is served by the loaded model (see
// docs/decisions.md), as llama-server does; in store mode a stored model's name loads it and
// /v1/models lists the store.
#include "api/openai.h"
#include "server/completion_route.h"
#include "server/embedding_route.h"
#include "server/stored_models.h"

namespace hearth::server {

void register_openai_routes(State& s) {
  constexpr api::Dialect kDialect = api::Dialect::kOpenAI;
  add_route(s, kDialect, "POST", "/v1/chat/completions", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    serve_completion(call, api::parse_openai_chat(*body), api::make_openai_chat_encoder, "chatcmpl-");
  });
  add_route(s, kDialect, "POST", "/v1/completions", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    serve_completion(call, api::parse_openai_completion(*body), api::make_openai_completion_encoder, "cmpl-");
  });
  add_route(s, kDialect, "POST", "/v1/responses", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    serve_completion(call, api::parse_openai_responses(*body), api::make_openai_responses_encoder, "resp_");
  });
  add_route(s, kDialect, "POST", "/v1/embeddings", [](const RouteCall& call) {
    auto body = require_json(call);
    if (!body) return;
    auto job = api::parse_openai_embeddings(*body);
    if (!job.ok()) {
      send_status_error(call, job.error());
      return;
    }
    auto model = require_model(call);
    if (!model) return;
    if (job->request.model.empty()) job->request.model = model->model_info().name;
    auto result = run_embeddings(*model, *job, [&call] { return call.state.keep_serving(); });
    if (!result.ok()) {
      send_status_error(call, result.error());
      return;
    }
    send_json(call.res, api::openai_embeddings_response(*job, result->vectors, result->n_tokens));
  });
  add_route(s, kDialect, "GET", "/v1/models", [](const RouteCall& call) {
    if (call.state.store_mode() && !call.req.has_header("anthropic-version")) {
      send_json(call.res, api::openai_models_response(stored_model_cards(call.state)));
      return;
    }
    auto model = require_model(call);
    if (!model) return;
    if (call.req.has_header("anthropic-version")) {
      send_json(call.res, api::anthropic_models_response(model->model_info()));
    } else {
      send_json(call.res, api::openai_models_response(model->model_info()));
    }
  });
  add_route(s, kDialect, "GET", R"(/v1/models/([^/]+))", [](const RouteCall& call) {
    auto model = require_model(call);
    if (!model) return;
    const std::string id = call.req.matches[1];
    if (!model->model_info().answers_to(id)) {
      send_error(call.res, call.dialect, http_not_found("The model '" + id + "' does not exist"));
      return;
    }
    send_json(call.res, api::openai_model_object(model->model_info()));
  });
}

}  // namespace hearth::server
