// The blob half of ModelStore (see model_store.h): temporary files in blobs/, hashing while
// writing, verify-then-rename commits, and imports by hard link, reflink or copy.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "store/model_store.h"
#include "util/file_io.h"
#include "util/sha256.h"

namespace hearth::store {
namespace {

namespace fs = std::filesystem;

Error errno_error(const std::string& what, const std::string& path) {
  const int err = errno;
  ErrorKind kind = err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo;
  std::string hint = (err == ENOSPC || err == EDQUOT) ? " (the disk holding the model store is full)" : "";
  return make_error(kind, what + " '" + path + "': " + std::strerror(err) + hint);
}

std::string random_suffix() {
  std::random_device rd;
  return std::to_string(rd()) + std::to_string(rd());
}

Status ensure_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorKind::kIo, "cannot create directory '" + dir + "': " + ec.message());
  return ok_status();
}

Status write_all(int fd, const char* data, size_t n, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd, data + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno_error("cannot write", path);
    }
    done += static_cast<size_t>(w);
  }
  return ok_status();
}

// Copies src into the open file fd: a reflink when `try_reflink`, else byte by byte.
Status copy_into(int src_fd, int fd, const std::string& src, const std::string& dst) {
  std::vector<char> buf(1 << 20);
  while (true) {
    const ssize_t r = ::read(src_fd, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno_error("cannot read", src);
    }
    if (r == 0) return ok_status();
    HEARTH_TRY(write_all(fd, buf.data(), static_cast<size_t>(r), dst));
  }
}

}  // namespace

struct BlobWriter::Hasher {
  Sha256 sha;
};

const char* import_method_name(ImportMethod m) {
  switch (m) {
    case ImportMethod::kHardLink: return "hard link";
    case ImportMethod::kReflink: return "reflink";
    case ImportMethod::kCopy: return "copy";
  }
  return "copy";
}

std::string blob_file_name(const std::string& digest) {
  std::string name = digest;
  if (name.size() > 6 && name.compare(0, 7, "sha256:") == 0) name[6] = '-';
  return name;
}

bool is_temp_file_name(std::string_view name) { return name.find(".tmp-") != std::string_view::npos; }

BlobWriter::BlobWriter(std::string blobs_dir, std::string tmp, int fd)
    : blobs_dir_(std::move(blobs_dir)), tmp_(std::move(tmp)), fd_(fd), hasher_(std::make_unique<Hasher>()) {}

BlobWriter::BlobWriter(BlobWriter&& o) noexcept
    : blobs_dir_(std::move(o.blobs_dir_)), tmp_(std::move(o.tmp_)), fd_(o.fd_), size_(o.size_), hasher_(std::move(o.hasher_)) {
  o.fd_ = -1;
  o.tmp_.clear();
}

BlobWriter::~BlobWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

Status BlobWriter::append(std::string_view bytes) {
  if (fd_ < 0) return make_error(ErrorKind::kInvalidArgument, "append to a finished blob");
  HEARTH_TRY(write_all(fd_, bytes.data(), bytes.size(), tmp_));
  hasher_->sha.update(bytes.data(), bytes.size());
  size_ += bytes.size();
  return ok_status();
}

Result<std::string> BlobWriter::commit(const std::string& expected_digest) {
  if (fd_ < 0) return make_error(ErrorKind::kInvalidArgument, "commit of a finished blob");
  const int fd = fd_;
  fd_ = -1;
  const std::string digest = "sha256:" + hasher_->sha.finish_hex();
  if (!expected_digest.empty() && digest != expected_digest) {
    ::close(fd);
    return make_error(ErrorKind::kInvalidArgument, "digest mismatch: the data hashes to " + digest + ", not " + expected_digest);
  }
  if (::fsync(fd) != 0) {
    Error e = errno_error("cannot flush", tmp_);
    ::close(fd);
    return e;
  }
  ::close(fd);
  const std::string dst = blobs_dir_ + "/" + blob_file_name(digest);
  if (::rename(tmp_.c_str(), dst.c_str()) != 0) return errno_error("cannot rename into", dst);
  tmp_.clear();
  HEARTH_TRY(fsync_directory(blobs_dir_));
  return digest;
}

Result<std::string> ModelStore::blob_path(const std::string& digest) const {
  HEARTH_ASSIGN(const std::string d, parse_digest(digest));
  HEARTH_TRY(ensure_dir(root_ + "/blobs"));
  return root_ + "/blobs/" + blob_file_name(d);
}

std::optional<std::string> ModelStore::find_blob(const std::string& digest) const {
  auto d = parse_digest(digest);
  if (!d.ok()) return std::nullopt;
  std::vector<std::string> roots{root_};
  roots.insert(roots.end(), read_only_roots_.begin(), read_only_roots_.end());
  for (const auto& r : roots) {
    const std::string p = r + "/blobs/" + blob_file_name(*d);
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return p;
  }
  return std::nullopt;
}

