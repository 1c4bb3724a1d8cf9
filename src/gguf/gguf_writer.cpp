// GGUF v3 writer (see gguf_writer.h): header, metadata in insertion order, tensor infos, then
// each tensor's bytes at an aligned offset, zero-padded, the way common GGUF writers lay files
// out (every tensor, the last one included, is padded to the alignment; a file with no
// tensors is not padded at all).
#include "gguf/gguf_writer.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "util/file_io.h"

namespace hearth::gguf {
namespace {

bool is_power_of_two(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

template <typename T>
void put(std::string& out, T x) {
  char buf[sizeof(T)];
  std::memcpy(buf, &x, sizeof(T));
  out.append(buf, sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s.data(), s.size());
}

void put_array(std::string& out, const Array& arr);

// Writes the payload of a value (no type tag).
void put_value(std::string& out, const Value& v) {
  std::visit(
      [&out](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(out, x);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<Array>>) {
          if (x) {
            put_array(out, *x);
          } else {
            put<uint32_t>(out, static_cast<uint32_t>(ValueType::kUint8));
            put<uint64_t>(out, 0);
          }
        } else if constexpr (std::is_same_v<T, bool>) {
          put<uint8_t>(out, x ? 1 : 0);
        } else {
          put<T>(out, x);
        }
      },
      v.storage());
}

void put_array(std::string& out, const Array& arr) {
  put<uint32_t>(out, static_cast<uint32_t>(arr.elem_type));
  put<uint64_t>(out, arr.size());
  std::visit(
      [&out](const auto& items) {
        using V = typename std::decay_t<decltype(items)>::value_type;
        if constexpr (std::is_same_v<V, std::string>) {
          for (const auto& s : items) put_string(out, s);
        } else if constexpr (std::is_same_v<V, Value>) {
          for (const auto& item : items) {
            const Array* inner = item.array();
            if (inner != nullptr) {
              put_array(out, *inner);
            } else {  // a non-array element in an array of arrays: write it as an empty array
              put<uint32_t>(out, static_cast<uint32_t>(ValueType::kUint8));
              put<uint64_t>(out, 0);
            }
          }
        } else if constexpr (std::is_same_v<V, bool>) {
          for (bool b : items) put<uint8_t>(out, b ? 1 : 0);
        } else {
          const size_t n = items.size() * sizeof(V);
          if (n > 0) out.append(reinterpret_cast<const char*>(items.data()), n);
        }
      },
      arr.items);
}

void pad_to(std::string& out, uint64_t alignment) {
  size_t rem = out.size() % alignment;
  if (rem != 0) out.append(alignment - rem, '\0');
}

}  // namespace

void Writer::set(std::string_view key, Value value) {
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  kv_.emplace_back(std::string(key), std::move(value));
}

Result<uint64_t> Writer::check_new_tensor(std::string_view name, DType type, const std::vector<int64_t>& shape) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return make_error(ErrorKind::kInvalidArgument, "duplicate tensor name '" + std::string(name) + "'");
  }
  if (shape.empty() || shape.size() > 4) {
    return make_error(ErrorKind::kInvalidArgument, "tensor '" + std::string(name) + "' has " +
                                                       std::to_string(shape.size()) + " dimensions (must be 1..4)");
  }
  uint64_t rows = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] <= 0) {
      return make_error(ErrorKind::kInvalidArgument, "tensor '" + std::string(name) + "' dimension " +
                                                         std::to_string(i) + " is " + std::to_string(shape[i]));
    }
    if (i > 0) {
      if (rows > UINT64_MAX / static_cast<uint64_t>(shape[i])) {
        return make_error(ErrorKind::kOutOfRange, "tensor '" + std::string(name) + "' size overflows");
      }
      rows *= static_cast<uint64_t>(shape[i]);
    }
  }
  auto row_bytes = dtype_row_bytes(type, static_cast<uint64_t>(shape[0]));
  if (!row_bytes.ok()) return row_bytes.error().with_context("tensor '" + std::string(name) + "'");
  if (*row_bytes != 0 && rows > UINT64_MAX / *row_bytes) {
    return make_error(ErrorKind::kOutOfRange, "tensor '" + std::string(name) + "' size overflows");
  }
  return *row_bytes * rows;
}

