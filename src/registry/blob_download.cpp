// Resumable, parallel, verified blob downloads (see blob_download.h). Threads: one per part
// that still has bytes to fetch, one hashing the contiguous prefix as it grows, and the
// caller's thread, which reports progress and rewrites the progress record.
#include "registry/blob_download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <libgen.h>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "registry/registry_reference.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/sha256.h"

namespace hearth::registry {
namespace {

constexpr std::string_view kPartsHeader = "hearth-partial 1";
constexpr uint64_t kWritebackBytes = 8u << 20;

Error errno_error(const std::string& what, const std::string& path) {
  return make_error(ErrorKind::kIo, what + " '" + path + "': " + std::strerror(errno));
}

struct Part {
  uint64_t offset = 0;
  uint64_t length = 0;
  std::atomic<uint64_t> done{0};
};

// Everything the part threads, the hasher and the caller's thread share for one blob.
struct Download {
  const BlobDescriptor* blob = nullptr;
  std::string url;
  std::string partial;
  int fd = -1;
  std::vector<std::unique_ptr<Part>> parts;
  std::atomic<bool> cancel{false};
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> hashed{0};  // how much of the prefix the hasher has read
  std::mutex error_mu;
  std::optional<Error> error;
  std::condition_variable parts_cv;  // signalled (under error_mu) when a part thread ends
  int parts_running = 0;

  uint64_t completed() const {
    uint64_t sum = 0;
    for (const auto& p : parts) sum += p->done.load(std::memory_order_acquire);
    return sum;
  }
  // End of the prefix of the blob that is stored without gaps.
  uint64_t contiguous_end() const {
    for (const auto& p : parts) {
      uint64_t d = p->done.load(std::memory_order_acquire);
      if (d < p->length) return p->offset + d;
    }
    return blob->size;
  }
  void fail(Error e) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (!error) error = std::move(e);
    cancel = true;
  }
};

std::string format_parts(const Download& d) {
  std::ostringstream out;
  out << kPartsHeader << "\n" << d.blob->digest << " " << d.blob->size << "\n";
  for (const auto& p : d.parts) out << p->offset << " " << p->length << " " << p->done.load() << "\n";
  return out.str();
}

// Reads a progress record; any mismatch with the blob (or a malformed line) means start over.
bool parse_parts(const std::string& text, const BlobDescriptor& blob, std::vector<std::unique_ptr<Part>>* parts) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kPartsHeader) return false;
  std::string digest;
  uint64_t size = 0;
  if (!std::getline(in, line)) return false;
  std::istringstream head(line);
  if (!(head >> digest >> size) || digest != blob.digest || size != blob.size) return false;
  uint64_t expect_offset = 0;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    auto p = std::make_unique<Part>();
    uint64_t done = 0;
    if (!(row >> p->offset >> p->length >> done) || p->offset != expect_offset || done > p->length) return false;
    p->done = done;
    expect_offset += p->length;
    parts->push_back(std::move(p));
  }
  return !parts->empty() && expect_offset == blob.size;
}

// "bytes START-END/TOTAL" → START, or -1.
int64_t content_range_start(const std::string& value) {
  std::string_view v = value;
  if (!v.starts_with("bytes ")) return -1;
  v.remove_prefix(6);
  uint64_t start = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), start);
  if (ec != std::errc() || end == v.data() || *end != '-') return -1;
  return static_cast<int64_t>(start);
}

