// Failure → HTTP status and body (see http_error.h).
#include "server/http_error.h"

#include <httplib.h>

#include "api/json_fields.h"
#include "api/response_encoder.h"

namespace hearth::server {

HttpError http_error_from(const Error& error) {
  switch (error.kind) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kCorrupt:
    case ErrorKind::kUnsupported:
    case ErrorKind::kOutOfRange:
    case ErrorKind::kTypeMismatch: return {400, error.message};
    case ErrorKind::kNotFound: return {404, error.message};
    case ErrorKind::kUnavailable: return {503, error.message};
    case ErrorKind::kIo:
    case ErrorKind::kInternal: break;
  }
  return {500, error.message};
}

HttpError http_unauthorized() {
  return {401, "missing or invalid API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'"};
}
HttpError http_forbidden_origin(const std::string& origin) {
  return {403, "origin '" + origin + "' is not allowed (add it to HEARTH_ORIGINS)"};
}
HttpError http_forbidden_host(const std::string& host) {
  return {403, "host '" + host + "' is not a name of this server (add it to HEARTH_ALLOWED_HOSTS, or set an API key)"};
}
HttpError http_not_found(const std::string& what) { return {404, what}; }
HttpError http_method_not_allowed(const std::string& method, const std::string& path) {
  return {405, "method " + method + " is not allowed on " + path};
}
HttpError http_conflict(const std::string& message) { return {409, message}; }
HttpError http_gone(const std::string& message) { return {410, message}; }
HttpError http_payload_too_large(size_t limit) {
  return {413, "request body is larger than the limit of " + std::to_string(limit) + " bytes (--max-body-bytes)"};
}
HttpError http_unavailable(const std::string& message) { return {503, message}; }
HttpError http_model_not_found(const std::string& model) {
  return {404, "model '" + model + "' not found"};
}

api::Dialect dialect_for_path(const std::string& path) {
  if (path.rfind("/api/", 0) == 0) return api::Dialect::kOllama;
  if (path.rfind("/v1/messages", 0) == 0) return api::Dialect::kAnthropic;
  return api::Dialect::kOpenAI;
}

void send_error(httplib::Response& res, api::Dialect dialect, const HttpError& error) {
  res.status = error.status;
  // A full queue or a model still loading: tell clients when to come back.
  if (error.status == 503 && !res.has_header("Retry-After")) res.set_header("Retry-After", "1");
  res.set_content(api::dump_json(api::error_body(dialect, error.status, error.message)), "application/json");
}

}  // namespace hearth::server
