// Model names as ollama writes them: [host/][namespace/]model[:tag][@digest], with ollama's
// defaults (host registry.ollama.ai or $HEARTH_REGISTRY, namespace library, tag latest) and its
// character and length rules. A valid name's parts can never leave the store directory: each
// part starts with a letter, digit or '_' and holds no '/', so "..", "." and absolute paths are
// refused, as is any digest that is not "sha256:" + 64 lower-case hex digits.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace hearth::store {

inline constexpr const char* kDefaultRegistryHost = "registry.ollama.ai";
inline constexpr const char* kDefaultNamespace = "library";
inline constexpr const char* kDefaultTag = "latest";

struct ModelName {
  std::string host;       // "registry.ollama.ai", "localhost:5000", "hf.co"
  std::string ns;         // "library"
  std::string model;      // "qwen3"
  std::string tag;        // "latest"
  std::string digest;     // "" or "sha256:<64 hex>" (a manifest digest)

  // host/namespace/model:tag[@digest], every part spelled out.
  std::string full() const;
  // The short form ollama shows: the host and namespace are dropped when they are the
  // defaults ("qwen3:latest", "me/model:v1", "localhost:5000/me/model:v1").
  std::string display() const;
  // manifests/<host>/<namespace>/<model>/<tag>, relative to the store root.
  std::string manifest_relpath() const;
  // Same host, namespace, model and tag, compared without case (ollama's rule).
  bool same_as(const ModelName& other) const;
};

// The host of names that give none: $HEARTH_REGISTRY (an "http(s)://" prefix is dropped) or
// registry.ollama.ai.
std::string default_registry_host();

// Parses and validates a name, filling in the defaults. Errors (kInvalidArgument) say which
// part is wrong and why.
Result<ModelName> parse_model_name(std::string_view text);

// "sha256:<hex>" (also accepted: "sha256-<hex>", the blob file spelling) -> "sha256:<hex>".
// Errors name the digest and the expected form.
Result<std::string> parse_digest(std::string_view text);
bool is_valid_digest(std::string_view digest);  // exactly "sha256:" + 64 lower-case hex

}  // namespace hearth::store
