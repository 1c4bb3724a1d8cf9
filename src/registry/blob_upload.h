// Uploads one blob from a local file the way the registry API v2 asks: skip it when the
// repository has it (HEAD), else mount it from another repository of the same registry when
// the caller names one, else a chunked upload (POST a session, PATCH chunks with
// Content-Range, PUT ?digest= to close it). A chunk that fails is resumed from the offset the
// registry reports for the session. The registry checks the digest when the upload closes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "registry/http_client.h"
#include "registry/registry_manifest.h"
#include "registry/registry_reference.h"
#include "util/result.h"

namespace hearth::registry {

enum class BlobUploadKind { kAlreadyPresent, kMounted, kUploaded };

struct BlobUploadTarget {
  RegistryEndpoint endpoint;
  std::string repository;
  std::string mount_from;  // another repository on the same registry, or "" for no mount
  uint64_t chunk_bytes = 32ull << 20;
};

// `tick(completed)` is called after each chunk; returning false cancels.
Result<BlobUploadKind> upload_blob(HttpClient& http, const BlobUploadTarget& target, const BlobDescriptor& blob,
                                   const std::string& path, const std::function<bool(uint64_t completed)>& tick);

}  // namespace hearth::registry
