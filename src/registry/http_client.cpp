// libcurl behind HttpClient (see http_client.h): easy handles per attempt sharing one
// connection cache, limits from RegistryLimits, authentication challenges and retries.
#include "registry/http_client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "util/log.h"

namespace hearth::registry {
namespace {

void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return std::string(s);
}

// One attempt's state, reached from curl's callbacks.
struct Transfer {
  CURL* easy = nullptr;
  const HttpRequest* request = nullptr;
  HttpOutcome* outcome = nullptr;
  uint64_t body_sent = 0;
  bool too_large = false;
  bool headers_seen = false;

  bool status_is_success() {
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    outcome->response.status = status;
    return status >= 200 && status < 300;
  }
};

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * count;
  if (t->request->on_body && t->status_is_success()) {
    if (!t->headers_seen) {
      t->headers_seen = true;
      if (t->request->on_headers && !t->request->on_headers(t->outcome->response)) {
        t->outcome->aborted_by_sink = true;
        return 0;
      }
    }
    if (!t->request->on_body(std::string_view(data, len))) {
      t->outcome->aborted_by_sink = true;
      return 0;
    }
    return len;
  }
  std::string& body = t->outcome->response.body;
  if (body.size() + len > t->request->max_collect) {
    t->too_large = true;
    return 0;
  }
  body.append(data, len);
  return len;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * count;
  std::string_view line(data, len);
  auto& headers = t->outcome->response.headers;
  if (line.starts_with("HTTP/")) {
    headers.clear();  // a new response (after a redirect or 100 Continue)
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    headers.push_back({trim(line.substr(0, colon)), trim(line.substr(colon + 1))});
  }
  return len;
}

size_t on_read(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const HttpRequest& r = *t->request;
  uint64_t total = r.body_fd >= 0 ? r.body_size : r.body.size();
  size_t want = static_cast<size_t>(std::min<uint64_t>(size * count, total - t->body_sent));
  if (want == 0) return 0;
  if (r.body_fd >= 0) {
    ssize_t n = ::pread(r.body_fd, buffer, want, static_cast<off_t>(r.body_offset + t->body_sent));
    if (n <= 0) return CURL_READFUNC_ABORT;
    t->body_sent += static_cast<uint64_t>(n);
    return static_cast<size_t>(n);
  }
  std::copy_n(r.body.data() + t->body_sent, want, buffer);
  t->body_sent += want;
  return want;
}

int on_seek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
  t->body_sent = static_cast<uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->request->cancel != nullptr && t->request->cancel->load(std::memory_order_relaxed)) {
    t->outcome->cancelled = true;
    return 1;
  }
  return 0;
}

// The registry's own error text ({"errors":[{"code":...,"message":...}]}) when it sent one.
std::string registry_error_text(const HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("errors") && j["errors"].is_array() && !j["errors"].empty()) {
    const auto& e = j["errors"][0];
    auto text = [&](const char* key) {
      return e.is_object() && e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
    };
    std::string code = text("code"), message = text("message");
    return code.empty() ? message : code + ": " + message;
  }
  if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"].get<std::string>();
  return "";
}

}  // namespace

BasicCredentials basic_credentials_from_env() {
  BasicCredentials c;
  if (const char* u = std::getenv("HEARTH_REGISTRY_USERNAME")) c.username = u;
  if (const char* p = std::getenv("HEARTH_REGISTRY_PASSWORD")) c.password = p;
  return c;
}

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& h : headers) {
    if (iequals(h.name, name)) return h.value;
  }
  return "";
}

bool HttpOutcome::transient() const {
  if (cancelled || aborted_by_sink) return false;
  if (!transport_ok()) {
    switch (curl_code) {
      case CURLE_COULDNT_CONNECT:
      case CURLE_OPERATION_TIMEDOUT:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_GOT_NOTHING:
      case CURLE_PARTIAL_FILE:
      case CURLE_HTTP2:
      case CURLE_HTTP2_STREAM:
        return true;
      default:
        return false;
    }
  }
  long s = response.status;
  return s == 408 || s == 429 || (s >= 500 && s <= 599);
}

