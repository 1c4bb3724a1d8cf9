// The HTTP side of the registry client, over libcurl: one request at a time per call (any
// number of threads may call at once; connections are shared and reused), with the limits
// that keep a broken registry from hanging a pull (connect timeout, stall timeout, bounded
// retries with exponential backoff), the bearer-token challenge that public registries send
// (WWW-Authenticate: Bearer realm=...,service=...,scope=...), and optional basic credentials.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace hearth::registry {

// Time and retry limits; every request obeys them. Defaults suit a registry across the internet.
struct RegistryLimits {
  std::chrono::milliseconds connect_timeout{10'000};
  // A transfer that receives no byte for this long fails (a registry that hangs).
  std::chrono::milliseconds stall_timeout{30'000};
  // Retries of a transient failure (5xx, 408, 429, connection refused/reset, timeout) stop after
  // max_attempts attempts or when retry_budget has passed since the first attempt (or, for a
  // download, since it last received a byte), whichever comes first.
  int max_attempts = 6;
  std::chrono::milliseconds retry_budget{60'000};
  std::chrono::milliseconds first_backoff{250};  // doubled after each retry...
  std::chrono::milliseconds max_backoff{8'000};  // ...up to this
  // 0: unlimited. A cap on the receive rate of each part of a blob download, like curl's
  // --limit-rate (tests use it to interrupt a pull midway).
  uint64_t max_receive_bytes_per_second = 0;
};

// Optional credentials for a registry that asks for them (basic auth, or sent to the token
// realm). basic_credentials_from_env() reads HEARTH_REGISTRY_USERNAME and
// HEARTH_REGISTRY_PASSWORD; both unset means anonymous.
struct BasicCredentials {
  std::string username;
  std::string password;
  bool empty() const { return username.empty() && password.empty(); }
};
BasicCredentials basic_credentials_from_env();

struct HttpHeader {
  std::string name;
  std::string value;
};

struct HttpResponse;

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, POST, PATCH, PUT, DELETE
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  // The request body: `body`, or body_size bytes of body_fd from body_offset when body_fd >= 0.
  std::string body;
  int body_fd = -1;
  uint64_t body_offset = 0;
  uint64_t body_size = 0;
  // Called once per 2xx response, before its first body byte, with its status and headers;
  // return false to abort the transfer (a 206 whose Content-Range is not what was asked).
  std::function<bool(const HttpResponse&)> on_headers;
  // Where a 2xx response body goes; return false to abort the transfer. When empty, the body is
  // collected into HttpResponse::body, up to max_collect bytes (more is an error).
  std::function<bool(std::string_view)> on_body;
  size_t max_collect = 4u << 20;
  // Set by another thread to abort the transfer promptly.
  const std::atomic<bool>* cancel = nullptr;
};

struct HttpResponse {
  long status = 0;
  std::vector<HttpHeader> headers;
  std::string body;  // collected body, or the error body of a non-2xx response
  std::string effective_url;

  // First header with this name (case-insensitive), or "".
  std::string header(std::string_view name) const;
};

// What one attempt came to: a response, or a transport failure (curl's error text).
struct HttpOutcome {
  HttpResponse response;
  int curl_code = 0;  // CURLE_OK when a response arrived
  std::string transport_error;
  bool aborted_by_sink = false;
  bool cancelled = false;

  bool transport_ok() const { return curl_code == 0; }
  // Worth another attempt: a connection-level failure or 408/429/5xx.
  bool transient() const;
};

// Sleeps between attempts with exponential backoff and says when to give up.
class RetryClock {
 public:
  explicit RetryClock(const RegistryLimits& limits);
  // Waits before the next attempt and returns true, or returns false when the attempts or the
  // time budget are spent (or `cancel` is set).
  bool wait_before_retry(const std::atomic<bool>* cancel = nullptr);
  // A download that moved forward earns a fresh budget.
  void note_progress();
  int attempts() const { return attempts_; }
  double seconds() const;

 private:
  const RegistryLimits& limits_;
  std::chrono::steady_clock::time_point first_;
  std::chrono::steady_clock::time_point budget_start_;
  std::chrono::milliseconds backoff_;
  int attempts_ = 1;
};

class HttpClient {
 public:
  // `registry_name` names the registry in error messages ("127.0.0.1:5000").
  HttpClient(std::string registry_name, RegistryLimits limits, BasicCredentials credentials);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // One attempt, answering an authentication challenge (401) once on the way.
  HttpOutcome attempt(const HttpRequest& request);
  // attempt() repeated while the failure is transient and the RetryClock allows; a transport
  // failure or a non-2xx status is returned as an Error (404 → kNotFound) naming the registry.
  // `what` says what was asked ("manifest library/qwen3:latest").
  Result<HttpResponse> send(const HttpRequest& request, std::string_view what);

  // The Error for a failed outcome, in the words send() uses.
  Error outcome_error(const HttpOutcome& outcome, std::string_view what, const RetryClock* clock) const;
  const RegistryLimits& limits() const { return limits_; }
  const std::string& registry_name() const { return registry_name_; }

 private:
  HttpOutcome perform(const HttpRequest& request, const std::string& authorization);
  // Answers a 401's challenge: fetches a bearer token or uses basic credentials. False when the
  // challenge cannot be answered (the 401 then stands).
  bool answer_challenge(const HttpResponse& unauthorized);
  std::string authorization();

  struct Share;
  std::string registry_name_;
  RegistryLimits limits_;
  BasicCredentials credentials_;
  std::unique_ptr<Share> share_;
  std::mutex auth_mu_;
  std::string authorization_;  // "Bearer ..." or "Basic ...", or "" before any challenge
};

// A parsed WWW-Authenticate header: `Bearer realm="...",service="...",scope="..."` or `Basic realm="..."`.
struct AuthChallenge {
  std::string scheme;  // "bearer" or "basic" (lower-cased)
  std::string realm;
  std::string service;
  std::string scope;
};
Result<AuthChallenge> parse_auth_challenge(std::string_view header);

// Appends query parameters to a URL that may already hold some ("?a=b" or "&a=b").
std::string url_with_query(const std::string& url, std::string_view query);
// Percent-encodes a query value.
std::string url_escape(std::string_view text);
// Resolves a Location header against the URL it came from (absolute, or a path on that host).
std::string resolve_location(const std::string& base_url, const std::string& location);

}  // namespace hearth::registry
