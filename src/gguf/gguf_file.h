// Reads and validates a GGUF file (v2 and v3) over mmap: header, every metadata value type
// (nested arrays too), tensor infos, alignment and data offset. Validation rejects truncated
// files, overflowing sizes and offsets, tensors outside the file, duplicate names and absurd
// counts with an error that names the problem; nothing here aborts on bad input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "gguf/gguf_value.h"
#include "tensor/dtype.h"
#include "util/mapped_file.h"
#include "util/result.h"

namespace hearth::gguf {

inline constexpr uint64_t kDefaultAlignment = 32;

struct KeyValue {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // ne[0] first: ne[0] is the row length (contiguous dimension)
  DType type = DType::kF32;
  uint64_t offset = 0;         // relative to the start of the tensor data section
  uint64_t size_bytes = 0;
  const uint8_t* data = nullptr;  // points into the mapping (or the parsed buffer)

  int64_t element_count() const;
  int64_t rows() const;  // product of shape[1..]
};

class File {
 public:
  File() = default;
  File(File&&) = default;
  File& operator=(File&&) = default;

  // mmaps and parses `path`. Errors name the file and the problem.
  static Result<File> open(const std::string& path);
  // Parses a buffer owned by the caller (must outlive the File). Used by tests and the fuzzer.
  static Result<File> parse(const uint8_t* data, size_t size);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute offset of the tensor data
  size_t file_size() const { return size_; }
  const std::string& path() const { return path_; }

  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed access: T is one of uint8_t..int64_t, float, double, bool, std::string. Integer
  // types convert when the stored integer fits (a uint32 key read as int64 is fine; -1 read
  // as uint32 is an error); float reads accept float32/float64. Missing key: kNotFound;
  // other type: kTypeMismatch; both messages name the key.
  template <typename T>
  Result<T> get(std::string_view key) const;
  template <typename T>
  T get_or(std::string_view key, T fallback) const {
    auto r = get<T>(key);
    return r.ok() ? std::move(r).value() : fallback;
  }
  // Arrays of scalars/strings with the same conversion rules per element.
  template <typename T>
  Result<std::vector<T>> get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

  // Copies n bytes of tensor data starting at `at` (a pointer into this file's data, e.g.
  // TensorInfo::data + k) to dst: with read calls for a mapped file (see MappedFile::read),
  // with memcpy for a parsed buffer.
  Status read_bytes(const uint8_t* at, size_t n, void* dst) const;
  // For a mapped file: drops the pages wholly inside [at, at + n) from this process (see
  // release_mapped_pages), for tensor data that was copied elsewhere. Does nothing for a parsed
  // buffer, which belongs to the caller.
  void release_bytes(const uint8_t* at, size_t n) const;

  // "general.architecture", or "" when absent.
  std::string architecture() const { return get_or<std::string>("general.architecture", ""); }

 private:
  friend class Parser;
  MappedFile map_;
  std::string path_;
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace hearth::gguf
