// GGUF metadata values: type names, array sizes and the human-readable rendering used by
// `hearth inspect` (see gguf_value.h).
#include "gguf/gguf_value.h"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <type_traits>

namespace hearth::gguf {
namespace {

constexpr const char* kTypeNames[] = {"uint8",  "int8", "uint16", "int16",  "uint32", "int32",  "float32",
                                      "bool",   "string", "array", "uint64", "int64", "float64"};

// Quotes a string, escaping control characters, quotes and backslashes.
std::string quote(const std::string& s, size_t max_chars) {
  std::string out = "\"";
  size_t n = 0;
  for (char ch : s) {
    if (n++ >= max_chars) {
      out += "...";
      break;
    }
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

std::string format_float(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", d);
  return buf;
}

template <typename T>
std::string scalar_to_string(const T& x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x ? "true" : "false";
  } else if constexpr (std::is_floating_point_v<T>) {
    return format_float(static_cast<double>(x));
  } else if constexpr (std::is_signed_v<T>) {
    return std::to_string(static_cast<long long>(x));
  } else {
    return std::to_string(static_cast<unsigned long long>(x));
  }
}

constexpr size_t kMaxDisplayChars = 200;

}  // namespace

const char* value_type_name(ValueType t) {
  auto i = static_cast<uint32_t>(t);
  return i < std::size(kTypeNames) ? kTypeNames[i] : "unknown";
}

bool value_type_valid(uint32_t raw) { return raw <= static_cast<uint32_t>(ValueType::kFloat64); }

size_t Array::size() const {
  return std::visit([](const auto& v) { return v.size(); }, items);
}

std::string Value::to_display_string(size_t max_items) const {
  return std::visit(
      [max_items](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return quote(x, kMaxDisplayChars);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<Array>>) {
          if (!x) return "[]";
          const Array& arr = *x;
          return std::visit(
              [&](const auto& items) -> std::string {
                using V = typename std::decay_t<decltype(items)>::value_type;
                std::string out = "[";
                size_t shown = 0;
                for (size_t i = 0; i < items.size() && shown < max_items; ++i, ++shown) {
                  if (i) out += ", ";
                  if constexpr (std::is_same_v<V, std::string>) {
                    out += quote(items[i], kMaxDisplayChars);
                  } else if constexpr (std::is_same_v<V, Value>) {
                    out += items[i].to_display_string(max_items);
                  } else if constexpr (std::is_same_v<V, bool>) {
                    out += items[i] ? "true" : "false";
                  } else {
                    out += scalar_to_string(static_cast<V>(items[i]));
                  }
                }
                if (items.size() > shown) {
                  out += ", ... (" + std::to_string(items.size()) + " items)";
                }
                out += "]";
                return out;
              },
              arr.items);
        } else {
          return scalar_to_string(x);
        }
      },
      v_);
}

bool operator==(const Array& a, const Array& b) { return a.elem_type == b.elem_type && a.items == b.items; }

bool operator==(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  const Array* x = a.array();
  const Array* y = b.array();
  if (x != nullptr || y != nullptr) {
    if (x == nullptr || y == nullptr) return false;
    return *x == *y;
  }
  return a.storage() == b.storage();
}

}  // namespace hearth::gguf
