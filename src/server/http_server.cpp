// HttpServer: cpp-httplib setup (threads, limits, timeouts, a listening socket that refuses a
// busy port), the checks every request passes before its route (Host, CORS origin, preflight,
// API key; a rejection closes the connection, since the body stays unread), the answers to a
// refused request head, the 404/405/413 answers in each
// dialect's shape, and the shared helpers of server_state.h. Routes answer in the dialect they
// were registered with; only the answers made before any route is known (pre-routing
// rejections, cpp-httplib's own 404/405/413, an escaped exception) take it from the path.
#include "server/http_server.h"

#include <sys/socket.h>

#include <regex>

#include "server/server_state.h"
#include "server/stored_models.h"
#include "util/log.h"

namespace hearth::server {
namespace {

const char* const kAllowedHeaders =
    "Authorization, Content-Type, X-Api-Key, X-Conversation-Id, Anthropic-Version, Anthropic-Beta, "
    "OpenAI-Organization, OpenAI-Project, X-Stainless-Lang, X-Stainless-Package-Version, X-Stainless-OS, "
    "X-Stainless-Arch, X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Retry-Count, "
    "X-Stainless-Timeout, X-Stainless-Helper-Method, User-Agent, Accept";

bool path_is_open(const std::string& path) { return path == "/health"; }

// A rejection before the route leaves the request's body unread: the connection closes after
// the answer, so that body is never read as the next request.
httplib::Server::HandlerResponse reject_before_route(httplib::Response& res, api::Dialect dialect, const HttpError& error) {
  send_error(res, dialect, error);
  res.set_header("Connection", "close");
  close_connection_after_response();
  return httplib::Server::HandlerResponse::Handled;
}

// Runs before any route is known, so a rejection's dialect comes from the path.
httplib::Server::HandlerResponse before_route(State& s, const httplib::Request& req, httplib::Response& res) {
  const api::Dialect dialect = dialect_for_path(req.path);
  // cpp-httplib picks its compression by a substring match on Accept-Encoding ("gzip;q=0"
  // would get gzip); it reads the request after the route, so it sees the header with the
  // refused codings dropped. The Request is ours to change here: only the handlers' signature
  // makes it const.
  if (req.has_header("Accept-Encoding")) {
    auto& headers = const_cast<httplib::Request&>(req).headers;
    const std::string accepted = without_refused_codings(req.get_header_value("Accept-Encoding"));
    headers.erase("Accept-Encoding");
    if (!accepted.empty()) headers.emplace("Accept-Encoding", accepted);
  }
  const std::string host = req.get_header_value("Host");
  if (!path_is_open(req.path) && !s.access.host_allowed(host, req.local_addr)) {
    return reject_before_route(res, dialect, http_forbidden_host(host));
  }
  const std::string origin = req.get_header_value("Origin");
  if (!origin.empty()) {
    const bool https = !s.options.tls_cert_file.empty();
    // Same-origin counts only where the Host check above applied (not on the open /health).
    const bool same = !path_is_open(req.path) && same_origin(origin, host, https);
    if (!s.access.origin_allowed(origin) && !same) {
      return reject_before_route(res, dialect, http_forbidden_origin(origin));
    }
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
    res.set_header("Access-Control-Expose-Headers", "X-Conversation-Id, X-Stream-Offset");
    if (req.method == "OPTIONS") {
      res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
      std::string asked = req.get_header_value("Access-Control-Request-Headers");
      res.set_header("Access-Control-Allow-Headers", asked.empty() ? kAllowedHeaders : asked);
      res.set_header("Access-Control-Max-Age", "600");
      res.status = 204;
      return httplib::Server::HandlerResponse::Handled;
    }
  } else if (req.method == "OPTIONS") {
    res.status = 204;
    res.set_header("Allow", "GET, POST, DELETE, OPTIONS");
    return httplib::Server::HandlerResponse::Handled;
  }
  const bool ui_file = req.method == "GET" && path_is_web_ui(req.path);
  if (!path_is_open(req.path) && !ui_file &&
      !s.access.authorized(req.get_header_value("Authorization"), req.get_header_value("x-api-key"))) {
    res.set_header("WWW-Authenticate", "Bearer");
    return reject_before_route(res, dialect, http_unauthorized());
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// Fills in a body for answers cpp-httplib made itself (no route: 404 or 405; too large: 413).
// No route ran, so the dialect comes from the path.
httplib::Server::HandlerResponse on_error_status(State& s, const httplib::Request& req, httplib::Response& res) {
  if (!res.body.empty() || res.is_chunked_content_provider_ || res.content_provider_) {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  const api::Dialect dialect = dialect_for_path(req.path);
  if (res.status != 404) {
    // cpp-httplib's own 400/413/414/416: the request may not have been read to its end.
    res.set_header("Connection", "close");
    close_connection_after_response();
  }
  if (res.status == 413) {
    send_error(res, dialect, http_payload_too_large(s.options.max_body_bytes));
  } else if (res.status == 404) {
    bool path_known = false;
    for (const auto& r : s.routes) {
      if (std::regex_match(req.path, r.matcher)) path_known = true;
    }
    if (path_known) {
      send_error(res, dialect, http_method_not_allowed(req.method, req.path));
    } else {
      send_error(res, dialect, http_not_found("no route for " + req.method + " " + req.path));
    }
  } else {
    send_error(res, dialect, HttpError{res.status, res.status >= 500 ? "internal server error" : "bad request"});
  }
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

HttpServer::State::State(ServerOptions o)
    : options(std::move(o)),
      access(options.api_key, options.origins, options.host, options.allowed_hosts),
      streams(StreamRegistryOptions{options.stream_buffer_bytes, options.stream_keep_seconds, options.max_streams}),
      rng_(std::random_device{}()) {}

bool HttpServer::State::keep_serving() const { return !stopping.load() && current_client_connected(); }

std::shared_ptr<protocol::InferenceBackend> HttpServer::State::model() const {
  std::lock_guard lock(mu_);
  return model_;
}

void HttpServer::State::set_model(std::shared_ptr<protocol::InferenceBackend> m) {
  std::lock_guard lock(mu_);
  model_ = std::move(m);
  description_.reset();
}

std::shared_ptr<const store::ModelDescription> HttpServer::State::loaded_description() const {
  std::lock_guard lock(mu_);
  return description_;
}

void HttpServer::State::set_loaded(std::shared_ptr<protocol::InferenceBackend> m, std::shared_ptr<const store::ModelDescription> d) {
  std::lock_guard lock(mu_);
  model_ = std::move(m);
  description_ = std::move(d);
}

std::string HttpServer::State::new_id(const std::string& prefix) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = prefix;
  std::lock_guard lock(mu_);
  for (int i = 0; i < 24; ++i) id += kChars[rng_() % (sizeof(kChars) - 1)];
  return id;
}

void HttpServer::State::count_response(int status) {
  std::lock_guard lock(mu_);
  ++counters_.responses_by_status[status];
}

void HttpServer::State::count_disconnect() {
  std::lock_guard lock(mu_);
  ++counters_.stream_disconnects;
}

ServerCounters HttpServer::State::counters() const {
  ServerCounters c;
  {
    std::lock_guard lock(mu_);
    c = counters_;
  }
  c.streams_resumable = streams.size();
  c.streams_running = streams.running();
  return c;
}

void add_route(State& s, api::Dialect dialect, const std::string& method, const std::string& pattern,
               RouteHandler handler) {
  s.routes.push_back({method, pattern, std::regex(pattern), dialect});
  State* state = &s;
  auto h = [state, dialect, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    handler(RouteCall{*state, dialect, req, res});
  };
  if (method == "GET") {
    s.http.Get(pattern, h);
  } else if (method == "POST") {
    s.http.Post(pattern, h);
  } else if (method == "DELETE") {
    s.http.Delete(pattern, h);
  }
}

void add_upload_route(State& s, api::Dialect dialect, const std::string& pattern, UploadHandler handler) {
  s.routes.push_back({"POST", pattern, std::regex(pattern), dialect});
  State* state = &s;
  s.http.Post(pattern, [state, dialect, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                                                      const httplib::ContentReader& reader) {
    handler(RouteCall{*state, dialect, req, res}, reader);
  });
}

std::shared_ptr<protocol::InferenceBackend> require_model(const RouteCall& call) {
  auto m = call.state.model();
  if (!m && call.state.router) m = routed_backend(call.state, "");
  if (!m && call.state.store_mode()) {
    send_error(call.res, call.dialect,
               HttpError{400, "no model is loaded: a request naming a model from /api/tags loads it (ollama's /api/generate "
                              "with only \"model\" loads one)"});
  } else if (!m) {
    send_error(call.res, call.dialect, http_unavailable("the model is still loading; try again shortly"));
  }
  return m;
}

std::optional<api::Json> require_json(const RouteCall& call) {
  auto body = api::parse_json_object(call.req.body);
  if (!body.ok()) {
    send_error(call.res, call.dialect, http_error_from(body.error()));
    return std::nullopt;
  }
  return std::move(body).value();
}

void send_json(httplib::Response& res, const api::Json& body, int status) {
  res.status = status;
  res.set_content(api::dump_json(body), "application/json");
}

void send_status_error(const RouteCall& call, const Error& error) {
  send_error(call.res, call.dialect, http_error_from(error));
}

HttpServer::HttpServer(ServerOptions options) : state_(std::make_unique<State>(std::move(options))) {
  State& s = *state_;
  ConnectionLimits limits;
  limits.worker_threads = std::max(4, s.options.http_threads);
  limits.max_connections = s.options.max_connections;
  limits.max_per_client = s.options.max_connections_per_client;
  limits.gate.head_timeout = std::chrono::milliseconds(s.options.head_timeout_ms);
  limits.gate.body_grace = std::chrono::milliseconds(s.options.body_grace_ms);
  limits.gate.body_min_bytes_per_second = s.options.body_min_bytes_per_second;
  s.http.set_connection_limits(limits);
  s.http.set_body_limits(s.options.max_body_bytes, s.options.store ? "/api/blobs/" : "", s.options.max_blob_bytes);
  s.http.set_keep_alive_max_count(1000);
  s.http.set_keep_alive_timeout(5);  // an idle keep-alive connection is closed after this
  s.http.set_read_timeout(30, 0);
  s.http.set_write_timeout(30, 0);
  // cpp-httplib sets SO_REUSEPORT where it exists, which lets a second server bind a port that
  // one already listens on (the kernel then splits connections between them). SO_REUSEADDR
  // alone still allows a quick restart over connections in TIME_WAIT.
  s.http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  s.http.set_head_rejector([&s](const RequestHead& head, httplib::Response& res) {
    const HttpError error = head.status == 413 ? http_payload_too_large(s.options.max_body_bytes) : HttpError{head.status, head.message};
    send_error(res, dialect_for_path(head.path), error);
    s.count_response(res.status);
    log_debug("http refused", {{"status", res.status}, {"path", head.path}, {"error", head.message}});
  });
  s.http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) { return before_route(s, req, res); });
  s.http.set_error_handler(httplib::Server::HandlerWithResponse(
      [&s](const httplib::Request& req, httplib::Response& res) { return on_error_status(s, req, res); }));
  s.http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log_error("request failed", {{"path", req.path}, {"error", what}});
    // cpp-httplib does not say which route threw: the dialect comes from the path.
    send_error(res, dialect_for_path(req.path), HttpError{500, "internal error: " + what});
  });
  s.http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    s.count_response(res.status);
    log_debug("http", {{"method", req.method}, {"path", req.path}, {"status", res.status}, {"remote", req.remote_addr}});
  });
  register_ollama_routes(s);
  register_openai_routes(s);
  register_anthropic_routes(s);
  register_extra_routes(s);
  register_stream_routes(s);
  register_web_ui_routes(s);
  if (s.store_mode()) {
    register_store_routes(s);
    register_transfer_routes(s);
    register_router_routes(s);
  }
}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::bind() {
  State& s = *state_;
  if (!s.options.tls_cert_file.empty() || !s.options.tls_key_file.empty()) {
    HEARTH_ASSIGN(auto tls, TlsContext::load(s.options.tls_cert_file, s.options.tls_key_file));
    s.http.set_tls(std::move(tls));
  }
  if (s.options.port == 0) {
    int port = s.http.bind_to_any_port(s.options.host);
    if (port <= 0) return make_error(ErrorKind::kIo, "cannot bind " + s.options.host + " on any port");
    s.port = port;
  } else {
    if (!s.http.bind_to_port(s.options.host, s.options.port)) {
      return make_error(ErrorKind::kIo, "cannot bind " + s.options.host + ":" + std::to_string(s.options.port) +
                                            " (in use, or not an address of this machine)");
    }
    s.port = s.options.port;
  }
  return ok_status();
}

