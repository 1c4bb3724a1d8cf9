// Pull and push of one stored model: the only place that knows both the store's layout and the
// registry protocol. A pull fetches every blob the store lacks straight into the store's blob
// paths (the registry client verifies each sha256 before the rename), and only then does the
// store publish the manifest, atomically: a cancelled or failed pull leaves no manifest (partial
// blob files stay and the next pull resumes them). A push uploads the model's blobs and its
// manifest file to the registry its name's host names.
#pragma once

#include <string>

#include "registry/registry_client.h"
#include "store/model_store.h"
#include "util/result.h"

namespace hearth::transfer {

using ProgressEvent = registry::ProgressEvent;
using ProgressCallback = registry::ProgressCallback;

struct TransferOptions {
  bool insecure = false;  // plain HTTP (a registry on a private network or loopback)
  registry::RegistryLimits limits;
};

// Where a name's registry lives and what it calls the model there:
// "127.0.0.1:5000/library/tiny:v1" -> http(s)://127.0.0.1:5000, "library/tiny", "v1"
// (the digest instead of the tag when the name has one). hf.co names go to https://hf.co.
struct RemoteModel {
  registry::RegistryEndpoint endpoint;
  std::string repository;
  std::string reference;
};
Result<RemoteModel> remote_model(const store::ModelName& name, bool insecure);

// Pulls `name` into the store. Emits the registry's events ("pulling manifest", "pulling <12
// hex>" with digest/total/completed, "verifying sha256 digest") and "writing manifest"; the
// caller adds "success". `progress` returning false cancels (nothing published).
Result<registry::PullResult> pull_model(const store::ModelStore& store, const store::ModelName& name,
                                        const TransferOptions& options, const ProgressCallback& progress);

// Pushes the stored model `name` to its host. Emits "retrieving manifest", then the registry's
// "pushing <12 hex>" and "pushing manifest" events; the caller adds "success". A blob another
// stored model of the same registry shares is mounted from that model's repository when the
// registry has it there (the registry falls back to an upload when it does not).
Result<registry::PushResult> push_model(const store::ModelStore& store, const store::ModelName& name,
                                        const TransferOptions& options, const ProgressCallback& progress);

}  // namespace hearth::transfer
