// API key, CORS origin and Host checks (see access_policy.h).
#include "server/access_policy.h"

#include <algorithm>
#include <cctype>

namespace hearth::server {
namespace {

// Compares without stopping at the first difference (the length may leak; the key may not).
bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]" ||
         (host.size() > 10 && host.compare(host.size() - 10, 10, ".localhost") == 0);
}

bool is_wildcard_address(const std::string& host) { return host.empty() || host == "0.0.0.0" || host == "[::]"; }

// "::1" → "[::1]": an IPv6 literal as a Host header writes it.
std::string bracket_ipv6(const std::string& host) {
  if (host.find(':') != std::string::npos && (host.empty() || host.front() != '[')) return "[" + host + "]";
  return host;
}

}  // namespace

std::vector<std::string> default_allowed_origins() { return {"app://*", "file://*", "tauri://*", "vscode-webview://*"}; }

std::optional<ParsedOrigin> parse_origin(const std::string& origin) {
  ParsedOrigin out;
  const size_t sep = origin.find("://");
  if (sep == std::string::npos || sep == 0) return std::nullopt;
  out.scheme = lower(origin.substr(0, sep));
  if (!std::isalpha(static_cast<unsigned char>(out.scheme[0]))) return std::nullopt;
  for (char c : out.scheme) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return std::nullopt;
  }
  size_t i = sep + 3;
  const size_t host_start = i;
  if (i < origin.size() && origin[i] == '[') {
    ++i;
    while (i < origin.size() && (std::isxdigit(static_cast<unsigned char>(origin[i])) || origin[i] == ':' || origin[i] == '.')) ++i;
    if (i >= origin.size() || origin[i] != ']' || i == host_start + 1) return std::nullopt;
    ++i;
  } else {
    while (i < origin.size() && (std::isalnum(static_cast<unsigned char>(origin[i])) || origin[i] == '-' || origin[i] == '.')) ++i;
    if (i == host_start) return std::nullopt;
  }
  out.host = lower(origin.substr(host_start, i - host_start));
  if (i < origin.size() && origin[i] == ':') {
    ++i;
    const size_t digits = i;
    long port = 0;
    while (i < origin.size() && std::isdigit(static_cast<unsigned char>(origin[i])) && i - digits < 5) port = port * 10 + (origin[i++] - '0');
    if (i == digits || port > 65535) return std::nullopt;
    out.port = static_cast<int>(port);
  }
  if (i != origin.size()) return std::nullopt;  // user info, a path, a query or junk follows
  return out;
}

std::string host_without_port(const std::string& host) {
  std::string h = host;
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    if (close != std::string::npos) h = h.substr(0, close + 1);
  } else if (std::count(h.begin(), h.end(), ':') == 1) {
    h = h.substr(0, h.find(':'));
  }
  h = lower(trim(h));
  if (h.size() > 1 && h.back() == '.') h.pop_back();
  return h;
}

AccessPolicy::AccessPolicy(std::string api_key, std::vector<std::string> extra_origins, std::string bound_host,
                           std::vector<std::string> allowed_hosts)
    : api_key_(std::move(api_key)), origins_(default_allowed_origins()), bound_host_(bracket_ipv6(host_without_port(bound_host))) {
  for (auto& o : extra_origins) origins_.push_back(std::move(o));
  for (const auto& h : allowed_hosts) {
    if (!h.empty()) allowed_hosts_.push_back(h == "*" ? h : host_without_port(h));
  }
}

bool AccessPolicy::authorized(const std::string& authorization_header, const std::string& x_api_key_header) const {
  if (api_key_.empty()) return true;
  bool ok = false;
  const std::string bearer = "Bearer ";
  if (authorization_header.size() > bearer.size() &&
      std::equal(bearer.begin(), bearer.end(), authorization_header.begin(),
                 [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b)); })) {
    ok = constant_time_equal(trim(authorization_header.substr(bearer.size())), api_key_) || ok;
  }
  if (!x_api_key_header.empty()) ok = constant_time_equal(trim(x_api_key_header), api_key_) || ok;
  return ok;
}

bool same_origin(const std::string& origin, const std::string& host_header, bool https) {
  const std::string scheme = https ? "https" : "http";
  auto o = parse_origin(origin);
  // The Host header read with the same exact parser: name [":" port] and nothing else.
  auto h = parse_origin(scheme + "://" + trim(host_header));
  if (!o || !h || o->scheme != scheme || o->host.empty() || o->host != h->host) return false;
  const int default_port = https ? 443 : 80;
  return (o->port < 0 ? default_port : o->port) == (h->port < 0 ? default_port : h->port);
}

bool AccessPolicy::origin_allowed(const std::string& origin) const {
  auto parsed = parse_origin(origin);
  for (const auto& pattern : origins_) {
    if (pattern == "*") return true;
  }
  if (!parsed) return false;
  if ((parsed->scheme == "http" || parsed->scheme == "https") &&
      (parsed->host == "localhost" || parsed->host == "127.0.0.1" || parsed->host == "[::1]" || parsed->host == "0.0.0.0")) {
    return true;
  }
  // Patterns see the origin as parsed, so a '*' cannot reach past the host and port.
  std::string canonical = parsed->scheme + "://" + parsed->host;
  if (parsed->port >= 0) {
    canonical += ':';
    canonical += std::to_string(parsed->port);
  }
  for (const auto& pattern : origins_) {
    if (wildcard_match(lower(pattern), canonical)) return true;
  }
  return false;
}

bool AccessPolicy::host_allowed(const std::string& host_header, const std::string& local_addr) const {
  if (requires_key() || trim(host_header).empty()) return true;
  const std::string host = host_without_port(host_header);
  if (is_loopback_host(host)) return true;
  if (is_wildcard_address(bound_host_) ? host == bracket_ipv6(local_addr) : host == bound_host_) return true;
  for (const auto& allowed : allowed_hosts_) {
    if (allowed == "*" || allowed == host) return true;
    if (allowed.size() > 2 && allowed.compare(0, 2, "*.") == 0 && host.size() > allowed.size() - 1 &&
        host.compare(host.size() - (allowed.size() - 1), allowed.size() - 1, allowed, 1, std::string::npos) == 0) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> AccessPolicy::parse_origin_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = trim(text.substr(start, comma - start));
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

bool wildcard_match(const std::string& pattern, const std::string& text) {
  // Iterative glob with backtracking to the last '*'.
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace hearth::server
