// Router mode's own routes, as llama-server's router mode has them: GET /models (every stored
// model with its status: loaded, loading or unloaded), POST /models/load and /models/unload
// ({"model": NAME}); and /metrics with each loaded model's engine series labelled by model.
#include "api/openai.h"
#include "server/stored_models.h"

namespace hearth::server {
namespace {

using api::Json;

// The "model" field of a /models/load or /models/unload body, or "" after answering 400.
std::string model_field(const RouteCall& call) {
  auto body = require_json(call);
  if (!body) return "";
  auto it = body->find("model");
  if (it == body->end() || !it->is_string() || it->get<std::string>().empty()) {
    send_error(call.res, call.dialect, HttpError{400, "\"model\" (a stored model's name) is required"});
    return "";
  }
  return it->get<std::string>();
}

bool require_router(const RouteCall& call) {
  if (call.state.router) return true;
  send_error(call.res, call.dialect, http_not_found("this server runs no model router"));
  return false;
}

}  // namespace

void register_router_routes(State& s) {
  constexpr api::Dialect kDialect = api::Dialect::kOpenAI;
  add_route(s, kDialect, "GET", "/models", [](const RouteCall& call) {
    if (!require_router(call)) return;
    std::map<std::string, std::string> status;  // stored name -> loaded / loading
    for (const auto& m : call.state.router->loaded()) status[m.name] = m.loading ? "loading" : "loaded";
    Json data = Json::array();
    for (const auto& card : stored_model_cards(call.state)) {
      auto it = status.find(card.name);
      data.push_back(Json{{"id", card.name},
                          {"object", "model"},
                          {"owned_by", "hearth"},
                          {"created", card.modified_unix},
                          {"status", {{"value", it == status.end() ? "unloaded" : it->second}}}});
    }
    send_json(call.res, Json{{"object", "list"}, {"data", std::move(data)}});
  });
  add_route(s, kDialect, "POST", "/models/load", [](const RouteCall& call) {
    if (!require_router(call)) return;
    const std::string name = model_field(call);
    if (name.empty()) return;
    auto chosen = require_stored_model(call, name, false);
    if (!chosen) return;
    send_json(call.res, Json{{"success", true}});
  });
  add_route(s, kDialect, "POST", "/models/unload", [](const RouteCall& call) {
    if (!require_router(call)) return;
    const std::string name = model_field(call);
    if (name.empty()) return;
    if (!routed_backend(call.state, name)) {
      send_error(call.res, call.dialect, HttpError{400, "model '" + name + "' is not loaded"});
      return;
    }
    unload_stored_model(call.state, name);
    send_json(call.res, Json{{"success", true}});
  });
}

// /metrics in router mode (routes_extras.cpp calls it when a router is set).
std::string routed_metrics_text(State& s) {
  std::vector<ModelMetrics> models;
  for (const auto& m : s.router->loaded()) {
    if (!m.runner || !m.runner->alive()) continue;
    models.push_back(ModelMetrics{m.name, m.runner->backend()->metrics()});
  }
  return metrics_text(models, s.counters());
}

}  // namespace hearth::server
