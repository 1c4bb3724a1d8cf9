// The CPU KvMemory over one anonymous mapping (see kv_memory.h).
#include "kv/kv_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace hearth::kv {
namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older kernels answer EINVAL
#endif

}  // namespace

Result<std::unique_ptr<CpuKvMemory>> CpuKvMemory::reserve(size_t bytes) {
  if (bytes == 0) return make_error(ErrorKind::kInvalidArgument, "a KV memory reservation needs a positive size");
  const size_t rounded = (bytes + kKvChunkBytes - 1) / kKvChunkBytes * kKvChunkBytes;
  const size_t mapping_bytes = rounded + kKvChunkBytes;  // slack to align the base to a chunk
  void* p = mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    return make_error(ErrorKind::kOutOfRange, "cannot reserve " + std::to_string(rounded >> 20) +
                                                  " MiB of address space for the KV cache: " + std::strerror(err));
  }
  std::unique_ptr<CpuKvMemory> m(new CpuKvMemory());
  m->mapping_ = static_cast<uint8_t*>(p);
  m->mapping_bytes_ = mapping_bytes;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  m->base_ = reinterpret_cast<uint8_t*>((addr + kKvChunkBytes - 1) / kKvChunkBytes * kKvChunkBytes);
  m->bytes_ = rounded;
#ifdef MADV_HUGEPAGE
  (void)madvise(m->base_, m->bytes_, MADV_HUGEPAGE);  // advice only: without huge pages it still works
#endif
  return m;
}

CpuKvMemory::~CpuKvMemory() {
  if (mapping_ != nullptr) munmap(mapping_, mapping_bytes_);
}

Status CpuKvMemory::commit(size_t offset, size_t bytes) {
  if (offset > bytes_ || bytes > bytes_ - offset) {
    return make_error(ErrorKind::kOutOfRange, "KV commit past the reservation");
  }
  uint8_t* p = base_ + offset;
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return ok_status();
  if (errno == ENOMEM) return make_error(ErrorKind::kOutOfRange, "out of memory committing the KV cache");
  // Older kernels: fault each page in by writing it (released pages read as zero, so writing a
  // zero keeps the contents).
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t i = 0; i < bytes; i += page) {
    volatile uint8_t* q = p + i;
    *q = *q;
  }
  return ok_status();
}

void CpuKvMemory::release(size_t offset, size_t bytes) {
  if (offset > bytes_ || bytes > bytes_ - offset) return;
  (void)madvise(base_ + offset, bytes, MADV_DONTNEED);
}

}  // namespace hearth::kv
