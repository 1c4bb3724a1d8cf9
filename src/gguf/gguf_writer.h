// Writes GGUF v3 files: metadata in insertion order, tensor infos, aligned tensor data. Used by
// `create`, the quantizer, make-model and by tests that build models or malformed files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_value.h"
#include "tensor/dtype.h"
#include "util/result.h"

namespace hearth::gguf {

class Writer {
 public:
  explicit Writer(uint64_t alignment = 32) : alignment_(alignment) {}

  // Replaces the value if the key exists already (keeps its position).
  void set(std::string_view key, Value value);
  // Copies the bytes; shape ne[0] first. Errors on a duplicate name or a byte count that does
  // not match type and shape.
  Status add_tensor(std::string_view name, DType type, std::vector<int64_t> shape, std::string_view bytes);
  // Declares a tensor whose bytes are produced while write_streamed() writes the file, so that
  // files larger than memory can be written (make-model). Same checks as add_tensor.
  Status add_tensor_deferred(std::string_view name, DType type, std::vector<int64_t> shape);

  // The whole file in memory (deferred tensors' data is written as zeros). Each tensor's data is padded with zeros to the alignment; a file
  // with no tensors ends right after its metadata. "general.alignment" is written only when the
  // caller set it (serialize() writes it as given, so tests can build bad files).
  std::string serialize() const;
  // Atomic write (temporary file + rename). Errors when the writer's alignment is not a power of
  // two or a "general.alignment" the caller set is not a uint32 equal to it.
  Status write(const std::string& path) const;

  // Fills `bytes` with deferred tensor `tensor_index` (the index in add order); an error stops
  // the write.
  using TensorProducer = std::function<Status(size_t tensor_index, std::string& bytes)>;
  // Writes the file like write() (same checks, temporary file + rename), one tensor at a time:
  // held tensors from memory, deferred ones from `produce`, which must return exactly the
  // tensor's byte count.
  Status write_streamed(const std::string& path, const TensorProducer& produce) const;
  // The same bytes handed to `sink` in order (for a caller that owns the file, such as the
  // model store writing a blob it hashes as it goes). Same checks as write_streamed().
  using ByteSink = std::function<Status(std::string_view bytes)>;
  Status write_to(const ByteSink& sink, const TensorProducer& produce) const;

 private:
  struct PendingTensor {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    std::string bytes;    // empty for deferred tensors
    uint64_t size = 0;    // data bytes
    bool deferred = false;
  };
  Result<uint64_t> check_new_tensor(std::string_view name, DType type, const std::vector<int64_t>& shape) const;
  Status check_alignment() const;
  // Header, metadata and tensor infos, padded to the alignment when there are tensors.
  std::string header() const;
  uint64_t alignment_;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace hearth::gguf