Status Writer::add_tensor(std::string_view name, DType type, std::vector<int64_t> shape, std::string_view bytes) {
  HEARTH_ASSIGN(uint64_t expected, check_new_tensor(name, type, shape));
  if (expected != bytes.size()) {
    return make_error(ErrorKind::kInvalidArgument, "tensor '" + std::string(name) + "' has " +
                                                       std::to_string(bytes.size()) + " bytes but its type " +
                                                       std::string(dtype_name(type)) + " and shape need " +
                                                       std::to_string(expected));
  }
  tensors_.push_back(PendingTensor{std::string(name), type, std::move(shape), std::string(bytes), expected, false});
  return ok_status();
}

Status Writer::add_tensor_deferred(std::string_view name, DType type, std::vector<int64_t> shape) {
  HEARTH_ASSIGN(uint64_t expected, check_new_tensor(name, type, shape));
  tensors_.push_back(PendingTensor{std::string(name), type, std::move(shape), std::string(), expected, true});
  return ok_status();
}

std::string Writer::header() const {
  const uint64_t alignment = is_power_of_two(alignment_) ? alignment_ : 32;
  std::string out;
  out.append("GGUF", 4);
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kv_.size());
  for (const auto& [key, value] : kv_) {
    put_string(out, key);
    put<uint32_t>(out, static_cast<uint32_t>(value.type()));
    put_value(out, value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) put<uint64_t>(out, static_cast<uint64_t>(d));
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset += (t.size + alignment - 1) / alignment * alignment;
  }
  // A file without tensors ends right after its metadata (as vocab-only files do).
  if (!tensors_.empty()) pad_to(out, alignment);
  return out;
}

std::string Writer::serialize() const {
  const uint64_t alignment = is_power_of_two(alignment_) ? alignment_ : 32;
  std::string out = header();
  size_t total = out.size();
  for (const auto& t : tensors_) total += t.size + alignment;
  out.reserve(total);
  for (const auto& t : tensors_) {
    if (t.deferred) {
      out.append(t.size, '\0');
    } else {
      out.append(t.bytes);
    }
    pad_to(out, alignment);
  }
  return out;
}

Status Writer::check_alignment() const {
  if (!is_power_of_two(alignment_) || alignment_ > UINT32_MAX) {
    return make_error(ErrorKind::kInvalidArgument,
                      "writer alignment " + std::to_string(alignment_) + " is not a power of two that fits uint32");
  }
  for (const auto& [key, value] : kv_) {
    if (key != "general.alignment") continue;
    const auto* a = std::get_if<uint32_t>(&value.storage());
    if (a == nullptr || *a != alignment_) {
      return make_error(ErrorKind::kInvalidArgument, "general.alignment " + value.to_display_string() +
                                                         " does not match the writer's alignment " +
                                                         std::to_string(alignment_));
    }
  }
  return ok_status();
}

Status Writer::write(const std::string& path) const {
  HEARTH_TRY(check_alignment());
  return write_file_atomic(path, serialize());
}

Status Writer::write_streamed(const std::string& path, const TensorProducer& produce) const {
  HEARTH_TRY(check_alignment());
  HEARTH_ASSIGN(AtomicFileWriter out, AtomicFileWriter::create(path));
  HEARTH_TRY(write_to([&](std::string_view bytes) { return out.append(bytes); }, produce));
  return out.commit();
}

Status Writer::write_to(const ByteSink& sink, const TensorProducer& produce) const {
  HEARTH_TRY(check_alignment());
  HEARTH_TRY(sink(header()));
  std::string bytes;
  const std::string padding(alignment_, '\0');
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    std::string_view data = t.bytes;
    if (t.deferred) {
      bytes.clear();
      HEARTH_TRY(produce(i, bytes));
      if (bytes.size() != t.size) {
        return make_error(ErrorKind::kInvalidArgument, "tensor '" + t.name + "' was produced with " +
                                                           std::to_string(bytes.size()) + " bytes, " +
                                                           std::to_string(t.size) + " expected");
      }
      data = bytes;
    }
    HEARTH_TRY(sink(data));
    const uint64_t rem = t.size % alignment_;
    if (rem != 0) HEARTH_TRY(sink(std::string_view(padding.data(), alignment_ - rem)));
  }
  return ok_status();
}

}  // namespace hearth::gguf
