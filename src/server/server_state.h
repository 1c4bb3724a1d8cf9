// The state every route handler shares (private to server/): options, the cpp-httplib
// listener, access policy, resumable stream registry, the loaded model once ready, response
// counters for /metrics, and small helpers the route files use.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <regex>
#include <string>

#include "api/json_fields.h"
#include "server/access_policy.h"
#include "server/http_error.h"
#include "server/http_listener.h"
#include "server/http_server.h"
#include "server/metrics_text.h"
#include "server/stream_registry.h"

namespace hearth::server {

struct HttpServer::State {
  explicit State(ServerOptions o);

  ServerOptions options;
  HttpListener http;
  AccessPolicy access;
  StreamRegistry streams;
  int port = 0;
  std::atomic<bool> stopping{false};  // set by stop(): blocking handlers give up

  // False once the client of this thread's request left or the server is stopping.
  bool keep_serving() const;

  // The loaded model, or nullptr while loading (or, in store mode, before the first request).
  std::shared_ptr<protocol::InferenceBackend> model() const;
  void set_model(std::shared_ptr<protocol::InferenceBackend> m);
  // Store mode: the loaded model with the stored description its requests are shaped by.
  bool store_mode() const { return options.store != nullptr; }
  std::shared_ptr<const store::ModelDescription> loaded_description() const;
  void set_loaded(std::shared_ptr<protocol::InferenceBackend> m, std::shared_ptr<const store::ModelDescription> d);
  StoreModelLoader loader;
  std::mutex load_mu;  // one load at a time
  // Router mode: the scheduler of runner processes, what a stored model needs, and the
  // description of each model it loaded (by spec key) for /api/ps.
  std::shared_ptr<router::ModelRouter> router;
  std::function<router::ModelLoadSpec(const store::ModelDescription&)> router_spec;
  std::mutex routed_mu;
  std::map<std::string, std::shared_ptr<const store::ModelDescription>> routed;
  // "chatcmpl-" + 24 random characters, etc.
  std::string new_id(const std::string& prefix);
  void count_response(int status);
  void count_disconnect();
  ServerCounters counters() const;

  // Every registered route: method and path pattern for 405 answers, and the dialect it was
  // registered with (tests check it agrees with dialect_for_path, which pre-routing answers use).
  struct RouteEntry {
    std::string method;
    std::string pattern;
    std::regex matcher;
    api::Dialect dialect;
  };
  std::vector<RouteEntry> routes;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<protocol::InferenceBackend> model_;
  std::shared_ptr<const store::ModelDescription> description_;
  ServerCounters counters_;
  std::mt19937_64 rng_;
};

using State = HttpServer::State;

// One request as its route handler sees it: the shared state, the API dialect the route was
// registered with (its error bodies and answers take that shape; nothing re-derives it from
// the URL), the request and the response.
struct RouteCall {
  State& state;
  api::Dialect dialect;
  const httplib::Request& req;
  httplib::Response& res;
};
using RouteHandler = std::function<void(const RouteCall&)>;

// Registers a handler (method "GET", "POST" or "DELETE"; pattern as cpp-httplib's regex) that
// answers in `dialect`'s shape.
void add_route(State& s, api::Dialect dialect, const std::string& method, const std::string& pattern,
               RouteHandler handler);

// The model, or nullptr after answering 503 ("the model is still loading").
std::shared_ptr<protocol::InferenceBackend> require_model(const RouteCall& call);
// The body as a JSON object, or nullopt after answering 400. The one parse of the body.
std::optional<api::Json> require_json(const RouteCall& call);
void send_json(httplib::Response& res, const api::Json& body, int status = 200);
// Answers `error` (via http_error_from) in the route's dialect.
void send_status_error(const RouteCall& call, const Error& error);

// Route registration, one function per file.
void register_ollama_routes(State& s);
void register_openai_routes(State& s);
void register_anthropic_routes(State& s);
void register_extra_routes(State& s);
void register_stream_routes(State& s);
void register_store_routes(State& s);
void register_transfer_routes(State& s);
void register_web_ui_routes(State& s);
// GET paths of the web UI's files: served without the API key (they hold no data; the page
// asks for the key), still behind the Host check.
bool path_is_web_ui(const std::string& path);
void register_router_routes(State& s);
// Router mode's /metrics: every loaded model's series, labelled by model.
std::string routed_metrics_text(State& s);

// A POST route whose body is read in pieces (blob uploads): no route sees `req.body`.
using UploadHandler = std::function<void(const RouteCall& call, const httplib::ContentReader& reader)>;
void add_upload_route(State& s, api::Dialect dialect, const std::string& pattern, UploadHandler handler);

}  // namespace hearth::server