// Fetches the rest of one part, retrying from where it stopped.
void run_part(HttpClient& http, Download& d, Part& part) {
  RetryClock clock(http.limits());
  while (part.done.load() < part.length && !d.cancel) {
    const uint64_t want_start = part.offset + part.done.load();
    const uint64_t part_end = part.offset + part.length;  // exclusive
    uint64_t position = 0;                                // blob offset of the next body byte
    std::string bad_range;
    uint64_t flushed = want_start;
    const auto attempt_start = std::chrono::steady_clock::now();
    uint64_t attempt_bytes = 0;
    HttpRequest request;
    request.url = d.url;
    request.cancel = &d.cancel;
    request.headers.push_back("Range: bytes=" + std::to_string(want_start) + "-" + std::to_string(part_end - 1));
    request.on_headers = [&](const HttpResponse& r) {
      if (r.status == 206) {
        int64_t start = content_range_start(r.header("Content-Range"));
        if (start != static_cast<int64_t>(want_start)) {
          bad_range = "asked for bytes from " + std::to_string(want_start) + ", got Content-Range '" +
                      r.header("Content-Range") + "'";
          return false;
        }
        position = want_start;
      } else {
        position = 0;  // the whole blob (a registry that ignores Range): skip to the part
      }
      return true;
    };
    request.on_body = [&](std::string_view bytes) {
      d.received.fetch_add(bytes.size(), std::memory_order_relaxed);
      uint64_t from = std::max(position, part.offset + part.done.load());
      uint64_t to = std::min(position + bytes.size(), part_end);
      if (from < to) {
        const char* src = bytes.data() + (from - position);
        size_t left = static_cast<size_t>(to - from);
        uint64_t at = from;
        while (left > 0) {
          ssize_t n = ::pwrite(d.fd, src, left, static_cast<off_t>(at));
          if (n < 0) {
            if (errno == EINTR) continue;
            d.fail(errno_error("cannot write", d.partial));
            return false;
          }
          src += n;
          at += static_cast<uint64_t>(n);
          left -= static_cast<size_t>(n);
          part.done.fetch_add(static_cast<uint64_t>(n), std::memory_order_release);
        }
        // Start writing back what arrived, so that the fsync before the rename finds little
        // left to do (the disk works while the network does).
        if (uint64_t stored = part.offset + part.done.load(); stored - flushed >= kWritebackBytes) {
          ::sync_file_range(d.fd, static_cast<off_t>(flushed), static_cast<off_t>(stored - flushed), SYNC_FILE_RANGE_WRITE);
          flushed = stored;
        }
      }
      position += bytes.size();
      if (uint64_t rate = http.limits().max_receive_bytes_per_second; rate > 0) {
        attempt_bytes += bytes.size();
        auto due = attempt_start + std::chrono::microseconds(attempt_bytes * 1'000'000 / rate);
        while (std::chrono::steady_clock::now() < due && !d.cancel) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
      return position < part_end && !d.cancel;  // stop once the part is complete
    };
    uint64_t before = part.done.load();
    HttpOutcome outcome = http.attempt(request);
    if (part.done.load() >= part.length) return;  // complete (a stopped whole-blob stream included)
    if (d.cancel) return;
    if (!bad_range.empty()) {
      d.fail(make_error(ErrorKind::kCorrupt, "blob " + d.blob->digest + ": registry " + http.registry_name() + " " + bad_range));
      return;
    }
    bool ok_status = outcome.transport_ok() && outcome.response.status >= 200 && outcome.response.status < 300;
    if (ok_status) {
      // A complete response that ended before the part did: the blob is shorter than its size.
      d.fail(make_error(ErrorKind::kCorrupt, "blob " + d.blob->digest + ": registry " + http.registry_name() +
                                                 " sent fewer bytes than the manifest's size " +
                                                 std::to_string(d.blob->size)));
      return;
    }
    if (part.done.load() > before) clock.note_progress();
    if (outcome.transient() && clock.wait_before_retry(&d.cancel)) continue;
    d.fail(http.outcome_error(outcome, "blob " + d.blob->digest, &clock));
    return;
  }
}

// Hashes the blob's bytes in order as the contiguous prefix grows; returns the hex digest, or
// "" if the download was cancelled first.
std::string hash_following(Download& d, const std::atomic<bool>& parts_finished) {
  Sha256 hasher;
  std::string buffer(4u << 20, '\0');
  uint64_t hashed = 0;
  while (hashed < d.blob->size) {
    uint64_t end = d.contiguous_end();
    if (end <= hashed) {
      if (d.cancel || (parts_finished && d.contiguous_end() <= hashed)) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    size_t n = static_cast<size_t>(std::min<uint64_t>(end - hashed, buffer.size()));
    ssize_t got = ::pread(d.fd, buffer.data(), n, static_cast<off_t>(hashed));
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      d.fail(errno_error("cannot read back", d.partial));
      return "";
    }
    hasher.update(buffer.data(), static_cast<size_t>(got));
    hashed += static_cast<uint64_t>(got);
    d.hashed.store(hashed, std::memory_order_release);
  }
  return "sha256:" + hasher.finish_hex();
}

Status fsync_directory_of(const std::string& path) {
  std::string copy = path;
  std::string dir = ::dirname(copy.data());
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_error("cannot open directory", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return errno_error("cannot fsync directory", dir);
  return ok_status();
}

void remove_partial(const std::string& dest) {
  ::unlink(partial_path(dest).c_str());
  ::unlink(partial_parts_path(dest).c_str());
}

// One download attempt of the whole blob; `may_resume` false discards any earlier partial file.
// `fd` is the partial file, opened and locked by the caller.
Result<BlobDownloadStats> download_once(HttpClient& http, const std::string& blob_url, const BlobDescriptor& blob,
                                        const std::string& dest, int fd, const BlobDownloadOptions& options,
                                        const std::function<bool(uint64_t)>& tick, bool may_resume,
                                        bool* resumed_out) {
  Download d;
  d.fd = fd;
  d.blob = &blob;
  d.url = blob_url;
  d.partial = partial_path(dest);
  const std::string parts_file = partial_parts_path(dest);

  bool resumed = false;
  if (may_resume) {
    struct stat st{};
    auto record = read_file(parts_file);
    if (record.ok() && ::stat(d.partial.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == blob.size &&
        parse_parts(*record, blob, &d.parts)) {
      resumed = true;
    } else {
      d.parts.clear();
    }
  }
  if (!resumed) {
    // Start over in the same file (its inode carries the lock).
    ::unlink(parts_file.c_str());
    if (::ftruncate(d.fd, 0) != 0) return errno_error("cannot truncate", d.partial);
    for (auto [offset, length] : plan_blob_parts(blob.size, options)) {
      auto p = std::make_unique<Part>();
      p->offset = offset;
      p->length = length;
      d.parts.push_back(std::move(p));
    }
  }
  if (!resumed && blob.size > 0) {
    // Claim the space now: a full disk is one clear error up front, not a failure midway.
    int rc = ::posix_fallocate(d.fd, 0, static_cast<off_t>(blob.size));
    if (rc == EOPNOTSUPP || rc == EINVAL) rc = ::ftruncate(d.fd, static_cast<off_t>(blob.size)) == 0 ? 0 : errno;
    if (rc != 0) {
      remove_partial(dest);
      return make_error(ErrorKind::kIo, "cannot allocate " + std::to_string(blob.size) + " bytes for blob " +
                                            blob.digest + " in '" + d.partial + "': " + std::strerror(rc));
    }
  }
  BlobDownloadStats stats;
  stats.bytes_resumed = d.completed();
  *resumed_out = stats.bytes_resumed > 0;
  HEARTH_TRY(write_file_atomic(parts_file, format_parts(d)));
  if (resumed) log_info("resuming blob download", {{"digest", blob.digest}, {"have", stats.bytes_resumed}});

  auto t_start = std::chrono::steady_clock::now();
  std::atomic<bool> parts_finished{false};
  std::string actual;
  std::thread hasher([&] { actual = hash_following(d, parts_finished); });
  std::vector<std::thread> workers;
  // Workers take the unfinished parts in blob order, and none starts a part more than `window`
  // bytes past what is hashed: a slow part holds the others back instead of leaving a long
  // unhashed stretch for after the download.
  std::atomic<size_t> next_part{0};
  size_t unfinished = 0;
  for (const auto& p : d.parts) unfinished += p->done < p->length;
  const size_t parallel = static_cast<size_t>(std::max(options.max_parallel, 1));
  const size_t worker_count = std::min(unfinished, parallel);
  const uint64_t window = 2 * parallel * std::max<uint64_t>(options.part_bytes, 1);
  d.parts_running = static_cast<int>(worker_count);
  for (size_t w = 0; w < worker_count; ++w) {
    workers.emplace_back([&http, &d, &next_part, window] {
      for (size_t i = next_part++; i < d.parts.size() && !d.cancel; i = next_part++) {
        Part& part = *d.parts[i];
        if (part.done >= part.length) continue;
        while (part.offset > d.hashed.load(std::memory_order_acquire) + window && !d.cancel) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        run_part(http, d, part);
      }
      std::lock_guard<std::mutex> lock(d.error_mu);
      --d.parts_running;
      d.parts_cv.notify_all();
    });
  }
  // The caller's thread: progress ticks, cancellation, periodic progress records.
  auto last_checkpoint = std::chrono::steady_clock::now();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(d.error_mu);
      if (d.parts_running == 0 || d.cancel) break;
    }
    if (tick && !tick(d.completed())) d.cancel = true;
    {
      std::unique_lock<std::mutex> lock(d.error_mu);
      d.parts_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return d.parts_running == 0; });
    }
    if (std::chrono::steady_clock::now() - last_checkpoint >= options.checkpoint_interval) {
      (void)write_file_atomic(parts_file, format_parts(d));
      last_checkpoint = std::chrono::steady_clock::now();
    }
  }
  for (auto& w : workers) w.join();
  auto t_parts = std::chrono::steady_clock::now();
  parts_finished = true;
  hasher.join();
  auto t_hash = std::chrono::steady_clock::now();
  stats.bytes_received = d.received.load();

  if (d.error || d.cancel) {
    Error e = d.error ? *d.error : make_error(ErrorKind::kUnavailable, "blob " + blob.digest + ": cancelled");
    if (e.kind == ErrorKind::kCorrupt) {
      remove_partial(dest);
    } else {
      (void)write_file_atomic(parts_file, format_parts(d));  // keep what arrived for the next pull
    }
    return e;
  }
  if (tick) tick(d.completed());
  if (actual != blob.digest) {
    remove_partial(dest);
    return make_error(ErrorKind::kCorrupt, "blob " + blob.digest + " from registry " + http.registry_name() +
                                               " has sha256 " + actual + "; refused, nothing was written");
  }
  if (::fsync(d.fd) != 0) return errno_error("cannot fsync", d.partial);
  auto t_sync = std::chrono::steady_clock::now();
  // Where the time went: the transfer, hashing left after it, the final fsync.
  log_debug("blob verified", {{"digest", blob.digest},
                              {"download_ms", std::chrono::duration<double, std::milli>(t_parts - t_start).count()},
                              {"hash_after_ms", std::chrono::duration<double, std::milli>(t_hash - t_parts).count()},
                              {"fsync_ms", std::chrono::duration<double, std::milli>(t_sync - t_hash).count()}});
  if (::rename(d.partial.c_str(), dest.c_str()) != 0) return errno_error("cannot rename into", dest);
  ::unlink(parts_file.c_str());
  HEARTH_TRY(fsync_directory_of(dest));
  return stats;
}

