// The error object each dialect's clients expect (see response_encoder.h). The `type` names
// follow llama-server for OpenAI-style routes and Anthropic's documented error types.
#include "api/response_encoder.h"

namespace hearth::api {
namespace {

const char* openai_error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "invalid_request_error";
    case 429: return "rate_limit_error";
    case 501: return "not_supported_error";
    case 503: return "unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

const char* anthropic_error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

}  // namespace

nlohmann::ordered_json error_body(Dialect dialect, int status, const std::string& message) {
  using Json = nlohmann::ordered_json;
  switch (dialect) {
    case Dialect::kOllama: return Json{{"error", message}};
    case Dialect::kAnthropic:
      return Json{{"type", "error"}, {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}};
    case Dialect::kOpenAI: break;
  }
  return Json{{"error", {{"message", message}, {"type", openai_error_type(status)}, {"param", nullptr}, {"code", status}}}};
}

}  // namespace hearth::api
