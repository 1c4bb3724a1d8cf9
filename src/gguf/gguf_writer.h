// Writes GGUF v3 files: metadata in insertion order, tensor infos, aligned tensor data. Used by
// `create`, the quantizer, make-model and by tests that build models or malformed files.
#pragma once

#include <cstdint>
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

  // The whole file in memory. Each tensor's data is padded with zeros to the alignment; a file
  // with no tensors ends right after its metadata. "general.alignment" is written only when the
  // caller set it (serialize() writes it as given, so tests can build bad files).
  std::string serialize() const;
  // Atomic write (temporary file + rename). Errors when the writer's alignment is not a power of
  // two or a "general.alignment" the caller set is not a uint32 equal to it.
  Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    std::string bytes;
  };
  uint64_t alignment_;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace hearth::gguf
