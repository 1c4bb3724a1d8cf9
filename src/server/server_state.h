// The state every route handler shares (private to server/): options, the cpp-httplib
// listener, access policy, resumable stream registry, the loaded model once ready, response
// counters for /metrics, and small helpers the route files use.
#pragma once

#include <atomic>
#include <functional>
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

  // The loaded model, or nullptr while loading.
  std::shared_ptr<protocol::InferenceBackend> model() const;
  void set_model(std::shared_ptr<protocol::InferenceBackend> m);
  // "chatcmpl-" + 24 random characters, etc.
  std::string new_id(const std::string& prefix);
  void count_response(int status);
  void count_disconnect();
  ServerCounters counters() const;

  // Method + path pattern of every route, for 405 answers.
  struct RouteEntry {
    std::string method;
    std::regex pattern;
  };
  std::vector<RouteEntry> routes;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<protocol::InferenceBackend> model_;
  ServerCounters counters_;
  std::mt19937_64 rng_;
};

using State = HttpServer::State;
using RouteHandler = std::function<void(State&, const httplib::Request&, httplib::Response&)>;

// Registers a handler (method "GET", "POST" or "DELETE"; pattern as cpp-httplib's regex).
void add_route(State& s, const std::string& method, const std::string& pattern, RouteHandler handler);

// The model, or nullptr after answering 503 ("the model is still loading").
std::shared_ptr<protocol::InferenceBackend> require_model(State& s, const httplib::Request& req, httplib::Response& res);
// The body as a JSON object, or nullopt after answering 400.
std::optional<api::Json> require_json(const httplib::Request& req, httplib::Response& res);
void send_json(httplib::Response& res, const api::Json& body, int status = 200);
void send_status_error(httplib::Response& res, const httplib::Request& req, const Error& error);

// Route registration, one function per file.
void register_ollama_routes(State& s);
void register_openai_routes(State& s);
void register_anthropic_routes(State& s);
void register_extra_routes(State& s);
void register_stream_routes(State& s);

}  // namespace hearth::server
