// Pull and push orchestration (see registry_client.h): manifest first for a pull, last for a
// push; blobs one after another, each internally parallel.
#include "registry/registry_client.h"

#include "util/log.h"
#include "util/sha256.h"

namespace hearth::registry {
namespace {

Error cancelled(const std::string& what) { return make_error(ErrorKind::kUnavailable, what + ": cancelled"); }

bool report(const ProgressCallback& progress, ProgressEvent event) { return !progress || progress(event); }

}  // namespace

RegistryClient::RegistryClient(RegistryClientOptions options)
    : options_(std::move(options)), http_(options_.endpoint.authority(), options_.limits, options_.credentials) {}

std::string RegistryClient::repository_url(const std::string& repository) const {
  return options_.endpoint.base_url() + "/v2/" + repository;
}

Result<std::string> RegistryClient::fetch_manifest(const std::string& repository, const std::string& reference) {
  HEARTH_TRY(validate_repository(repository));
  HEARTH_TRY(validate_reference(reference));
  const std::string what = "manifest " + repository + ":" + reference;
  HttpRequest request;
  request.url = repository_url(repository) + "/manifests/" + reference;
  request.headers = {std::string("Accept: ") + kManifestMediaType + ", " + kOciManifestMediaType};
  request.max_collect = kMaxManifestBytes;
  HEARTH_ASSIGN(HttpResponse response, http_.send(request, what));
  if (reference_is_digest(reference)) {
    std::string actual = "sha256:" + sha256_hex(response.body);
    if (actual != reference) {
      return make_error(ErrorKind::kCorrupt, what + ": registry " + endpoint().authority() +
                                                 " sent a manifest whose sha256 is " + actual);
    }
  }
  return std::move(response.body);
}

Result<PullResult> RegistryClient::pull(const PullRequest& request) {
  if (!request.has_blob || !request.blob_path) {
    return make_error(ErrorKind::kInvalidArgument, "pull needs has_blob and blob_path");
  }
  HEARTH_TRY(validate_repository(request.repository));
  HEARTH_TRY(validate_reference(request.reference));
  if (!report(request.progress, {"pulling manifest", "", 0, 0})) return cancelled("pull");
  PullResult result;
  HEARTH_ASSIGN(result.manifest_bytes, fetch_manifest(request.repository, request.reference));
  result.manifest_digest = "sha256:" + sha256_hex(result.manifest_bytes);
  HEARTH_ASSIGN(result.manifest, parse_manifest(result.manifest_bytes));

  for (const BlobDescriptor& blob : result.manifest.blobs()) {
    std::string status = "pulling " + digest_short(blob.digest);
    if (request.has_blob(blob.digest)) {
      if (!report(request.progress, {status, blob.digest, blob.size, blob.size})) return cancelled("pull");
      continue;
    }
    if (!report(request.progress, {status, blob.digest, blob.size, 0})) return cancelled("pull");
    std::string dest = request.blob_path(blob.digest);
    uint64_t last = 0;
    auto tick = [&](uint64_t completed) {
      if (completed == last) return true;
      last = completed;
      return report(request.progress, {status, blob.digest, blob.size, completed});
    };
    HEARTH_ASSIGN(BlobDownloadStats stats,
                  download_blob(http_, repository_url(request.repository) + "/blobs/" + blob.digest, blob, dest,
                                options_.download, tick));
    result.fetched.push_back(blob.digest);
    result.bytes_received += stats.bytes_received;
    result.bytes_resumed += stats.bytes_resumed;
  }
  // Each blob was verified as it was stored; this step marks that all of them were.
  if (!report(request.progress, {"verifying sha256 digest", "", 0, 0})) return cancelled("pull");
  log_info("pulled", {{"registry", endpoint().authority()}, {"repository", request.repository},
                      {"reference", request.reference}, {"blobs_fetched", static_cast<unsigned long>(result.fetched.size())},
                      {"bytes", static_cast<unsigned long long>(result.bytes_received)}});
  return result;
}

Result<PushResult> RegistryClient::push(const PushRequest& request) {
  if (!request.blob_path) return make_error(ErrorKind::kInvalidArgument, "push needs blob_path");
  HEARTH_TRY(validate_repository(request.repository));
  HEARTH_TRY(validate_reference(request.reference));
  HEARTH_ASSIGN(Manifest manifest, parse_manifest(request.manifest_bytes));
  BlobUploadTarget target{options_.endpoint, request.repository, request.mount_from, options_.upload_chunk_bytes};
  PushResult result;
  for (const BlobDescriptor& blob : manifest.blobs()) {
    std::string status = "pushing " + digest_short(blob.digest);
    if (!report(request.progress, {status, blob.digest, blob.size, 0})) return cancelled("push");
    auto tick = [&](uint64_t completed) { return report(request.progress, {status, blob.digest, blob.size, completed}); };
    HEARTH_ASSIGN(BlobUploadKind kind, upload_blob(http_, target, blob, request.blob_path(blob.digest), tick));
    result.blobs_present += kind == BlobUploadKind::kAlreadyPresent;
    result.blobs_mounted += kind == BlobUploadKind::kMounted;
    result.blobs_uploaded += kind == BlobUploadKind::kUploaded;
  }
  if (!report(request.progress, {"pushing manifest", "", 0, 0})) return cancelled("push");
  HttpRequest put;
  put.method = "PUT";
  put.url = repository_url(request.repository) + "/manifests/" + request.reference;
  put.headers = {"Content-Type: " + (manifest.media_type.empty() ? std::string(kManifestMediaType) : manifest.media_type)};
  put.body = request.manifest_bytes;
  HEARTH_TRY(http_.send(put, "manifest " + request.repository + ":" + request.reference));
  result.manifest_digest = "sha256:" + sha256_hex(request.manifest_bytes);
  return result;
}

}  // namespace hearth::registry
