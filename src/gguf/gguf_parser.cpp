// The GGUF reader proper: walks the header, metadata and tensor infos of a buffer with bounds
// checks on every read, and validates sizes, offsets and names. Every problem becomes an
// error value naming what is wrong and where; nothing here trusts a count or a length from
// the file before checking it against the bytes that are actually left.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_file.h"

namespace hearth::gguf {
namespace {

constexpr uint32_t kMaxArrayDepth = 8;
constexpr uint32_t kMaxDims = 4;
constexpr size_t kHeaderBytes = 4 + 4 + 8 + 8;
// Smallest encodings, used to reject counts that the remaining bytes could never hold.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                 // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, n_dims, 1 dim, type, offset

uint64_t min_value_bytes(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool: return 1;
    case ValueType::kUint16:
    case ValueType::kInt16: return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32: return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
    case ValueType::kString: return 8;
    case ValueType::kArray: return 4 + 8;
  }
  return 1;
}

Error corrupt(std::string message) { return make_error(ErrorKind::kCorrupt, std::move(message)); }

}  // namespace

// Friend of File: fills its private members while reading.
class Parser {
 public:
  Parser(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  Status run(File& file);

 private:
  size_t remaining() const { return size_ - pos_; }

  Status need(uint64_t n) {
    if (n > remaining()) {
      return corrupt("truncated file in " + where_ + ": need " + std::to_string(n) + " bytes at offset " +
                     std::to_string(pos_) + " but the file ends at " + std::to_string(size_));
    }
    return ok_status();
  }
  template <typename T>
  T take() {  // caller has checked need(sizeof(T))
    T x;
    std::memcpy(&x, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return x;
  }
  template <typename T>
  Result<T> read() {
    HEARTH_TRY(need(sizeof(T)));
    return take<T>();
  }

  Result<std::string> read_string();
  Result<Value> read_value(ValueType type, uint32_t depth);
  Result<Array> read_array(uint32_t depth);
  template <typename T>
  Status read_pod_items(Array& arr, uint64_t n);

  Status read_header(File& file, uint64_t& kv_count, uint64_t& tensor_count);
  Status read_metadata(File& file, uint64_t kv_count);
  Status read_alignment(File& file);
  Status read_tensor_infos(File& file, uint64_t tensor_count);
  Status check_tensor_data(File& file);

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string where_ = "header";
};

Result<std::string> Parser::read_string() {
  HEARTH_ASSIGN(uint64_t len, read<uint64_t>());
  if (len > remaining()) {
    return corrupt("string length " + std::to_string(len) + " in " + where_ + " at offset " +
                   std::to_string(pos_ - 8) + " runs past the end of the file (" + std::to_string(remaining()) +
                   " bytes left)");
  }
  std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return s;
}

template <typename T>
Status Parser::read_pod_items(Array& arr, uint64_t n) {
  std::vector<T> v(static_cast<size_t>(n));
  if (n > 0) std::memcpy(v.data(), data_ + pos_, static_cast<size_t>(n) * sizeof(T));
  pos_ += static_cast<size_t>(n) * sizeof(T);
  arr.items = std::move(v);
  return ok_status();
}

Result<Array> Parser::read_array(uint32_t depth) {
  if (depth >= kMaxArrayDepth) {
    return corrupt("arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels in " + where_);
  }
  HEARTH_ASSIGN(uint32_t raw_type, read<uint32_t>());
  if (!value_type_valid(raw_type)) {
    return corrupt("unknown value type " + std::to_string(raw_type) + " for array elements in " + where_);
  }
  auto elem = static_cast<ValueType>(raw_type);
  HEARTH_ASSIGN(uint64_t n, read<uint64_t>());
  uint64_t min_bytes = min_value_bytes(elem);
  if (n > remaining() / min_bytes) {
    return corrupt("array length " + std::to_string(n) + " of " + value_type_name(elem) + " in " + where_ +
                   " exceeds the " + std::to_string(remaining()) + " bytes left in the file");
  }
  Array arr;
  arr.elem_type = elem;
  switch (elem) {
    case ValueType::kUint8: HEARTH_TRY(read_pod_items<uint8_t>(arr, n)); break;
    case ValueType::kInt8: HEARTH_TRY(read_pod_items<int8_t>(arr, n)); break;
    case ValueType::kUint16: HEARTH_TRY(read_pod_items<uint16_t>(arr, n)); break;
    case ValueType::kInt16: HEARTH_TRY(read_pod_items<int16_t>(arr, n)); break;
    case ValueType::kUint32: HEARTH_TRY(read_pod_items<uint32_t>(arr, n)); break;
    case ValueType::kInt32: HEARTH_TRY(read_pod_items<int32_t>(arr, n)); break;
    case ValueType::kFloat32: HEARTH_TRY(read_pod_items<float>(arr, n)); break;
    case ValueType::kUint64: HEARTH_TRY(read_pod_items<uint64_t>(arr, n)); break;
    case ValueType::kInt64: HEARTH_TRY(read_pod_items<int64_t>(arr, n)); break;
    case ValueType::kFloat64: HEARTH_TRY(read_pod_items<double>(arr, n)); break;
    case ValueType::kBool: {
      std::vector<bool> v(static_cast<size_t>(n));
      for (uint64_t i = 0; i < n; ++i) v[i] = data_[pos_ + i] != 0;
      pos_ += static_cast<size_t>(n);
      arr.items = std::move(v);
      break;
    }
    case ValueType::kString: {
      std::vector<std::string> v;
      v.reserve(static_cast<size_t>(n));
      for (uint64_t i = 0; i < n; ++i) {
        HEARTH_ASSIGN(std::string s, read_string());
        v.push_back(std::move(s));
      }
      arr.items = std::move(v);
      break;
    }
    case ValueType::kArray: {
      std::vector<Value> v;
      v.reserve(static_cast<size_t>(n));
      for (uint64_t i = 0; i < n; ++i) {
        HEARTH_ASSIGN(Array inner, read_array(depth + 1));
        v.emplace_back(std::move(inner));
      }
      arr.items = std::move(v);
      break;
    }
  }
  return arr;
}

Result<Value> Parser::read_value(ValueType type, uint32_t depth) {
  switch (type) {
    case ValueType::kUint8: { HEARTH_ASSIGN(auto x, read<uint8_t>()); return Value(x); }
    case ValueType::kInt8: { HEARTH_ASSIGN(auto x, read<int8_t>()); return Value(x); }
    case ValueType::kUint16: { HEARTH_ASSIGN(auto x, read<uint16_t>()); return Value(x); }
    case ValueType::kInt16: { HEARTH_ASSIGN(auto x, read<int16_t>()); return Value(x); }
    case ValueType::kUint32: { HEARTH_ASSIGN(auto x, read<uint32_t>()); return Value(x); }
    case ValueType::kInt32: { HEARTH_ASSIGN(auto x, read<int32_t>()); return Value(x); }
    case ValueType::kFloat32: { HEARTH_ASSIGN(auto x, read<float>()); return Value(x); }
    case ValueType::kUint64: { HEARTH_ASSIGN(auto x, read<uint64_t>()); return Value(x); }
    case ValueType::kInt64: { HEARTH_ASSIGN(auto x, read<int64_t>()); return Value(x); }
    case ValueType::kFloat64: { HEARTH_ASSIGN(auto x, read<double>()); return Value(x); }
    case ValueType::kBool: { HEARTH_ASSIGN(auto x, read<uint8_t>()); return Value(x != 0); }
    case ValueType::kString: { HEARTH_ASSIGN(std::string s, read_string()); return Value(std::move(s)); }
    case ValueType::kArray: { HEARTH_ASSIGN(Array a, read_array(depth)); return Value(std::move(a)); }
  }
  return corrupt("unknown value type in " + where_);
}

Status Parser::read_header(File& file, uint64_t& kv_count, uint64_t& tensor_count) {
  if (size_ < 4) return corrupt("truncated file in header: " + std::to_string(size_) + " bytes, too short for the magic");
  if (std::memcmp(data_, "GGUF", 4) != 0) {
    std::string got;
    for (int i = 0; i < 4; ++i) {
      char c = static_cast<char>(data_[i]);
      got += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    return corrupt("bad magic '" + got + "': not a GGUF file");
  }
  pos_ = 4;
  HEARTH_ASSIGN(uint32_t version, read<uint32_t>());
  if (version == 1) return make_error(ErrorKind::kUnsupported, "GGUF version 1 is not supported (only 2 and 3)");
  if (version == 0x02000000u || version == 0x03000000u) {
    return make_error(ErrorKind::kUnsupported, "big-endian GGUF files are not supported");
  }
  if (version != 2 && version != 3) {
    return make_error(ErrorKind::kUnsupported, "unsupported GGUF version " + std::to_string(version) + " (only 2 and 3)");
  }
  file.version_ = version;
  HEARTH_ASSIGN(tensor_count, read<uint64_t>());
  HEARTH_ASSIGN(kv_count, read<uint64_t>());
  uint64_t left = remaining();
  if (kv_count > left / kMinKvBytes) {
    return corrupt("kv_count " + std::to_string(kv_count) + " is absurd: the " + std::to_string(left) +
                   " bytes after the header could hold at most " + std::to_string(left / kMinKvBytes) + " entries");
  }
  if (tensor_count > left / kMinTensorInfoBytes ||
      tensor_count * kMinTensorInfoBytes > left - kv_count * kMinKvBytes) {
    return corrupt("tensor_count " + std::to_string(tensor_count) + " is absurd: the " + std::to_string(left) +
                   " bytes after the header cannot hold that many tensor infos");
  }
  static_assert(kHeaderBytes == 24);
  return ok_status();
}

Status Parser::read_metadata(File& file, uint64_t kv_count) {
  file.metadata_.reserve(static_cast<size_t>(kv_count));
  file.metadata_index_.reserve(static_cast<size_t>(kv_count));
  for (uint64_t i = 0; i < kv_count; ++i) {
    where_ = "metadata entry " + std::to_string(i);
    HEARTH_ASSIGN(std::string key, read_string());
    where_ += " ('" + key + "')";
    HEARTH_ASSIGN(uint32_t raw_type, read<uint32_t>());
    if (!value_type_valid(raw_type)) return corrupt("unknown value type " + std::to_string(raw_type) + " in " + where_);
    HEARTH_ASSIGN(Value value, read_value(static_cast<ValueType>(raw_type), 0));
    auto [it, inserted] = file.metadata_index_.emplace(key, file.metadata_.size());
    if (!inserted) return corrupt("duplicate key '" + key + "' (" + where_ + ")");
    file.metadata_.push_back(KeyValue{std::move(key), std::move(value)});
  }
  return ok_status();
}

Status Parser::read_alignment(File& file) {
  const Value* v = file.find("general.alignment");
  if (v == nullptr) {
    file.alignment_ = kDefaultAlignment;
    return ok_status();
  }
  if (v->type() != ValueType::kUint32) {
    return corrupt(std::string("general.alignment must be a uint32, found ") + value_type_name(v->type()));
  }
  uint32_t a = std::get<uint32_t>(v->storage());
  if (a == 0 || (a & (a - 1)) != 0) {
    return corrupt("general.alignment " + std::to_string(a) + " is not a nonzero power of two");
  }
  file.alignment_ = a;
  return ok_status();
}

Status Parser::read_tensor_infos(File& file, uint64_t tensor_count) {
  file.tensors_.reserve(static_cast<size_t>(tensor_count));
  file.tensor_index_.reserve(static_cast<size_t>(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    where_ = "tensor info " + std::to_string(i);
    TensorInfo t;
    HEARTH_ASSIGN(t.name, read_string());
    where_ += " ('" + t.name + "')";
    HEARTH_ASSIGN(uint32_t n_dims, read<uint32_t>());
    if (n_dims == 0 || n_dims > kMaxDims) {
      return corrupt("n_dims " + std::to_string(n_dims) + " in " + where_ + " (must be 1.." + std::to_string(kMaxDims) + ")");
    }
    HEARTH_TRY(need(uint64_t{n_dims} * 8));
    t.shape.resize(n_dims);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = take<uint64_t>();
      if (dim == 0) return corrupt("dimension " + std::to_string(d) + " of " + where_ + " is 0");
      if (dim > static_cast<uint64_t>(INT64_MAX)) {
        return corrupt("dimension " + std::to_string(d) + " of " + where_ + " is negative or too large (" +
                       std::to_string(dim) + ")");
      }
      if (elements > static_cast<uint64_t>(INT64_MAX) / dim) {
        return corrupt("element count of " + where_ + " overflows (dimension " + std::to_string(d) + " = " +
                       std::to_string(dim) + ")");
      }
      elements *= dim;
      t.shape[d] = static_cast<int64_t>(dim);
    }
    HEARTH_ASSIGN(uint32_t raw_type, read<uint32_t>());
    auto info = dtype_info(raw_type);
    if (!info) return make_error(ErrorKind::kUnsupported, "unknown tensor type " + std::to_string(raw_type) + " in " + where_);
    t.type = info->type;
    if (static_cast<uint64_t>(t.shape[0]) % info->block_elems != 0) {
      return corrupt("row length " + std::to_string(t.shape[0]) + " of " + where_ + " is not a multiple of the " +
                     std::string(info->name) + " block size " + std::to_string(info->block_elems));
    }
    auto row_bytes = dtype_row_bytes(t.type, static_cast<uint64_t>(t.shape[0]));
    if (!row_bytes.ok()) return corrupt("byte size of " + where_ + " overflows");
    uint64_t rows = elements / static_cast<uint64_t>(t.shape[0]);
    if (*row_bytes != 0 && rows > UINT64_MAX / *row_bytes) return corrupt("byte size of " + where_ + " overflows");
    t.size_bytes = *row_bytes * rows;
    HEARTH_ASSIGN(t.offset, read<uint64_t>());
    auto [it, inserted] = file.tensor_index_.emplace(t.name, file.tensors_.size());
    if (!inserted) return corrupt("duplicate tensor name '" + t.name + "' (" + where_ + ")");
    file.tensors_.push_back(std::move(t));
  }
  return ok_status();
}

Status Parser::check_tensor_data(File& file) {
  uint64_t a = file.alignment_;
  uint64_t end_of_infos = pos_;
  uint64_t data_offset = (end_of_infos + a - 1) / a * a;
  file.data_offset_ = data_offset;
  if (file.tensors_.empty()) return ok_status();
  if (data_offset > size_) {
    return corrupt("tensor data section would start at offset " + std::to_string(data_offset) +
                   ", outside the file (" + std::to_string(size_) + " bytes)");
  }
  uint64_t data_bytes = size_ - data_offset;
  for (auto& t : file.tensors_) {
    if (t.offset % a != 0) {
      return corrupt("offset " + std::to_string(t.offset) + " of tensor '" + t.name + "' is not aligned to " +
                     std::to_string(a));
    }
    if (t.offset > data_bytes || t.size_bytes > data_bytes - t.offset) {
      return corrupt("data of tensor '" + t.name + "' (offset " + std::to_string(t.offset) + ", " +
                     std::to_string(t.size_bytes) + " bytes) lies outside the file (data section holds " +
                     std::to_string(data_bytes) + " bytes)");
    }
    t.data = data_ + data_offset + t.offset;
  }
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(file.tensors_.size());
  for (const auto& t : file.tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* x, const TensorInfo* y) { return x->offset < y->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo* prev = by_offset[i - 1];
    const TensorInfo* cur = by_offset[i];
    if (prev->offset + prev->size_bytes > cur->offset) {
      return corrupt("tensors '" + prev->name + "' and '" + cur->name + "' overlap (offsets " +
                     std::to_string(prev->offset) + " and " + std::to_string(cur->offset) + ")");
    }
  }
  return ok_status();
}

Status Parser::run(File& file) {
  file.size_ = size_;
  uint64_t kv_count = 0;
  uint64_t tensor_count = 0;
  HEARTH_TRY(read_header(file, kv_count, tensor_count));
  HEARTH_TRY(read_metadata(file, kv_count));
  HEARTH_TRY(read_alignment(file));
  HEARTH_TRY(read_tensor_infos(file, tensor_count));
  return check_tensor_data(file);
}

Result<File> File::parse(const uint8_t* data, size_t size) {
  File file;
  if (data == nullptr) size = 0;
  Parser parser(data, size);
  HEARTH_TRY(parser.run(file));
  return file;
}

Result<File> File::open(const std::string& path) {
  auto map = MappedFile::open(path);
  if (!map.ok()) return map.error();
  File file;
  Parser parser(map->data(), map->size());
  Status st = parser.run(file);
  if (!st.ok()) return st.error().with_context(path);
  file.map_ = std::move(map).value();
  file.path_ = path;
  return file;
}

}  // namespace hearth::gguf