Result<BlobWriter> ModelStore::begin_blob() const {
  const std::string dir = root_ + "/blobs";
  HEARTH_TRY(ensure_dir(dir));
  const std::string tmp = dir + "/upload.tmp-" + random_suffix();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error("cannot create", tmp);
  return BlobWriter(dir, tmp, fd);
}

Status ModelStore::commit_blob_file(const std::string& file, const std::string& digest) const {
  HEARTH_ASSIGN(const std::string d, parse_digest(digest));
  HEARTH_ASSIGN(const std::string dst, blob_path(d));
  auto actual = sha256_file_hex(file);
  if (!actual.ok()) return actual.error();
  if ("sha256:" + *actual != d) {
    ::unlink(file.c_str());
    return make_error(ErrorKind::kCorrupt, "blob " + d + " was refused: its data hashes to sha256:" + *actual);
  }
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error("cannot open", file);
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return errno_error("cannot flush", file);
  if (::rename(file.c_str(), dst.c_str()) != 0) return errno_error("cannot rename into", dst);
  return fsync_directory(root_ + "/blobs");
}

Result<std::string> ModelStore::put_blob(std::string_view bytes) const {
  HEARTH_ASSIGN(BlobWriter w, begin_blob());
  HEARTH_TRY(w.append(bytes));
  return w.commit();
}

Result<std::string> ModelStore::read_blob(const std::string& digest) const {
  auto path = find_blob(digest);
  if (!path) return make_error(ErrorKind::kNotFound, "blob " + digest + " is not in the store");
  return read_file(*path);
}

Result<ImportedBlob> ModelStore::import_file(const std::string& path) const {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno_error("cannot read", path);
  if (!S_ISREG(st.st_mode)) return make_error(ErrorKind::kInvalidArgument, "'" + path + "' is not a regular file");
  HEARTH_ASSIGN(const std::string hex, sha256_file_hex(path));
  ImportedBlob out;
  out.digest = "sha256:" + hex;
  out.size = static_cast<uint64_t>(st.st_size);
  HEARTH_ASSIGN(const std::string dst, blob_path(out.digest));
  struct stat existing {};
  if (::stat(dst.c_str(), &existing) == 0) {
    out.method = existing.st_ino == st.st_ino && existing.st_dev == st.st_dev ? ImportMethod::kHardLink : ImportMethod::kCopy;
    return out;  // already stored (content-addressed: same digest, same bytes)
  }
  const std::string dir = root_ + "/blobs";
  const std::string tmp = dir + "/import.tmp-" + random_suffix();
  if (::link(path.c_str(), tmp.c_str()) == 0) {
    out.method = ImportMethod::kHardLink;
  } else {
    const int src = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (src < 0) return errno_error("cannot open", path);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      Error e = errno_error("cannot create", tmp);
      ::close(src);
      return e;
    }
    Status copied = ok_status();
    if (::ioctl(fd, FICLONE, src) == 0) {
      out.method = ImportMethod::kReflink;
    } else {
      out.method = ImportMethod::kCopy;
      copied = copy_into(src, fd, path, tmp);
    }
    if (copied.ok() && ::fsync(fd) != 0) copied = errno_error("cannot flush", tmp);
    ::close(fd);
    ::close(src);
    if (!copied.ok()) {
      ::unlink(tmp.c_str());
      return copied.error();
    }
    // A copy is hashed again: the source may have changed while it was read.
    auto copy_hex = sha256_file_hex(tmp);
    if (!copy_hex.ok() || *copy_hex != hex) {
      ::unlink(tmp.c_str());
      return make_error(ErrorKind::kIo, "'" + path + "' changed while it was being imported; try again");
    }
  }
  if (::rename(tmp.c_str(), dst.c_str()) != 0) {
    Error e = errno_error("cannot rename into", dst);
    ::unlink(tmp.c_str());
    return e;
  }
  HEARTH_TRY(fsync_directory(dir));
  return out;
}

Status ModelStore::adopt_blob(const std::string& digest) const {
  HEARTH_ASSIGN(const std::string dst, blob_path(digest));
  if (::access(dst.c_str(), F_OK) == 0) return ok_status();
  auto src = find_blob(digest);
  if (!src) return make_error(ErrorKind::kNotFound, "blob " + digest + " is not in the store");
  HEARTH_ASSIGN(ImportedBlob b, import_file(*src));
  if (b.digest != digest) return make_error(ErrorKind::kCorrupt, "blob file " + *src + " does not hash to " + digest);
  return ok_status();
}

}  // namespace hearth::store
