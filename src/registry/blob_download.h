// Downloads one blob to a caller-given path so that an interruption or a kill costs only what
// was in flight: bytes land in `<dest>.partial` (allocated to the blob's size), and
// `<dest>.partial.parts` records how far each ranged part has got; the next download of the
// same blob resumes each part with an HTTP Range request. A blob of at least
// parallel_threshold bytes is cut into parts of part_bytes, fetched in order by max_parallel
// connections at once, so that the stored prefix grows at the full rate and its sha256 can be
// computed while the blob arrives; the digest is checked before the partial file is fsynced
// and renamed to `dest`: a wrong digest leaves nothing behind.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "registry/http_client.h"
#include "registry/registry_manifest.h"
#include "util/result.h"

namespace hearth::registry {

struct BlobDownloadOptions {
  uint64_t parallel_threshold = 64ull << 20;  // smaller blobs come in one request
  uint64_t part_bytes = 16ull << 20;          // larger ones in ranged parts of this size...
  int max_parallel = 4;                       // ...this many at a time
  // How often the progress file is rewritten (and tick is called: every 100 ms).
  std::chrono::milliseconds checkpoint_interval{1000};
};

struct BlobDownloadStats {
  uint64_t bytes_received = 0;  // body bytes that came over the network in this call
  uint64_t bytes_resumed = 0;   // bytes a previous, interrupted download had already stored
};

// The partial file and its progress record for a destination path.
std::string partial_path(const std::string& dest);
std::string partial_parts_path(const std::string& dest);

// The part layout for a blob: {offset, length} pairs covering it in order.
std::vector<std::pair<uint64_t, uint64_t>> plan_blob_parts(uint64_t size, const BlobDownloadOptions& options);

// Fetches `blob` from `blob_url` into `dest`. `tick(completed)` is called on the calling thread
// about every 100 ms with the bytes stored so far (resumed ones included); returning false
// cancels, keeping the partial file for the next attempt. Errors: kCorrupt for a digest or size
// mismatch (the partial file is removed), kUnavailable for the network, kIo for the disk.
Result<BlobDownloadStats> download_blob(HttpClient& http, const std::string& blob_url, const BlobDescriptor& blob,
                                        const std::string& dest, const BlobDownloadOptions& options,
                                        const std::function<bool(uint64_t completed)>& tick);

}  // namespace hearth::registry
