// Router mode's own routes, as llama-server's router mode has them: GET /models (every stored
// model with its status: loaded, loading or unloaded), POST /models/load and /models/unload
// ({"model": NAME}), GET /models/sse (the status feed: loading progress, loaded, unloaded);
// and /metrics with each loaded model's engine series labelled by model.
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

// Every stored model's status object as llama-server's router reports it: "value" is loaded,
// loading or unloaded; a loading model adds "progress" (0..1, Hearth's addition), and a model
// whose last load failed adds "failed": true with the reason.
std::map<std::string, Json> model_statuses(State& s, const std::vector<std::string>& stored_names) {
  std::map<std::string, Json> status;
  for (const auto& m : s.router->loaded()) {
    Json st = {{"value", m.loading ? "loading" : "loaded"}};
    if (m.loading) st["progress"] = m.progress;
    status[m.name] = std::move(st);
  }
  const auto failed = s.router->failed_loads();
  for (const auto& name : stored_names) {
    if (status.count(name) != 0) continue;
    Json st = {{"value", "unloaded"}};
    if (auto it = failed.find(name); it != failed.end()) {
      st["failed"] = true;
      st["error"] = it->second.message;
    }
    status[name] = std::move(st);
  }
  return status;
}

std::vector<std::string> stored_names(const State& s) {
  std::vector<std::string> names;
  for (const auto& card : stored_model_cards(s)) names.push_back(card.name);
  return names;
}

// GET /models/sse: the model status feed of llama-server's router mode. Each change (a model
// starts loading, makes progress, is loaded, fails, is unloaded, is added to or removed from the
// store) is one event whose data is the model's /models entry ({"id", "status"}; a removed
// model's status is {"value": "unloaded", "removed": true}); the stream opens with every stored
// model's status and sends a comment line every 15 s while nothing changes. It ends when the
// client leaves or the server stops. The store's listing is kept between events and read again
// only when this process changed the store (create, pull, copy, delete) or at each keep-alive
// (for other processes' changes): a loading model's progress events never walk the store.
void model_status_feed(const RouteCall& call) {
  State* state = &call.state;
  call.res.set_header("Cache-Control", "no-cache");
  call.res.set_chunked_content_provider("text/event-stream", [state](size_t, httplib::DataSink& sink) {
    std::map<std::string, Json> sent;
    std::vector<std::string> names;
    uint64_t version = 0;
    uint64_t store_version = 0;
    auto quiet_since = std::chrono::steady_clock::now();
    bool first = true;
    while (!state->stopping.load()) {
      // Read the versions before the statuses: a change made in between is sent next round.
      const uint64_t now_version = first ? state->router->wait_for_change(~uint64_t{0}, std::chrono::milliseconds(0))
                                         : state->router->wait_for_change(version, std::chrono::milliseconds(500));
      const uint64_t now_store_version = state->options.store->manifest_changes();
      const bool keep_alive_due = std::chrono::steady_clock::now() - quiet_since > std::chrono::seconds(15);
      const bool store_changed = first || now_store_version != store_version || keep_alive_due;
      std::string text;
      if (store_changed || now_version != version) {
        version = now_version;
        if (store_changed) {
          store_version = now_store_version;
          names = stored_names(*state);
        }
        auto statuses = model_statuses(*state, names);
        for (auto it = sent.begin(); it != sent.end();) {
          if (statuses.count(it->first) != 0) {
            ++it;
            continue;
          }
          const Json gone = {{"value", "unloaded"}, {"removed", true}};
          text += "event: model_status\ndata: " + api::dump_json(Json{{"id", it->first}, {"status", gone}}) + "\n\n";
          it = sent.erase(it);
        }
        for (auto& [name, st] : statuses) {
          auto it = sent.find(name);
          if (it != sent.end() && it->second == st) continue;
          text += "event: model_status\ndata: " + api::dump_json(Json{{"id", name}, {"status", st}}) + "\n\n";
          sent[name] = st;
        }
        first = false;
      }
      if (text.empty() && keep_alive_due) text = ": keep-alive\n\n";
      if (!text.empty()) {
        quiet_since = std::chrono::steady_clock::now();
        if (!sink.write(text.data(), text.size()) || !sink.is_writable()) return false;
      } else if (!sink.is_writable()) {
        return false;
      }
    }
    sink.done();
    return true;
  });
}

}  // namespace

void register_router_routes(State& s) {
  constexpr api::Dialect kDialect = api::Dialect::kOpenAI;
  add_route(s, kDialect, "GET", "/models", [](const RouteCall& call) {
    if (!require_router(call)) return;
    const auto cards = stored_model_cards(call.state);
    std::vector<std::string> names;
    for (const auto& card : cards) names.push_back(card.name);
    const auto statuses = model_statuses(call.state, names);
    Json data = Json::array();
    for (const auto& card : cards) {
      auto it = statuses.find(card.name);
      data.push_back(Json{{"id", card.name},
                          {"object", "model"},
                          {"owned_by", "hearth"},
                          {"created", card.modified_unix},
                          {"status", it == statuses.end() ? Json{{"value", "unloaded"}} : it->second}});
    }
    send_json(call.res, Json{{"object", "list"}, {"data", std::move(data)}});
  });
  add_route(s, kDialect, "GET", "/models/sse", [](const RouteCall& call) {
    if (!require_router(call)) return;
    model_status_feed(call);
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
