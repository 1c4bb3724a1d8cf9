// Pull and push of stored models (see model_transfer.h): names become registry addresses, the
// store's blob paths become the registry client's destinations and sources, and the manifest is
// published by the store only after the client has verified every blob.
#include "transfer/model_transfer.h"

#include <algorithm>
#include <filesystem>

#include "util/file_io.h"
#include "util/log.h"

namespace hearth::transfer {
namespace {

bool report(const ProgressCallback& progress, const char* status) { return !progress || progress(ProgressEvent{status, "", 0, 0}); }

Error cancelled(const char* what) { return make_error(ErrorKind::kUnavailable, std::string(what) + ": cancelled"); }

registry::RegistryClient client_for(const RemoteModel& remote, const TransferOptions& options) {
  registry::RegistryClientOptions o;
  o.endpoint = remote.endpoint;
  o.limits = options.limits;
  o.credentials = registry::basic_credentials_from_env();
  return registry::RegistryClient(std::move(o));
}

// Another repository on the same registry whose stored model shares a blob with `model`: the
// registry may hold the blob there already, and a mount costs no upload.
std::string mount_source(const store::ModelStore& store, const store::StoredModel& model) {
  const auto digests = model.manifest.blob_digests();
  const std::string repository = model.name.ns + "/" + model.name.model;
  for (const auto& other : store.list()) {
    if (other.name.host != model.name.host) continue;
    const std::string other_repository = other.name.ns + "/" + other.name.model;
    if (other_repository == repository) continue;
    const auto od = other.manifest.blob_digests();
    for (const auto& d : digests) {
      if (d != model.manifest.config.digest && std::find(od.begin(), od.end(), d) != od.end()) return other_repository;
    }
  }
  return "";
}

}  // namespace

Result<RemoteModel> remote_model(const store::ModelName& name, bool insecure) {
  RemoteModel r;
  HEARTH_ASSIGN(r.endpoint, registry::parse_registry_endpoint(name.host, insecure));
  r.repository = name.ns + "/" + name.model;
  r.reference = name.digest.empty() ? name.tag : name.digest;
  HEARTH_TRY(registry::validate_repository(r.repository));
  HEARTH_TRY(registry::validate_reference(r.reference));
  return r;
}

Result<registry::PullResult> pull_model(const store::ModelStore& store, const store::ModelName& name,
                                        const TransferOptions& options, const ProgressCallback& progress) {
  HEARTH_ASSIGN(const RemoteModel remote, remote_model(name, options.insecure));
  registry::RegistryClient client = client_for(remote, options);
  registry::PullRequest request;
  request.repository = remote.repository;
  request.reference = remote.reference;
  // A blob only an ollama store holds is linked into the primary store (the manifest needs it there).
  request.has_blob = [&](const std::string& digest) { return store.has_blob(digest) && store.adopt_blob(digest).ok(); };
  request.blob_path = [&](const std::string& digest) {
    auto path = store.blob_path(digest);  // the client checked the digest: this cannot fail on it
    return path.ok() ? *path : std::string();
  };
  request.progress = progress;
  HEARTH_ASSIGN(registry::PullResult pulled, client.pull(request));
  auto manifest = store::Manifest::parse(pulled.manifest_bytes);
  if (!manifest.ok()) {
    return make_error(ErrorKind::kCorrupt, "the manifest of " + name.display() + " from " + remote.endpoint.authority() +
                                               " is not a model manifest: " + manifest.error().message);
  }
  if (!report(progress, "writing manifest")) return cancelled("pull");
  HEARTH_TRY(store.write_manifest(name, *manifest));
  log_info("model pulled", {{"model", name.display()},
                            {"manifest", pulled.manifest_digest},
                            {"bytes_received", static_cast<long long>(pulled.bytes_received)},
                            {"bytes_resumed", static_cast<long long>(pulled.bytes_resumed)}});
  return pulled;
}

Result<registry::PushResult> push_model(const store::ModelStore& store, const store::ModelName& name,
                                        const TransferOptions& options, const ProgressCallback& progress) {
  if (!report(progress, "retrieving manifest")) return cancelled("push");
  HEARTH_ASSIGN(const store::StoredModel model, store.resolve(name));
  HEARTH_ASSIGN(const RemoteModel remote, remote_model(model.name, options.insecure));
  const std::string manifest_file = (std::filesystem::path(model.root) / model.name.manifest_relpath()).string();
  HEARTH_ASSIGN(const std::string manifest_bytes, read_file(manifest_file));
  for (const auto& d : model.manifest.blob_digests()) {
    if (!store.has_blob(d)) {
      return make_error(ErrorKind::kNotFound, "cannot push " + name.display() + ": its blob " + d + " is missing from the store");
    }
  }
  registry::RegistryClient client = client_for(remote, options);
  registry::PushRequest request;
  request.repository = remote.repository;
  request.reference = model.name.tag;
  request.manifest_bytes = manifest_bytes;
  request.blob_path = [&](const std::string& digest) { return store.find_blob(digest).value_or(std::string()); };
  request.mount_from = mount_source(store, model);
  request.progress = progress;
  HEARTH_ASSIGN(registry::PushResult pushed, client.push(request));
  log_info("model pushed", {{"model", name.display()},
                            {"manifest", pushed.manifest_digest},
                            {"uploaded", pushed.blobs_uploaded},
                            {"mounted", pushed.blobs_mounted},
                            {"present", pushed.blobs_present}});
  return pushed;
}

}  // namespace hearth::transfer
