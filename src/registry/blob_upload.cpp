// Blob uploads over the registry API v2 (see blob_upload.h).
#include "registry/blob_upload.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace hearth::registry {
namespace {

// The upload session's stored length from its Range header ("0-N" means N+1 bytes).
uint64_t stored_bytes(const HttpResponse& r) {
  std::string range = r.header("Range");
  if (range.starts_with("bytes=")) range = range.substr(6);
  auto dash = range.find('-');
  if (dash == std::string::npos) return 0;
  uint64_t last = 0;
  auto [end, ec] = std::from_chars(range.data() + dash + 1, range.data() + range.size(), last);
  if (ec != std::errc()) return 0;
  return last + 1;
}

Result<std::string> session_location(const HttpResponse& r, const std::string& request_url, const std::string& what) {
  std::string location = r.header("Location");
  if (location.empty()) {
    return make_error(ErrorKind::kCorrupt, what + ": the registry's answer has no Location header");
  }
  return resolve_location(request_url, location);
}

}  // namespace

Result<BlobUploadKind> upload_blob(HttpClient& http, const BlobUploadTarget& target, const BlobDescriptor& blob,
                                   const std::string& path, const std::function<bool(uint64_t completed)>& tick) {
  HEARTH_TRY(validate_blob_digest(blob.digest));
  const std::string what = "blob " + blob.digest;
  const std::string repo_url = target.endpoint.base_url() + "/v2/" + target.repository;

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorKind::kNotFound, "cannot open blob file '" + path + "': " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != blob.size) {
    return make_error(ErrorKind::kCorrupt, "blob file '" + path + "' has " + std::to_string(st.st_size) +
                                               " bytes, the manifest says " + std::to_string(blob.size));
  }

  HttpRequest head;
  head.method = "HEAD";
  head.url = repo_url + "/blobs/" + blob.digest;
  auto exists = http.send(head, what);
  if (exists.ok()) {
    if (tick) tick(blob.size);
    return BlobUploadKind::kAlreadyPresent;
  }
  if (exists.error().kind != ErrorKind::kNotFound) return exists.error();

  HttpRequest start;
  start.method = "POST";
  start.url = repo_url + "/blobs/uploads/";
  if (!target.mount_from.empty()) {
    HEARTH_TRY(validate_repository(target.mount_from));
    start.url += "?mount=" + url_escape(blob.digest) + "&from=" + url_escape(target.mount_from);
  }
  HEARTH_ASSIGN(HttpResponse started, http.send(start, what + ": starting the upload"));
  if (started.status == 201) {
    if (tick) tick(blob.size);
    return BlobUploadKind::kMounted;
  }
  HEARTH_ASSIGN(std::string location, session_location(started, start.url, what));

  uint64_t offset = 0;
  RetryClock clock(http.limits());
  while (offset < blob.size) {
    uint64_t chunk = std::min<uint64_t>(target.chunk_bytes, blob.size - offset);
    HttpRequest patch;
    patch.method = "PATCH";
    patch.url = location;
    patch.headers = {"Content-Type: application/octet-stream",
                     "Content-Range: " + std::to_string(offset) + "-" + std::to_string(offset + chunk - 1)};
    patch.body_fd = fd;
    patch.body_offset = offset;
    patch.body_size = chunk;
    HttpOutcome outcome = http.attempt(patch);
    if (outcome.transport_ok() && outcome.response.status == 202) {
      HEARTH_ASSIGN(location, session_location(outcome.response, location, what));
      offset += chunk;
      clock.note_progress();
      if (tick && !tick(offset)) return make_error(ErrorKind::kUnavailable, what + ": cancelled");
      continue;
    }
    if (!outcome.transient() || !clock.wait_before_retry()) return http.outcome_error(outcome, what, &clock);
    // Ask the session how much it stored, and go on from there.
    HttpRequest status;
    status.url = location;
    auto stored = http.send(status, what + ": upload status");
    if (!stored.ok()) return stored.error();
    offset = std::min(stored_bytes(*stored), blob.size);
    if (std::string moved = stored->header("Location"); !moved.empty()) location = resolve_location(location, moved);
  }

  HttpRequest finish;
  finish.method = "PUT";
  finish.url = url_with_query(location, "digest=" + url_escape(blob.digest));
  finish.headers = {"Content-Type: application/octet-stream"};
  HEARTH_TRY(http.send(finish, what + ": closing the upload"));
  if (tick) tick(blob.size);
  return BlobUploadKind::kUploaded;
}

}  // namespace hearth::registry