RetryClock::RetryClock(const RegistryLimits& limits)
    : limits_(limits),
      first_(std::chrono::steady_clock::now()),
      budget_start_(first_),
      backoff_(limits.first_backoff) {}

bool RetryClock::wait_before_retry(const std::atomic<bool>* cancel) {
  if (attempts_ >= limits_.max_attempts) return false;
  auto now = std::chrono::steady_clock::now();
  if (now + backoff_ - budget_start_ > limits_.retry_budget) return false;
  // Sleep in short steps so that a cancel is seen promptly.
  auto until = now + backoff_;
  while (std::chrono::steady_clock::now() < until) {
    if (cancel != nullptr && cancel->load()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(20),
                                                                              until - std::chrono::steady_clock::now()));
  }
  backoff_ = std::min(backoff_ * 2, limits_.max_backoff);
  ++attempts_;
  return true;
}

void RetryClock::note_progress() {
  budget_start_ = std::chrono::steady_clock::now();
  backoff_ = limits_.first_backoff;
  attempts_ = 1;
}

double RetryClock::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - first_).count();
}

// A curl share handle: connections, DNS and TLS sessions reused across attempts and threads.
struct HttpClient::Share {
  CURLSH* handle = nullptr;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> locks;

  Share() {
    handle = curl_share_init();
    curl_share_setopt(handle, CURLSHOPT_LOCKFUNC, +[](CURL*, curl_lock_data d, curl_lock_access, void* u) {
      static_cast<Share*>(u)->locks[d].lock();
    });
    curl_share_setopt(handle, CURLSHOPT_UNLOCKFUNC, +[](CURL*, curl_lock_data d, void* u) {
      static_cast<Share*>(u)->locks[d].unlock();
    });
    curl_share_setopt(handle, CURLSHOPT_USERDATA, this);
    curl_share_setopt(handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }
  ~Share() { curl_share_cleanup(handle); }
};

HttpClient::HttpClient(std::string registry_name, RegistryLimits limits, BasicCredentials credentials)
    : registry_name_(std::move(registry_name)), limits_(limits), credentials_(std::move(credentials)) {
  global_init_once();
  share_ = std::make_unique<Share>();
}

HttpClient::~HttpClient() = default;

std::string HttpClient::authorization() {
  std::lock_guard<std::mutex> lock(auth_mu_);
  return authorization_;
}

HttpOutcome HttpClient::perform(const HttpRequest& request, const std::string& authorization) {
  HttpOutcome outcome;
  CURL* easy = curl_easy_init();
  if (easy == nullptr) {
    outcome.curl_code = CURLE_FAILED_INIT;
    outcome.transport_error = "cannot create a curl handle";
    return outcome;
  }
  Transfer t{easy, &request, &outcome};
  char error_buffer[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  if (!authorization.empty()) headers = curl_slist_append(headers, ("Authorization: " + authorization).c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip before a body

  curl_easy_setopt(easy, CURLOPT_SHARE, share_->handle);
  curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(easy, CURLOPT_USERAGENT, "hearth/0.1");
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, request.url.starts_with("https:") ? "https" : "http,https");
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits_.connect_timeout.count()));
  // The stall timeout: fewer than 1 byte/s for that many seconds ends the transfer.
  long stall_s = std::max<long>(1, static_cast<long>((limits_.stall_timeout.count() + 999) / 1000));
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, stall_s);
  curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(easy, CURLOPT_XFERINFODATA, &t);

  bool has_body = request.body_fd >= 0 || !request.body.empty() || request.method == "PUT" ||
                  request.method == "PATCH" || request.method == "POST";
  if (request.method == "HEAD") {
    curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
  } else if (has_body) {
    uint64_t size = request.body_fd >= 0 ? request.body_size : request.body.size();
    curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
    curl_easy_setopt(easy, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(easy, CURLOPT_READDATA, &t);
    curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(easy, CURLOPT_SEEKDATA, &t);
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  } else if (request.method != "GET") {
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }

  CURLcode code = curl_easy_perform(easy);
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &outcome.response.status);
  char* effective = nullptr;
  if (curl_easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK && effective != nullptr) {
    outcome.response.effective_url = effective;
  }
  outcome.curl_code = code;
  if (code != CURLE_OK) {
    outcome.transport_error = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
    if (t.too_large) outcome.transport_error = "response larger than " + std::to_string(request.max_collect) + " bytes";
    if (code == CURLE_OPERATION_TIMEDOUT && outcome.transport_error.starts_with("Operation too slow")) {
      outcome.transport_error = "timed out: nothing received for " + std::to_string(stall_s) + " s";
    }
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(easy);
  return outcome;
}

