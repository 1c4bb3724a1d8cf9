// Large buffers taken from the kernel page by page (mmap), for data that lives as long as a
// loaded model: they ask for transparent huge pages (fewer page faults and TLB misses when a
// decode step streams through gigabytes) and go back to the system whole when freed. Also the
// counterpart for file mappings: dropping pages whose contents were copied elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/result.h"

namespace hearth {

class AnonymousMemory {
 public:
  AnonymousMemory() = default;
  ~AnonymousMemory();
  AnonymousMemory(AnonymousMemory&& other) noexcept;
  AnonymousMemory& operator=(AnonymousMemory&& other) noexcept;
  AnonymousMemory(const AnonymousMemory&) = delete;
  AnonymousMemory& operator=(const AnonymousMemory&) = delete;

  // bytes of zeroed, page-aligned, read-write memory (0 bytes: an empty region).
  static Result<AnonymousMemory> allocate(size_t bytes);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void reset();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Unmaps from this process the pages that lie wholly inside [p, p + bytes) of a read-only file
// mapping, so that they stop counting as its resident memory; touching them again reads them
// back from the file. Pages shared with data outside the range are kept. On an AnonymousMemory
// region the pages go back to the system and read as zeros if touched again.
void release_mapped_pages(const void* p, size_t bytes);

}  // namespace hearth
