// The manifest of a stored model: a Docker image manifest (schema 2) whose layers carry
// ollama's media types, and the config blob ollama writes beside them (format, family, type,
// file type). This is what the registry serves and what manifests/<host>/<ns>/<model>/<tag>
// holds, byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace hearth::store {

namespace media_type {
inline constexpr const char* kManifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr const char* kConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr const char* kModel = "application/vnd.ollama.image.model";
inline constexpr const char* kAdapter = "application/vnd.ollama.image.adapter";
inline constexpr const char* kProjector = "application/vnd.ollama.image.projector";
inline constexpr const char* kTemplate = "application/vnd.ollama.image.template";
inline constexpr const char* kSystem = "application/vnd.ollama.image.system";
inline constexpr const char* kParams = "application/vnd.ollama.image.params";
inline constexpr const char* kMessages = "application/vnd.ollama.image.messages";
inline constexpr const char* kLicense = "application/vnd.ollama.image.license";
}  // namespace media_type

struct Layer {
  std::string media_type;
  std::string digest;  // "sha256:<hex>"
  uint64_t size = 0;
  std::string from;    // ollama's optional "from" (the model this layer came from)
};

// The config blob (application/vnd.docker.container.image.v1+json).
struct ModelConfig {
  std::string model_format = "gguf";
  std::string model_family;               // general.architecture
  std::vector<std::string> model_families;
  std::string model_type;                 // parameter size, "1.2B"
  std::string file_type;                  // "Q4_K_M"
  std::vector<std::string> capabilities;  // optional ("completion", "tools", ...)
  std::string requires_version;           // Modelfile REQUIRES
  std::vector<std::string> diff_ids;      // rootfs.diff_ids: every layer digest

  nlohmann::ordered_json to_json() const;
  static Result<ModelConfig> from_json(const nlohmann::json& j);
};

struct Manifest {
  int schema_version = 2;
  std::string media_type = media_type::kManifest;
  Layer config;
  std::vector<Layer> layers;

  // Parses and checks a manifest: every digest valid, sizes non-negative. Errors: kCorrupt.
  static Result<Manifest> parse(std::string_view json_text);
  // The JSON written to disk and to the registry (compact, fields in ollama's order).
  std::string to_json() const;
  // The config digest first, then each layer's, without repeats: every blob the model needs.
  std::vector<std::string> blob_digests() const;
  // The first layer of that media type, or nullptr.
  const Layer* find_layer(std::string_view type) const;
  // Every layer's size plus the config's: what `list` shows as the model's size.
  uint64_t total_size() const;
};

}  // namespace hearth::store
