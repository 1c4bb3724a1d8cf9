// A GGUF metadata value: one of the 13 GGUF value types, arrays included (arrays of arrays
// too). Arrays of scalars and strings are stored as typed vectors so that a 150k-entry token
// list costs one std::vector<std::string>, not 150k variant objects.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace hearth::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

const char* value_type_name(ValueType t);  // "uint32", "array", ...
bool value_type_valid(uint32_t raw);

class Value;

// An array: its element type plus the elements in the matching vector.
struct Array {
  ValueType elem_type = ValueType::kUint8;
  std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>, std::vector<int16_t>,
               std::vector<uint32_t>, std::vector<int32_t>, std::vector<float>, std::vector<bool>,
               std::vector<std::string>, std::vector<Value>,  // kArray elements are Values holding Arrays
               std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>>
      items;
  size_t size() const;
};

class Value {
 public:
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               std::shared_ptr<Array>, uint64_t, int64_t, double>;
  Value() : v_(uint8_t{0}) {}
  template <typename T>
  explicit Value(T x) : v_(std::move(x)) {}
  explicit Value(Array a) : v_(std::make_shared<Array>(std::move(a))) {}
  explicit Value(const char* s) : v_(std::string(s)) {}

  ValueType type() const { return static_cast<ValueType>(v_.index()); }
  const Storage& storage() const { return v_; }
  const Array* array() const {
    auto p = std::get_if<std::shared_ptr<Array>>(&v_);
    return p ? p->get() : nullptr;
  }
  // Human-readable rendering (strings quoted; long arrays abbreviated) for inspect.
  std::string to_display_string(size_t max_items = 8) const;

 private:
  Storage v_;
};

// Deep equality: same type and same contents (arrays compared element by element, not by
// pointer). Floats compare with ==, so a NaN is unequal to itself.
bool operator==(const Array& a, const Array& b);
bool operator==(const Value& a, const Value& b);

// The variant index of Value::Storage equals the GGUF type id; keep them in step.
static_assert(std::variant_size_v<Value::Storage> == 13);

}  // namespace hearth::gguf
