// Parsing and validation of model names and digests (see model_name.h). The split follows
// ollama: a ':' after the last '/' starts the tag, '@' starts the digest, and the remaining
// slash-separated parts are, from the right, model, namespace and host.
#include "store/model_name.h"

#include <algorithm>
#include <cctype>

#include "util/settings.h"

namespace hearth::store {
namespace {

enum class Part { kHost, kNamespace, kModel, kTag };

const char* part_label(Part p) {
  switch (p) {
    case Part::kHost: return "host";
    case Part::kNamespace: return "namespace";
    case Part::kModel: return "model";
    case Part::kTag: return "tag";
  }
  return "part";
}

bool alnum_or_underscore(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// ollama's rule: 1..80 characters (350 for a host); the first a letter, digit or '_'; the rest
// also '-' and '_', '.' except in a namespace, ':' only in a host (its port).
Status check_part(Part part, const std::string& s, std::string_view whole) {
  const size_t max_len = part == Part::kHost ? 350 : 80;
  auto bad = [&](const std::string& why) {
    return make_error(ErrorKind::kInvalidArgument,
                      "invalid model name '" + std::string(whole.substr(0, 120)) + (whole.size() > 120 ? "..." : "") +
                          "': the " + part_label(part) + " " + why);
  };
  if (s.empty()) return bad("is empty");
  if (s.size() > max_len) {
    return bad("is " + std::to_string(s.size()) + " characters long (at most " + std::to_string(max_len) + ")");
  }
  if (!alnum_or_underscore(s[0])) return bad("must start with a letter, digit or '_'");
  for (size_t i = 1; i < s.size(); ++i) {
    const char c = s[i];
    if (alnum_or_underscore(c) || c == '-') continue;
    if (c == '.' && part != Part::kNamespace) continue;
    if (c == ':' && part == Part::kHost) continue;
    return bad(std::string("may not contain '") + (std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : "\\x" + std::to_string(static_cast<unsigned char>(c))) +
               "' (letters, digits, '_', '-'" + (part == Part::kNamespace ? "" : " and '.'") + " only)");
  }
  return ok_status();
}

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y)); });
}

}  // namespace

std::string ModelName::full() const {
  std::string out = host + "/" + ns + "/" + model + ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

std::string ModelName::display() const {
  std::string out;
  if (host != default_registry_host()) out = host + "/" + ns + "/";
  else if (ns != kDefaultNamespace) out = ns + "/";
  out += model + ":" + tag;
  return out;
}

std::string ModelName::manifest_relpath() const { return "manifests/" + host + "/" + ns + "/" + model + "/" + tag; }

bool ModelName::same_as(const ModelName& o) const {
  return iequals(host, o.host) && iequals(ns, o.ns) && iequals(model, o.model) && iequals(tag, o.tag);
}

std::string default_registry_host() {
  std::string host = env_setting("HEARTH_REGISTRY").value_or("");
  for (const char* scheme : {"https://", "http://"}) {
    if (host.rfind(scheme, 0) == 0) host = host.substr(std::string(scheme).size());
  }
  while (!host.empty() && host.back() == '/') host.pop_back();
  return host.empty() ? kDefaultRegistryHost : host;
}

bool is_valid_digest(std::string_view d) {
  if (d.size() != 71 || d.substr(0, 7) != "sha256:") return false;
  return std::all_of(d.begin() + 7, d.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Result<std::string> parse_digest(std::string_view text) {
  std::string d(text);
  if (d.rfind("sha256-", 0) == 0) d[6] = ':';
  if (!is_valid_digest(d)) {
    return make_error(ErrorKind::kInvalidArgument, "invalid digest '" + std::string(text.substr(0, 100)) +
                                                       (text.size() > 100 ? "..." : "") +
                                                       "': expected sha256: followed by 64 lower-case hex digits");
  }
  return d;
}

Result<ModelName> parse_model_name(std::string_view text) {
  ModelName n;
  std::string s(text);
  if (s.empty()) return make_error(ErrorKind::kInvalidArgument, "a model name is required");
  if (s.size() > 600) {
    return make_error(ErrorKind::kInvalidArgument, "invalid model name: " + std::to_string(s.size()) + " characters is too long");
  }
  if (s.find("://") != std::string::npos) s = s.substr(s.find("://") + 3);
  if (const size_t at = s.find('@'); at != std::string::npos) {
    HEARTH_ASSIGN(n.digest, parse_digest(s.substr(at + 1)));
    s.resize(at);
  }
  const size_t last_slash = s.rfind('/');
  const size_t colon = s.rfind(':');
  if (colon != std::string::npos && (last_slash == std::string::npos || colon > last_slash)) {
    n.tag = s.substr(colon + 1);
    s.resize(colon);
    HEARTH_TRY(check_part(Part::kTag, n.tag, text));
  } else {
    n.tag = kDefaultTag;
  }
  std::vector<std::string> parts;
  size_t at = 0;
  while (true) {
    const size_t slash = s.find('/', at);
    parts.push_back(s.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  if (parts.size() > 3) {
    return make_error(ErrorKind::kInvalidArgument, "invalid model name '" + std::string(text.substr(0, 120)) +
                                                       "': expected [host/][namespace/]model[:tag]");
  }
  n.model = parts.back();
  n.ns = parts.size() >= 2 ? parts[parts.size() - 2] : kDefaultNamespace;
  n.host = parts.size() == 3 ? parts[0] : default_registry_host();
  HEARTH_TRY(check_part(Part::kModel, n.model, text));
  HEARTH_TRY(check_part(Part::kNamespace, n.ns, text));
  HEARTH_TRY(check_part(Part::kHost, n.host, text));
  return n;
}

}  // namespace hearth::store