// An open, exclusively locked (flock) partial file: two downloads of one blob, in one process
// or two, take turns instead of writing the same file.
struct PartialFileLock {
  int fd = -1;
  explicit PartialFileLock(int f) : fd(f) {}
  PartialFileLock(PartialFileLock&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  PartialFileLock& operator=(PartialFileLock&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = std::exchange(o.fd, -1);
    }
    return *this;
  }
  ~PartialFileLock() {
    if (fd >= 0) ::close(fd);
  }
};

// Locks `<dest>.partial`, waiting (and calling tick(0), which may cancel) while another download
// holds it. Returns nullopt when `dest` exists: the other download finished the blob.
Result<std::optional<PartialFileLock>> lock_partial_file(const std::string& dest,
                                                         const std::function<bool(uint64_t)>& tick) {
  const std::string partial = partial_path(dest);
  while (true) {
    if (::access(dest.c_str(), F_OK) == 0) return std::optional<PartialFileLock>();
    PartialFileLock lock(::open(partial.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (lock.fd < 0) return errno_error("cannot create", partial);
    if (::flock(lock.fd, LOCK_EX | LOCK_NB) == 0) {
      // The holder before us may have renamed or removed the file: lock the one at the path.
      struct stat held{}, now{};
      if (::fstat(lock.fd, &held) == 0 && ::stat(partial.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
          held.st_dev == now.st_dev) {
        return std::optional<PartialFileLock>(std::move(lock));
      }
      continue;
    }
    if (errno != EWOULDBLOCK && errno != EINTR) return errno_error("cannot lock", partial);
    if (tick && !tick(0)) return make_error(ErrorKind::kUnavailable, "blob download cancelled while waiting for another");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

std::string partial_path(const std::string& dest) { return dest + ".partial"; }
std::string partial_parts_path(const std::string& dest) { return dest + ".partial.parts"; }

std::vector<std::pair<uint64_t, uint64_t>> plan_blob_parts(uint64_t size, const BlobDownloadOptions& options) {
  std::vector<std::pair<uint64_t, uint64_t>> parts;
  uint64_t step = size >= options.parallel_threshold ? std::max<uint64_t>(options.part_bytes, 1) : size;
  for (uint64_t offset = 0; offset < size; offset += step) parts.emplace_back(offset, std::min(step, size - offset));
  if (parts.empty()) parts.emplace_back(0, 0);
  return parts;
}

Result<BlobDownloadStats> download_blob(HttpClient& http, const std::string& blob_url, const BlobDescriptor& blob,
                                        const std::string& dest, const BlobDownloadOptions& options,
                                        const std::function<bool(uint64_t completed)>& tick) {
  HEARTH_TRY(validate_blob_digest(blob.digest));
  HEARTH_ASSIGN(std::optional<PartialFileLock> lock, lock_partial_file(dest, tick));
  if (!lock) return BlobDownloadStats{};  // another download stored it meanwhile
  bool resumed = false;
  auto result = download_once(http, blob_url, blob, dest, lock->fd, options, tick, /*may_resume=*/true, &resumed);
  if (!result.ok() && result.error().kind == ErrorKind::kCorrupt && resumed) {
    // A resumed partial file may hold stale bytes (a power loss after the progress record was
    // written): fetch the whole blob once more before calling it corrupt.
    log_warn("resumed blob failed verification, downloading it again", {{"digest", blob.digest}});
    HEARTH_ASSIGN(lock, lock_partial_file(dest, tick));
    if (!lock) return BlobDownloadStats{};
    return download_once(http, blob_url, blob, dest, lock->fd, options, tick, /*may_resume=*/false, &resumed);
  }
  return result;
}

}  // namespace hearth::registry
