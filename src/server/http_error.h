// The one place where failures become HTTP statuses. Every route reports problems as an
// HttpError (from a hearth::Error via http_error_from, or one of the HTTP-only conditions
// below); send_error() then writes the dialect's error body (api::error_body) with that status.
#pragma once

#include <string>

#include "api/generation_job.h"
#include "util/result.h"

namespace httplib {
struct Response;
}

namespace hearth::server {

struct HttpError {
  int status = 500;
  std::string message;
};

// ErrorKind → status: invalid argument, corrupt input, unsupported feature, type mismatch and
// out-of-range values are the client's (400); not found is 404; I/O and internal errors are 500.
HttpError http_error_from(const Error& error);

// Conditions that only exist at the HTTP edge.
HttpError http_unauthorized();                               // 401
HttpError http_forbidden_origin(const std::string& origin);  // 403
HttpError http_forbidden_host(const std::string& host);      // 403 (Host header not allowed)
HttpError http_not_found(const std::string& what);           // 404
HttpError http_method_not_allowed(const std::string& method, const std::string& path);  // 405
HttpError http_conflict(const std::string& message);         // 409
HttpError http_gone(const std::string& message);             // 410
HttpError http_payload_too_large(size_t limit);              // 413
HttpError http_unavailable(const std::string& message);      // 503
HttpError http_model_not_found(const std::string& model);    // 404, ollama's wording

// Which dialect's error shape a path gets: /api/* ollama, /v1/messages* Anthropic, else OpenAI.
// Only for answers made before any route is known (Host, CORS and API-key rejections, a refused
// request head, cpp-httplib's
// own 404/405/413, an exception that escaped a handler); a route answers in the dialect it was
// registered with (RouteCall::dialect), which agrees with this for its path.
api::Dialect dialect_for_path(const std::string& path);

// Sets status and the JSON error body in `dialect`'s shape.
void send_error(httplib::Response& res, api::Dialect dialect, const HttpError& error);

}  // namespace hearth::server
