// Whole-file reads and atomic writes (write to a temporary file in the same directory, fsync,
// rename, directory fsync), so that a crash never leaves a half-written file where a complete one was expected.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace hearth {

Result<std::string> read_file(const std::string& path);
Status write_file_atomic(const std::string& path, std::string_view contents);
// Flushes a directory's entries (after a rename or unlink in it) so that the change survives
// a power loss.
Status fsync_directory(const std::string& dir);

// The same atomic write for contents produced piece by piece (files larger than memory):
// append() writes to a temporary file beside `path`, commit() flushes and renames it into
// place. Destroying an uncommitted writer removes the temporary file.
class AtomicFileWriter {
 public:
  static Result<AtomicFileWriter> create(const std::string& path);
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  Status append(std::string_view bytes);
  Status commit();

 private:
  AtomicFileWriter(std::string path, std::string tmp, int fd) : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}
  std::string path_;
  std::string tmp_;
  int fd_ = -1;
};

}  // namespace hearth
