// POSIX implementation of AnonymousMemory and release_mapped_pages (see anonymous_memory.h).
#include "util/anonymous_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace hearth {

AnonymousMemory::~AnonymousMemory() { reset(); }

AnonymousMemory::AnonymousMemory(AnonymousMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AnonymousMemory& AnonymousMemory::operator=(AnonymousMemory&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void AnonymousMemory::reset() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

Result<AnonymousMemory> AnonymousMemory::allocate(size_t bytes) {
  AnonymousMemory m;
  if (bytes == 0) return m;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    return make_error(ErrorKind::kIo,
                      "cannot allocate " + std::to_string(bytes >> 20) + " MiB: " + std::strerror(err));
  }
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without huge pages it still works
#endif
  m.data_ = static_cast<uint8_t*>(p);
  m.size_ = bytes;
  return m;
}

void release_mapped_pages(const void* p, size_t bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes) / page * page;
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace hearth
