// Who may call the server: the optional API key (Authorization: Bearer KEY or x-api-key: KEY,
// compared in constant time; /health stays open) and the browser origins allowed by CORS.
// A request whose Origin header is not allowed is refused outright, so a web page cannot use a
// visitor's local server through simple (non-preflighted) requests.
#pragma once

#include <string>
#include <vector>

namespace hearth::server {

// Loopback origins any port: what a local web UI or a desktop app webview uses.
std::vector<std::string> default_allowed_origins();

class AccessPolicy {
 public:
  // `origins`: patterns where '*' matches any run of characters ("http://localhost:*"); a
  // lone "*" allows every origin. Added to the defaults.
  AccessPolicy(std::string api_key, std::vector<std::string> extra_origins);

  bool requires_key() const { return !api_key_.empty(); }
  // True when no key is configured, or one of the headers carries it.
  bool authorized(const std::string& authorization_header, const std::string& x_api_key_header) const;
  bool origin_allowed(const std::string& origin) const;

  // Splits HEARTH_ORIGINS-style text ("a, b,c") into patterns.
  static std::vector<std::string> parse_origin_list(const std::string& text);

 private:
  std::string api_key_;
  std::vector<std::string> origins_;
};

// Glob match with '*' only.
bool wildcard_match(const std::string& pattern, const std::string& text);

}  // namespace hearth::server
