// Validation of registry endpoints, repositories, tags and digests (see registry_reference.h).
#include "registry/registry_reference.h"

#include <charconv>

namespace hearth::registry {
namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool is_word(char c) { return is_lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '_'; }

Error invalid(std::string message) { return make_error(ErrorKind::kInvalidArgument, std::move(message)); }

// A DNS name or IPv4 address: letters, digits, '-' and '.', not starting with '-' or '.'.
bool valid_host(std::string_view host) {
  if (host.empty() || host.size() > 253 || host.front() == '-' || host.front() == '.') return false;
  for (char c : host) {
    bool ok = is_lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string RegistryEndpoint::base_url() const { return scheme + "://" + authority(); }

std::string RegistryEndpoint::authority() const {
  return port == 0 ? host : host + ":" + std::to_string(port);
}

Result<RegistryEndpoint> parse_registry_endpoint(std::string_view text, bool insecure) {
  RegistryEndpoint ep;
  std::string_view rest = text;
  if (rest.starts_with("https://")) {
    ep.scheme = "https";
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    if (!insecure) {
      return invalid("registry '" + std::string(text) + "' is plain HTTP; pass --insecure to allow it");
    }
    ep.scheme = "http";
    rest.remove_prefix(7);
  } else {
    ep.scheme = insecure ? "http" : "https";
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string_view host = rest;
  if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    std::string_view port_text = rest.substr(colon + 1);
    int port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 1 || port > 65535) {
      return invalid("registry '" + std::string(text) + "' has a bad port (expected 1-65535)");
    }
    ep.port = port;
  }
  if (!valid_host(host)) {
    return invalid("registry '" + std::string(text) + "' is not a host name (letters, digits, '-', '.', optional :port)");
  }
  ep.host = std::string(host);
  if (ep.host == "huggingface.co" || ep.host == "hf.co") {
    ep.host = "hf.co";
    ep.scheme = "https";
    ep.port = 0;
  }
  return ep;
}

Status validate_blob_digest(std::string_view digest) {
  constexpr std::string_view kPrefix = "sha256:";
  bool ok = digest.size() == kPrefix.size() + 64 && digest.starts_with(kPrefix);
  for (size_t i = kPrefix.size(); ok && i < digest.size(); ++i) ok = is_hex(digest[i]);
  if (!ok) {
    std::string shown(digest.substr(0, 80));
    return invalid("digest '" + shown + "' is not sha256: followed by 64 lower-case hex digits");
  }
  return ok_status();
}

std::string digest_short(std::string_view digest) {
  if (auto colon = digest.find(':'); colon != std::string_view::npos) digest.remove_prefix(colon + 1);
  return std::string(digest.substr(0, 12));
}

Status validate_repository(std::string_view repository) {
  if (repository.empty() || repository.size() > 255) {
    return invalid("repository '" + std::string(repository.substr(0, 80)) + "' must be 1-255 characters");
  }
  // component := [A-Za-z0-9]+ ([._-] [A-Za-z0-9]+)*, joined by '/'.
  bool at_component_start = true;
  bool after_separator = false;
  for (char c : repository) {
    if (is_lower_alnum(c) || (c >= 'A' && c <= 'Z')) {
      at_component_start = false;
      after_separator = false;
    } else if ((c == '.' || c == '_' || c == '-' || c == '/') && !at_component_start && !after_separator) {
      at_component_start = c == '/';
      after_separator = true;
    } else {
      return invalid("repository '" + std::string(repository) +
                     "' must be letters and digits, with single '.', '_' or '-' inside components, "
                     "joined by '/'");
    }
  }
  if (after_separator) return invalid("repository '" + std::string(repository) + "' must not end with a separator");
  return ok_status();
}

bool reference_is_digest(std::string_view reference) { return reference.find(':') != std::string_view::npos; }

Status validate_reference(std::string_view reference) {
  if (reference_is_digest(reference)) return validate_blob_digest(reference);
  bool ok = !reference.empty() && reference.size() <= 128 && is_word(reference.front());
  for (char c : reference) ok = ok && (is_word(c) || c == '.' || c == '-');
  if (!ok) {
    return invalid("tag '" + std::string(reference.substr(0, 80)) +
                   "' must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'");
  }
  return ok_status();
}

}  // namespace hearth::registry
