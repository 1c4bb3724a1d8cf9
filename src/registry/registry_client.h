// Pull and push of one model (a manifest and its blobs) against a registry that speaks the
// Docker Registry HTTP API v2, which is what ollama's registry and hf.co serve. The client
// never decides where files live: the caller says which blobs it has, where each one goes or
// comes from, and writes the pulled manifest itself once pull() has verified every blob.
//
// Progress events map 1:1 onto ollama's NDJSON progress lines:
//   pull: {"status":"pulling manifest"}, then per blob {"status":"pulling <12 hex>",
//         "digest":"sha256:...","total":N,"completed":M} (repeated as bytes arrive; a blob the
//         caller already has is reported once, complete), then {"status":"verifying sha256 digest"};
//         the caller adds "writing manifest" and "success".
//   push: per blob {"status":"pushing <12 hex>","digest":...,"total":N,"completed":M}, then
//         {"status":"pushing manifest"}; the caller adds "retrieving manifest" before and
//         "success" after.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "registry/blob_download.h"
#include "registry/blob_upload.h"
#include "registry/http_client.h"
#include "registry/registry_manifest.h"
#include "registry/registry_reference.h"
#include "util/result.h"

namespace hearth::registry {

struct ProgressEvent {
  std::string status;
  std::string digest;  // empty for steps that are not about one blob
  uint64_t total = 0;
  uint64_t completed = 0;
};
// Returns false to cancel the pull or push (the partial files stay for the next pull).
using ProgressCallback = std::function<bool(const ProgressEvent&)>;

struct RegistryClientOptions {
  RegistryEndpoint endpoint;
  RegistryLimits limits;
  BasicCredentials credentials;  // e.g. basic_credentials_from_env()
  BlobDownloadOptions download;
  uint64_t upload_chunk_bytes = 32ull << 20;
};

struct PullRequest {
  std::string repository;  // "library/qwen3", "user/repo"
  std::string reference;   // a tag ("latest", "Q4_K_M") or "sha256:<64 hex>"
  // Whether the caller already has a verified blob; such blobs are not fetched.
  std::function<bool(const std::string& digest)> has_blob;
  // Where a fetched blob goes. `<path>.partial` and `<path>.partial.parts` are written beside it
  // while it arrives, so the folder must be on the same file system as `path`.
  std::function<std::string(const std::string& digest)> blob_path;
  ProgressCallback progress;
};

struct PullResult {
  std::string manifest_bytes;   // exactly as the registry sent them
  std::string manifest_digest;  // "sha256:" of those bytes
  Manifest manifest;
  std::vector<std::string> fetched;  // digests downloaded by this pull
  uint64_t bytes_received = 0;       // blob bytes that came over the network
  uint64_t bytes_resumed = 0;        // blob bytes an interrupted earlier pull had stored
};

struct PushRequest {
  std::string repository;
  std::string reference;  // the tag to push to
  std::string manifest_bytes;
  // The local file of each blob the manifest names.
  std::function<std::string(const std::string& digest)> blob_path;
  // Another repository on the same registry that may hold the blobs ("" for none): they are
  // mounted from there instead of uploaded.
  std::string mount_from;
  ProgressCallback progress;
};

struct PushResult {
  std::string manifest_digest;
  int blobs_present = 0;
  int blobs_mounted = 0;
  int blobs_uploaded = 0;
};

class RegistryClient {
 public:
  explicit RegistryClient(RegistryClientOptions options);

  // The manifest of repository:reference, checked against the reference when it is a digest.
  Result<std::string> fetch_manifest(const std::string& repository, const std::string& reference);
  // Fetches every blob of the manifest the caller lacks, verified, then returns the manifest.
  // Names and digests are validated before any request.
  Result<PullResult> pull(const PullRequest& request);
  // Uploads every blob of the manifest the registry lacks, then the manifest.
  Result<PushResult> push(const PushRequest& request);

  const RegistryEndpoint& endpoint() const { return options_.endpoint; }

 private:
  std::string repository_url(const std::string& repository) const;
  RegistryClientOptions options_;
  HttpClient http_;
};

}  // namespace hearth::registry