int HttpServer::port() const { return state_->port; }

void HttpServer::start() {
  state_->http.start_connections();
  thread_ = std::thread([this] { state_->http.listen_after_bind(); });
  // cpp-httplib's stop() does nothing until the listener runs; wait for it so a quick stop()
  // cannot leave the accept loop blocked forever.
  while (!state_->http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::stop() {
  state_->stopping = true;
  if (state_->http.is_running() || thread_.joinable()) state_->http.stop();
  if (thread_.joinable()) thread_.join();
  state_->http.stop_connections();
}

void HttpServer::set_backend(std::shared_ptr<protocol::InferenceBackend> backend) { state_->set_model(std::move(backend)); }

void HttpServer::set_model_loader(StoreModelLoader loader) {
  std::lock_guard lock(state_->load_mu);
  state_->loader = std::move(loader);
}

void HttpServer::set_model_router(std::shared_ptr<router::ModelRouter> router,
                                  std::function<router::ModelLoadSpec(const store::ModelDescription&)> make_spec) {
  std::lock_guard lock(state_->load_mu);
  state_->router = std::move(router);
  state_->router_spec = std::move(make_spec);
}

std::shared_ptr<protocol::InferenceBackend> HttpServer::loaded_backend() const { return state_->model(); }

}  // namespace hearth::server
