// ollama's native routes: /api/generate, /api/chat, /api/embed, /api/embeddings, /api/tags,
// /api/show, /api/ps, /api/version. An /api/* request naming another model gets ollama's 404.
#include "api/ollama.h"
#include "server/completion_route.h"
#include "server/embedding_route.h"

namespace hearth::server {
namespace {

void embed(State& s, const httplib::Request& req, httplib::Response& res, bool legacy) {
  auto body = require_json(req, res);
  if (!body) return;
  auto job = api::parse_ollama_embed(*body, legacy);
  if (!job.ok()) {
    send_status_error(res, req, job.error());
    return;
  }
  auto model = require_model(s, req, res);
  if (!model) return;
  if (!model->model_info().answers_to(job->request.model)) {
    send_error(res, api::Dialect::kOllama, http_model_not_found(job->request.model));
    return;
  }
  auto result = run_embeddings(*model, *job, [&s] { return s.keep_serving(); });
  if (!result.ok()) {
    send_status_error(res, req, result.error());
    return;
  }
  send_json(res, api::ollama_embed_response(*job, result->vectors, result->n_tokens, result->total_ns));
}

}  // namespace

void register_ollama_routes(State& s) {
  add_route(s, "POST", "/api/generate", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto body = require_json(req, res);
    if (!body) return;
    serve_completion(st, req, res, api::parse_ollama_generate(*body), api::make_ollama_generate_encoder, "");
  });
  add_route(s, "POST", "/api/chat", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto body = require_json(req, res);
    if (!body) return;
    serve_completion(st, req, res, api::parse_ollama_chat(*body), api::make_ollama_chat_encoder, "");
  });
  add_route(s, "POST", "/api/embed", [](State& st, const httplib::Request& req, httplib::Response& res) {
    embed(st, req, res, false);
  });
  add_route(s, "POST", "/api/embeddings", [](State& st, const httplib::Request& req, httplib::Response& res) {
    embed(st, req, res, true);
  });
  add_route(s, "GET", "/api/version", [](State& st, const httplib::Request&, httplib::Response& res) {
    send_json(res, api::ollama_version_response(st.options.version));
  });
  add_route(s, "GET", "/api/tags", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto model = require_model(st, req, res);
    if (!model) return;
    protocol::ModelInfo card = model->model_info();
    card.digest = model->digest();
    send_json(res, api::ollama_tags_response(card));
  });
  add_route(s, "GET", "/api/ps", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto model = require_model(st, req, res);
    if (!model) return;
    protocol::ModelInfo card = model->model_info();
    card.digest = model->digest();
    send_json(res, api::ollama_ps_response(card));
  });
  add_route(s, "POST", "/api/show", [](State& st, const httplib::Request& req, httplib::Response& res) {
    auto body = require_json(req, res);
    if (!body) return;
    const std::string name = api::ollama_model_field(*body);
    if (name.empty()) {
      send_error(res, api::Dialect::kOllama, HttpError{400, "model is required"});
      return;
    }
    auto model = require_model(st, req, res);
    if (!model) return;
    if (!model->model_info().answers_to(name)) {
      send_error(res, api::Dialect::kOllama, http_model_not_found(name));
      return;
    }
    send_json(res, api::ollama_show_response(model->model_info(), model->model_info().supports_tools));
  });
}

}  // namespace hearth::server
