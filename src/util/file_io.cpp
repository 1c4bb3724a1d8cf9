// POSIX implementation of whole-file reads and atomic writes (see file_io.h).
#include "util/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace hearth {
namespace {
Error errno_error(const std::string& what, const std::string& path) {
  int err = errno;
  return make_error(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                    what + " '" + path + "': " + std::strerror(err));
}
}  // namespace

Result<std::string> read_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return errno_error("cannot open", path);
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return make_error(ErrorKind::kIo, "read error on '" + path + "'");
  return out;
}

Status write_file_atomic(const std::string& path, std::string_view contents) {
  HEARTH_ASSIGN(AtomicFileWriter out, AtomicFileWriter::create(path));
  HEARTH_TRY(out.append(contents));
  return out.commit();
}

Status fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_error("cannot open directory", dir);
  const bool ok = ::fsync(fd) == 0 || errno == EINVAL;  // some file systems cannot sync a directory
  Error e = ok ? Error{} : errno_error("cannot flush directory", dir);
  ::close(fd);
  if (!ok) return e;
  return ok_status();
}

Result<AtomicFileWriter> AtomicFileWriter::create(const std::string& path) {
  std::random_device rd;
  std::string tmp = path + ".tmp-" + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error("cannot create", tmp);
  return AtomicFileWriter(path, std::move(tmp), fd);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)), tmp_(std::move(other.tmp_)), fd_(other.fd_) {
  other.fd_ = -1;
  other.tmp_.clear();
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

Status AtomicFileWriter::append(std::string_view bytes) {
  if (fd_ < 0) return make_error(ErrorKind::kInvalidArgument, "append to a closed file '" + path_ + "'");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno_error("cannot write", tmp_);
    }
    done += static_cast<size_t>(w);
  }
  return ok_status();
}

Status AtomicFileWriter::commit() {
  if (fd_ < 0) return make_error(ErrorKind::kInvalidArgument, "commit of a closed file '" + path_ + "'");
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    Error e = errno_error("cannot flush", tmp_);
    ::close(fd);
    return e;
  }
  if (::close(fd) != 0) return errno_error("cannot flush", tmp_);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) return errno_error("cannot rename into", path_);
  tmp_.clear();
  const size_t slash = path_.rfind('/');
  return fsync_directory(slash == std::string::npos ? "." : (slash == 0 ? "/" : path_.substr(0, slash)));
}

}  // namespace hearth
