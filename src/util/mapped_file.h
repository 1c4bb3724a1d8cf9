// Read-only memory mapping of a whole file. Model weights are used straight from the page
// cache through this, so loading a model costs no copy and no heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/result.h"

namespace hearth {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Maps `path` read-only. An empty file maps to size 0 with a null data pointer.
  static Result<MappedFile> open(const std::string& path);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Copies [offset, offset + n) of the file to dst with read calls instead of through the
  // mapping: a one-time pass over much of the file is several times faster this way than
  // faulting its pages into the mapping (the kernel copies from its page cache without building
  // page tables). Errors name the file.
  Status read(size_t offset, size_t n, void* dst) const;

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;  // kept open for read()
  std::string path_;
};

}  // namespace hearth
