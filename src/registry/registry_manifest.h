// A registry manifest (Docker image manifest v2, schema 2, which ollama uses): the config blob
// and the layers, each a digest, a size and a media type. Parsed strictly, because its digests
// become file names and URLs: every digest is checked, every size is a non-negative integer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace hearth::registry {

// What a pull asks for first; a registry that only has OCI manifests may answer with one.
inline constexpr const char* kManifestMediaType = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr const char* kOciManifestMediaType = "application/vnd.oci.image.manifest.v1+json";
// The largest manifest accepted (an ollama manifest is well under a kilobyte).
inline constexpr size_t kMaxManifestBytes = 4u << 20;

struct BlobDescriptor {
  std::string digest;  // "sha256:<64 hex>"
  uint64_t size = 0;
  std::string media_type;  // "application/vnd.ollama.image.model", ...
};

struct Manifest {
  std::string media_type;
  BlobDescriptor config;
  std::vector<BlobDescriptor> layers;

  // The config first, then the layers, each digest once (two layers may share a blob).
  std::vector<BlobDescriptor> blobs() const;
};

Result<Manifest> parse_manifest(std::string_view bytes);

}  // namespace hearth::registry