HttpOutcome HttpClient::attempt(const HttpRequest& request) {
  std::string auth = authorization();
  HttpOutcome outcome = perform(request, auth);
  if (outcome.transport_ok() && outcome.response.status == 401) {
    std::string refreshed = authorization();
    // Another thread may have answered the challenge meanwhile; otherwise answer it here.
    if (refreshed != auth || answer_challenge(outcome.response)) outcome = perform(request, authorization());
  }
  return outcome;
}

bool HttpClient::answer_challenge(const HttpResponse& unauthorized) {
  auto challenge = parse_auth_challenge(unauthorized.header("WWW-Authenticate"));
  if (!challenge.ok()) return false;
  std::string basic;
  if (!credentials_.empty()) {
    std::string plain = credentials_.username + ":" + credentials_.password;
    // Base64 of the credentials for "Basic ...".
    static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < plain.size(); i += 3) {
      uint32_t v = static_cast<uint8_t>(plain[i]) << 16;
      if (i + 1 < plain.size()) v |= static_cast<uint8_t>(plain[i + 1]) << 8;
      if (i + 2 < plain.size()) v |= static_cast<uint8_t>(plain[i + 2]);
      basic += kAlphabet[(v >> 18) & 63];
      basic += kAlphabet[(v >> 12) & 63];
      basic += i + 1 < plain.size() ? kAlphabet[(v >> 6) & 63] : '=';
      basic += i + 2 < plain.size() ? kAlphabet[v & 63] : '=';
    }
    basic = "Basic " + basic;
  }
  if (challenge->scheme == "basic") {
    if (basic.empty()) return false;
    std::lock_guard<std::mutex> lock(auth_mu_);
    authorization_ = basic;
    return true;
  }
  if (challenge->scheme != "bearer" || challenge->realm.empty()) return false;
  std::string url = challenge->realm;
  if (!challenge->service.empty()) url = url_with_query(url, "service=" + url_escape(challenge->service));
  if (!challenge->scope.empty()) url = url_with_query(url, "scope=" + url_escape(challenge->scope));
  HttpRequest token_request;
  token_request.url = url;
  token_request.max_collect = 1u << 20;
  HttpOutcome token = perform(token_request, basic);
  if (!token.transport_ok() || token.response.status != 200) {
    log_warn("registry token request failed", {{"registry", registry_name_}, {"realm", challenge->realm},
                                               {"status", static_cast<long>(token.response.status)},
                                               {"error", token.transport_error}});
    return false;
  }
  auto j = nlohmann::json::parse(token.response.body, nullptr, false);
  std::string value;
  if (j.is_object() && j.contains("token") && j["token"].is_string()) value = j["token"].get<std::string>();
  if (value.empty() && j.is_object() && j.contains("access_token") && j["access_token"].is_string()) {
    value = j["access_token"].get<std::string>();
  }
  if (value.empty()) return false;
  std::lock_guard<std::mutex> lock(auth_mu_);
  authorization_ = "Bearer " + value;
  return true;
}

