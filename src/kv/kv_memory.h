// Where KV blocks live: a backend-neutral interface (reserve address space once, commit and
// release byte ranges of it, report what is resident) and its CPU implementation over one
// anonymous mapping. The block pool decides which ranges to commit and release; a GPU backend
// can later implement the same four operations over device memory (virtual reservation plus
// physical handles) without the pool changing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "util/result.h"

namespace hearth::kv {

class KvMemory {
 public:
  virtual ~KvMemory() = default;
  // Start of the reserved range (stable for the object's life) and its size in bytes.
  virtual uint8_t* base() const = 0;
  virtual size_t reserved_bytes() const = 0;
  // Makes [offset, offset + bytes) resident and zero-filled where it was released, so the
  // first write into it does not wait on the OS. Thread-safe for disjoint ranges.
  virtual Status commit(size_t offset, size_t bytes) = 0;
  // Gives [offset, offset + bytes) back to the OS; its contents are lost (reads see zeros).
  virtual void release(size_t offset, size_t bytes) = 0;
  // Granularity commit/release are applied at; ranges the pool passes are multiples of it.
  virtual size_t chunk_bytes() const = 0;
};

// Size of the chunks memory is committed and released in: one transparent huge page on x86-64
// and most arm64 kernels, so a chunk is one TLB entry when the kernel grants huge pages.
inline constexpr size_t kKvChunkBytes = size_t{2} << 20;

// Anonymous memory: mmap(MAP_NORESERVE) reserves, MADV_POPULATE_WRITE (or touching each page
// on kernels before 5.14) commits, MADV_DONTNEED releases (RSS drops at once, unlike
// MADV_FREE). The base is chunk-aligned so chunks can be huge pages (MADV_HUGEPAGE advice).
class CpuKvMemory final : public KvMemory {
 public:
  // Errors: kOutOfRange when the address space cannot be reserved.
  static Result<std::unique_ptr<CpuKvMemory>> reserve(size_t bytes);
  ~CpuKvMemory() override;
  CpuKvMemory(const CpuKvMemory&) = delete;
  CpuKvMemory& operator=(const CpuKvMemory&) = delete;

  uint8_t* base() const override { return base_; }
  size_t reserved_bytes() const override { return bytes_; }
  Status commit(size_t offset, size_t bytes) override;
  void release(size_t offset, size_t bytes) override;
  size_t chunk_bytes() const override { return kKvChunkBytes; }

 private:
  CpuKvMemory() = default;
  uint8_t* mapping_ = nullptr;  // what mmap returned (base_ rounded up to a chunk within it)
  size_t mapping_bytes_ = 0;
  uint8_t* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace hearth::kv
