// File accessors: key and tensor lookup, and the typed get<T>/get_array<T> with the
// conversion rules documented in gguf_file.h (integers convert when they fit, floats accept
// float32/float64, strings and bools only from their own type).
#include "gguf/gguf_file.h"

#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "util/anonymous_memory.h"

namespace hearth::gguf {
namespace {

template <typename T>
constexpr const char* wanted_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_same_v<T, std::string>) return "string";
  else if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<T, int8_t>) return "int8";
  else if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<T, int16_t>) return "int16";
  else if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
  else return "int64";
}

template <typename T>
constexpr bool is_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Outcome of converting one stored element to T.
enum class Conv { kOk, kTypeMismatch, kOutOfRange };

template <typename T, typename S>
Conv convert(const S& src, T& out) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
    if constexpr (std::is_same_v<S, T>) {
      out = src;
      return Conv::kOk;
    } else {
      return Conv::kTypeMismatch;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (std::is_floating_point_v<S>) {
      out = static_cast<T>(src);
      return Conv::kOk;
    } else {
      return Conv::kTypeMismatch;
    }
  } else {
    static_assert(is_integer_v<T>);
    if constexpr (is_integer_v<S>) {
      if (!std::in_range<T>(src)) return Conv::kOutOfRange;
      out = static_cast<T>(src);
      return Conv::kOk;
    } else {
      return Conv::kTypeMismatch;
    }
  }
}

Error not_found(std::string_view key) {
  return make_error(ErrorKind::kNotFound, "metadata key '" + std::string(key) + "' not found");
}

}  // namespace

int64_t TensorInfo::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorInfo::rows() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

const Value* File::find(std::string_view key) const {
  auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

Status File::read_bytes(const uint8_t* at, size_t n, void* dst) const {
  const uint8_t* base = map_.data();
  if (base != nullptr && at >= base && static_cast<size_t>(at - base) <= map_.size()) {
    return map_.read(static_cast<size_t>(at - base), n, dst);
  }
  std::memcpy(dst, at, n);
  return ok_status();
}

void File::release_bytes(const uint8_t* at, size_t n) const {
  const uint8_t* base = map_.data();
  if (base != nullptr && at >= base && static_cast<size_t>(at - base) <= map_.size() &&
      n <= map_.size() - static_cast<size_t>(at - base)) {
    release_mapped_pages(at, n);
  }
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

template <typename T>
Result<T> File::get(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return not_found(key);
  T out{};
  Conv c = std::visit(
      [&out](const auto& x) -> Conv {
        using S = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<S, std::shared_ptr<Array>>) {
          return Conv::kTypeMismatch;
        } else {
          return convert<T>(x, out);
        }
      },
      v->storage());
  if (c == Conv::kTypeMismatch) {
    return make_error(ErrorKind::kTypeMismatch, "metadata key '" + std::string(key) + "' is " +
                                                    value_type_name(v->type()) + ", not " + wanted_name<T>());
  }
  if (c == Conv::kOutOfRange) {
    return make_error(ErrorKind::kOutOfRange, "metadata key '" + std::string(key) + "' value " +
                                                  v->to_display_string() + " does not fit " + wanted_name<T>());
  }
  return out;
}

template <typename T>
Result<std::vector<T>> File::get_array(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return not_found(key);
  const Array* arr = v->array();
  if (arr == nullptr) {
    return make_error(ErrorKind::kTypeMismatch, "metadata key '" + std::string(key) + "' is " +
                                                    value_type_name(v->type()) + ", not an array");
  }
  std::vector<T> out;
  size_t bad_index = 0;
  Conv c = std::visit(
      [&](const auto& items) -> Conv {
        using S = typename std::decay_t<decltype(items)>::value_type;
        if constexpr (std::is_same_v<S, Value>) {
          return Conv::kTypeMismatch;
        } else if constexpr (std::is_same_v<S, T> && !std::is_same_v<T, bool>) {
          out = items;
          return Conv::kOk;
        } else {
          out.resize(items.size());
          for (size_t i = 0; i < items.size(); ++i) {
            T x{};
            Conv ci = convert<T>(static_cast<S>(items[i]), x);
            if (ci != Conv::kOk) {
              bad_index = i;
              return ci;
            }
            out[i] = std::move(x);
          }
          return Conv::kOk;
        }
      },
      arr->items);
  if (c == Conv::kTypeMismatch) {
    return make_error(ErrorKind::kTypeMismatch, "metadata key '" + std::string(key) + "' is an array of " +
                                                    value_type_name(arr->elem_type) + ", not of " + wanted_name<T>());
  }
  if (c == Conv::kOutOfRange) {
    return make_error(ErrorKind::kOutOfRange, "metadata key '" + std::string(key) + "' element " +
                                                  std::to_string(bad_index) + " does not fit " + wanted_name<T>());
  }
  return out;
}

#define HEARTH_GGUF_INSTANTIATE(T)                                       \
  template Result<T> File::get<T>(std::string_view key) const;           \
  template Result<std::vector<T>> File::get_array<T>(std::string_view key) const;

HEARTH_GGUF_INSTANTIATE(uint8_t)
HEARTH_GGUF_INSTANTIATE(int8_t)
HEARTH_GGUF_INSTANTIATE(uint16_t)
HEARTH_GGUF_INSTANTIATE(int16_t)
HEARTH_GGUF_INSTANTIATE(uint32_t)
HEARTH_GGUF_INSTANTIATE(int32_t)
HEARTH_GGUF_INSTANTIATE(uint64_t)
HEARTH_GGUF_INSTANTIATE(int64_t)
HEARTH_GGUF_INSTANTIATE(float)
HEARTH_GGUF_INSTANTIATE(double)
HEARTH_GGUF_INSTANTIATE(bool)
HEARTH_GGUF_INSTANTIATE(std::string)

#undef HEARTH_GGUF_INSTANTIATE

}  // namespace hearth::gguf