Error HttpClient::outcome_error(const HttpOutcome& outcome, std::string_view what, const RetryClock* clock) const {
  std::string after;
  if (clock != nullptr && clock->attempts() > 1) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " (after %d attempts in %.1f s)", clock->attempts(), clock->seconds());
    after = buf;
  }
  std::string where = "registry " + registry_name_;
  if (outcome.cancelled) return make_error(ErrorKind::kUnavailable, std::string(what) + ": cancelled");
  if (!outcome.transport_ok()) {
    return make_error(ErrorKind::kUnavailable,
                      std::string(what) + ": " + where + ": " + outcome.transport_error + after);
  }
  long s = outcome.response.status;
  std::string detail = registry_error_text(outcome.response);
  std::string text = std::string(what) + ": " + where + " answered HTTP " + std::to_string(s) +
                     (detail.empty() ? "" : " (" + detail + ")") + after;
  ErrorKind kind = ErrorKind::kUnavailable;
  if (s == 404) kind = ErrorKind::kNotFound;
  if (s == 401 || s == 403) {
    kind = ErrorKind::kInvalidArgument;
    text += "; the registry wants credentials: set HEARTH_REGISTRY_USERNAME and HEARTH_REGISTRY_PASSWORD";
  } else if (s >= 400 && s < 500 && s != 404 && s != 408 && s != 429) {
    kind = ErrorKind::kInvalidArgument;
  }
  return make_error(kind, text);
}

Result<HttpResponse> HttpClient::send(const HttpRequest& request, std::string_view what) {
  RetryClock clock(limits_);
  while (true) {
    HttpOutcome outcome = attempt(request);
    if (outcome.transport_ok() && outcome.response.status >= 200 && outcome.response.status < 300) {
      return std::move(outcome.response);
    }
    if (outcome.transient()) {
      log_debug("registry request failed, retrying",
                {{"registry", registry_name_}, {"url", request.url}, {"status", static_cast<long>(outcome.response.status)},
                 {"error", outcome.transport_error}, {"attempt", clock.attempts()}});
      if (clock.wait_before_retry(request.cancel)) continue;
    }
    return outcome_error(outcome, what, &clock);
  }
}

Result<AuthChallenge> parse_auth_challenge(std::string_view header) {
  AuthChallenge c;
  std::string_view rest = header;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  size_t space = rest.find(' ');
  std::string scheme(rest.substr(0, space));
  for (char& ch : scheme) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (scheme != "bearer" && scheme != "basic") {
    return make_error(ErrorKind::kUnsupported, "authentication challenge '" + std::string(header.substr(0, 80)) +
                                                   "' is neither Bearer nor Basic");
  }
  c.scheme = scheme;
  rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  // key="value" pairs separated by commas; values may hold commas inside their quotes.
  while (!rest.empty()) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == ',')) rest.remove_prefix(1);
    size_t eq = rest.find('=');
    if (eq == std::string_view::npos) break;
    std::string key = trim(rest.substr(0, eq));
    for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    rest.remove_prefix(eq + 1);
    std::string value;
    if (!rest.empty() && rest.front() == '"') {
      size_t close = rest.find('"', 1);
      if (close == std::string_view::npos) return make_error(ErrorKind::kCorrupt, "unterminated quote in challenge");
      value = std::string(rest.substr(1, close - 1));
      rest.remove_prefix(close + 1);
    } else {
      size_t comma = rest.find(',');
      value = trim(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma);
    }
    if (key == "realm") c.realm = value;
    if (key == "service") c.service = value;
    if (key == "scope") c.scope = value;
  }
  return c;
}

std::string url_with_query(const std::string& url, std::string_view query) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + std::string(query);
}

std::string url_escape(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string resolve_location(const std::string& base_url, const std::string& location) {
  if (location.starts_with("http://") || location.starts_with("https://")) return location;
  // scheme://authority of the base, then the location's path.
  size_t scheme_end = base_url.find("://");
  size_t path_start = scheme_end == std::string::npos ? std::string::npos : base_url.find('/', scheme_end + 3);
  std::string origin = path_start == std::string::npos ? base_url : base_url.substr(0, path_start);
  return origin + (location.starts_with("/") ? "" : "/") + location;
}

}  // namespace hearth::registry
