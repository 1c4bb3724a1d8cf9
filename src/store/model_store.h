// The model store: ollama's layout under one root directory (manifests/<host>/<ns>/<model>/<tag>
// and blobs/sha256-<hex>), written only through atomic steps (temporary file in the same
// directory, fsync, rename, directory fsync), with read-only fallback roots (an ollama store)
// searched after it.
//
// The API a registry client needs: blob_path()/find_blob() say where a blob goes and whether
// it is there; begin_blob() / commit_blob_file() write one and refuse it unless its sha256 is
// the digest asked for; write_manifest() publishes a name once every blob it names is present;
// resolve() + Manifest::blob_digests() enumerate what to push.
//
// Listing merges the roots: a name in the primary store hides the same name in a fallback;
// fallback models are listed with read_only set and cannot be removed or overwritten here (a
// copy or create that uses their blobs links them into the primary store first).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/manifest.h"
#include "store/model_name.h"
#include "util/result.h"

namespace hearth::store {

struct StoredModel {
  ModelName name;
  Manifest manifest;
  std::string manifest_digest;  // "sha256:<hex>" of the manifest file's bytes
  int64_t modified_unix = 0;    // the manifest file's modification time
  std::string root;             // the store it was found in
  bool read_only = false;       // found in a fallback (ollama) store
};

// How a file was brought into the blob directory.
enum class ImportMethod { kHardLink, kReflink, kCopy };
const char* import_method_name(ImportMethod m);

struct ImportedBlob {
  std::string digest;
  uint64_t size = 0;
  ImportMethod method = ImportMethod::kCopy;
};

// A blob written piece by piece (an HTTP upload, a generated layer): the bytes go to a
// temporary file in blobs/ and are hashed as they come; commit() moves the file into place
// under its digest. Destroying an uncommitted writer removes the temporary file.
class BlobWriter {
 public:
  BlobWriter(BlobWriter&& other) noexcept;
  BlobWriter& operator=(BlobWriter&&) = delete;
  ~BlobWriter();

  Status append(std::string_view bytes);
  // Flushes and renames the blob into place. `expected_digest` non-empty: a different sha256
  // is an error (kInvalidArgument) and nothing is kept. Returns the digest.
  Result<std::string> commit(const std::string& expected_digest = "");
  uint64_t size() const { return size_; }

 private:
  friend class ModelStore;
  struct Hasher;
  BlobWriter(std::string blobs_dir, std::string tmp, int fd);
  std::string blobs_dir_;
  std::string tmp_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::unique_ptr<Hasher> hasher_;
};

struct GcReport {
  std::vector<std::string> removed_blobs;       // digests
  std::vector<std::string> removed_temp_files;  // paths
  uint64_t bytes_freed = 0;
};

// What check_consistency() found wrong; empty when the store is consistent.
struct ConsistencyReport {
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};

class ModelStore {
 public:
  // `root` is created on the first write. `read_only_roots` are searched after it.
  explicit ModelStore(std::string root, std::vector<std::string> read_only_roots = {});

  // $HEARTH_MODELS or ~/.hearth/models, with the ollama store ($HEARTH_OLLAMA_MODELS, else
  // $OLLAMA_MODELS, else ~/.ollama/models when it exists; "off" for none) as fallback.
  static ModelStore open_default();

  const std::string& root() const { return root_; }
  const std::vector<std::string>& read_only_roots() const { return read_only_roots_; }

  // --- blobs ---
  // Where the blob with this digest lives (or is to be written) in the primary store; creates
  // blobs/. Errors: a bad digest.
  Result<std::string> blob_path(const std::string& digest) const;
  // The file holding this blob in any root, or nullopt.
  std::optional<std::string> find_blob(const std::string& digest) const;
  bool has_blob(const std::string& digest) const { return find_blob(digest).has_value(); }
  Result<BlobWriter> begin_blob() const;
  // Moves `file` (already in blobs/, e.g. a finished partial download) into place as `digest`
  // after checking its sha256; a mismatch removes the file and is an error (kCorrupt).
  Status commit_blob_file(const std::string& file, const std::string& digest) const;
  Result<std::string> put_blob(std::string_view bytes) const;  // returns the digest
  Result<std::string> read_blob(const std::string& digest) const;
  // Brings a file into the blob directory without a second copy when the file system allows:
  // a hard link, else a reflink (FICLONE), else a copy. The file is hashed once. A hard-linked
  // blob shares the source's inode: editing the source in place would change the blob (the
  // store checks sizes on load; see docs/decisions.md).
  Result<ImportedBlob> import_file(const std::string& path) const;
  // Makes sure the primary store holds the blob (linking it from a fallback store if needed).
  Status adopt_blob(const std::string& digest) const;

  // --- manifests ---
  // The model a name refers to (primary store first, then the fallbacks). A name with a
  // digest must match that manifest's digest. Errors: kNotFound naming the model.
  Result<StoredModel> resolve(const ModelName& name) const;
  // Publishes `manifest` under `name` atomically. Every blob it names must already be in the
  // primary store (kNotFound otherwise, and nothing is written).
  Status write_manifest(const ModelName& name, const Manifest& manifest) const;
  // Every model, sorted by name; unreadable manifests are skipped with a warning.
  std::vector<StoredModel> list() const;
  // A second name for a model (its blobs are adopted into the primary store).
  Status copy(const ModelName& from, const ModelName& to) const;
  // Removes a name and then every blob it referenced that no other manifest references.
  Status remove(const ModelName& name) const;
  // Grows at every manifest this process writes or removes through this store or a copy of it
  // (create, pull, copy, delete), so a reader can keep a listing until it changes. Writes by
  // other processes do not count.
  uint64_t manifest_changes() const { return changes_->load(std::memory_order_acquire); }
  // Drops blobs no manifest references and temporary files, both only when older than
  // `min_age` (a write in progress is younger). Partial downloads ("-partial") are kept.
  Result<GcReport> collect_garbage(std::chrono::seconds min_age) const;
  // Every manifest parses and its blobs exist with the manifest's sizes; no temporary files.
  ConsistencyReport check_consistency() const;

 private:
  std::string root_;
  std::vector<std::string> read_only_roots_;
  std::shared_ptr<std::mutex> mu_;  // manifest writes, removals and gc within one process
  std::shared_ptr<std::atomic<uint64_t>> changes_;
};

// "sha256:<hex>" -> "sha256-<hex>" (the blob file name).
std::string blob_file_name(const std::string& digest);
// True for the names of temporary files the store and util's atomic writer make.
bool is_temp_file_name(std::string_view file_name);

}  // namespace hearth::store
