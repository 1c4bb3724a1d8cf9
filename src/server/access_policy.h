// Who may call the server: the optional API key (Authorization: Bearer KEY or x-api-key: KEY,
// compared in constant time; /health stays open), the browser origins allowed by CORS, and the
// Host names the server answers to. A request whose Origin header is not allowed is refused
// outright, so a web page cannot use a visitor's local server through simple (non-preflighted)
// requests; a request whose Host is not a name of this server is refused too (unless an API key
// is set), so a DNS-rebinding page, whose requests carry the attacker's name, reads nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hearth::server {

// Origins of local apps and webviews that no web page can carry ("tauri://*"); loopback web
// origins (http/https on localhost, 127.0.0.1, [::1], 0.0.0.0, any port) are allowed besides.
std::vector<std::string> default_allowed_origins();

// An Origin header parsed exactly: scheme "://" host [":" port] and nothing else (no user
// info, path, query or fragment). Scheme and host are lower-cased; an IPv6 host keeps its
// brackets.
struct ParsedOrigin {
  std::string scheme;
  std::string host;
  int port = -1;  // -1: none given
};
std::optional<ParsedOrigin> parse_origin(const std::string& origin);

// The host part of a Host header (or a host list entry): the port dropped, lower-cased, one
// trailing dot dropped; "[::1]:8080" gives "[::1]".
std::string host_without_port(const std::string& host);

// True when `origin` is this server as the request reached it: the scheme the listener speaks
// (`https`) and the Host header's name and port (default ports filled in on both sides). Such
// a request comes from a page this server served under that name, which is not cross-origin,
// so it needs no --origins entry; callers check the Host (host_allowed) first, so a DNS-
// rebinding name is refused before this is asked.
bool same_origin(const std::string& origin, const std::string& host_header, bool https);

class AccessPolicy {
 public:
  // `origins`: patterns where '*' matches any run of characters ("https://*.example.com"),
  // matched against an origin that parsed exactly; a lone "*" allows every origin. Added to
  // the defaults. `bound_host`: the address the server listens on. `allowed_hosts`: extra Host
  // names (HEARTH_ALLOWED_HOSTS): exact names, "*.example.com" for its subdomains, "*" for any.
  AccessPolicy(std::string api_key, std::vector<std::string> extra_origins, std::string bound_host = "127.0.0.1",
               std::vector<std::string> allowed_hosts = {});

  bool requires_key() const { return !api_key_.empty(); }
  // True when no key is configured, or one of the headers carries it.
  bool authorized(const std::string& authorization_header, const std::string& x_api_key_header) const;
  bool origin_allowed(const std::string& origin) const;
  // True for a missing Host, loopback names (localhost, *.localhost, 127.0.0.1, [::1]), the
  // bound address (for a wildcard bind, `local_addr`: the address this connection reached),
  // the allowed_hosts names, and any host at all when an API key is set. The port is ignored.
  bool host_allowed(const std::string& host_header, const std::string& local_addr) const;

  // Splits comma-separated text ("a, b,c"; HEARTH_ORIGINS, HEARTH_ALLOWED_HOSTS) into items.
  static std::vector<std::string> parse_origin_list(const std::string& text);

 private:
  std::string api_key_;
  std::vector<std::string> origins_;
  std::string bound_host_;  // as host_without_port gives it
  std::vector<std::string> allowed_hosts_;
};

// Glob match with '*' only.
bool wildcard_match(const std::string& pattern, const std::string& text);

}  // namespace hearth::server
