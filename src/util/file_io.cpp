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
  std::random_device rd;
  std::string tmp = path + ".tmp-" + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error("cannot create", tmp);
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      Error e = errno_error("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return e;
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Error e = errno_error("cannot flush", tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = errno_error("cannot rename into", path);
    ::unlink(tmp.c_str());
    return e;
  }
  return ok_status();
}

}  // namespace hearth
