// API key and CORS origin checks (see access_policy.h).
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

}  // namespace

std::vector<std::string> default_allowed_origins() {
  std::vector<std::string> out;
  for (const char* host : {"localhost", "127.0.0.1", "[::1]", "0.0.0.0"}) {
    for (const char* scheme : {"http://", "https://"}) {
      out.push_back(std::string(scheme) + host);
      out.push_back(std::string(scheme) + host + ":*");
    }
  }
  for (const char* app : {"app://*", "file://*", "tauri://*", "vscode-webview://*"}) out.push_back(app);
  return out;
}

AccessPolicy::AccessPolicy(std::string api_key, std::vector<std::string> extra_origins)
    : api_key_(std::move(api_key)), origins_(default_allowed_origins()) {
  for (auto& o : extra_origins) origins_.push_back(std::move(o));
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

bool AccessPolicy::origin_allowed(const std::string& origin) const {
  for (const auto& pattern : origins_) {
    if (wildcard_match(pattern, origin)) return true;
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
