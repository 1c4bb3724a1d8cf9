// What a registry request is addressed to: the registry's base URL (scheme, host, port), a
// repository path and a reference (tag or digest), each checked against the Docker Registry
// HTTP API v2 grammar before it goes into a URL, so that no name or digest can reach another
// path on the registry or a path outside the caller's directories.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace hearth::registry {

// Where a registry answers. Plain HTTP only when the caller allowed it (--insecure).
struct RegistryEndpoint {
  std::string scheme;  // "https" or "http"
  std::string host;    // "registry.ollama.ai", "127.0.0.1"
  int port = 0;        // 0: the scheme's default

  // "https://host[:port]" without a trailing slash.
  std::string base_url() const;
  // "host[:port]" as it appears in names (and in the store's manifests/<host>/ folder).
  std::string authority() const;
};

// Parses "host[:port]", "https://host[:port]" or "http://host[:port]". Without a scheme the
// endpoint is https, or http when `insecure` is set; an explicit http:// needs `insecure`.
// The host names of Hugging Face ("huggingface.co", "hf.co") map to https://hf.co, which
// serves GGUF repositories over the same protocol.
Result<RegistryEndpoint> parse_registry_endpoint(std::string_view text, bool insecure);

// "sha256:" followed by exactly 64 lower-case hex digits.
Status validate_blob_digest(std::string_view digest);
// The 12 hex digits after "sha256:" that ollama shows in progress ("pulling 6a0746a1ec1a").
std::string digest_short(std::string_view digest);
// A repository path: 1-255 characters, components of [A-Za-z0-9] separated by one of ._- and
// joined by '/' ("library/qwen3", "bartowski/Llama-3.2-1B-Instruct-GGUF"). The registry API's
// grammar is lower-case only, but hf.co serves repositories under their mixed-case names;
// lower-casing ollama-style names is the store's rule, not the wire's.
Status validate_repository(std::string_view repository);
// A tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}) or a blob digest.
Status validate_reference(std::string_view reference);
bool reference_is_digest(std::string_view reference);

}  // namespace hearth::registry
