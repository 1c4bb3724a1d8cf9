// Operators and lookups with Python semantics (see jinja_ops.h). Kept apart from the evaluator
// so filters can reuse the same comparison, membership and attribute rules.
#include "template/jinja_ops.h"

#include <cmath>

namespace hearth::jinja {
namespace {

void check_size(size_t bytes, int line) {
  if (bytes > kMaxValueBytes) throw_error(line, "value too large (limit " + std::to_string(kMaxValueBytes) + " bytes)");
}

[[noreturn]] void type_error(const std::string& op, const Value& a, const Value& b, int line) {
  throw_error(line, "unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

void require_defined(const Value& v, int line) {
  if (v.is_undefined()) {
    throw_error(line, v.undefined_name().empty() ? "value is undefined" : "'" + v.undefined_name() + "' is undefined");
  }
}

bool numeric(const Value& v) { return v.is_number() || v.is_bool(); }

Value repeat(const Value& seq, int64_t n, int line) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    check_size(seq.as_string().size() * static_cast<size_t>(n), line);
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(out);
  }
  if (seq.items().size() * static_cast<size_t>(n) > static_cast<size_t>(kMaxSequenceItems)) throw_error(line, "list too large");
  ValueList out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return Value::list(std::move(out));
}

int64_t normalize_index(int64_t i, int64_t size) { return i < 0 ? i + size : i; }

}  // namespace

ValueList utf8_chars(const std::string& s) {
  ValueList out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + len > s.size()) len = s.size() - i;
    out.emplace_back(s.substr(i, len));
    i += len;
  }
  return out;
}

Value binary_op(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "~") {
    std::string s = a.to_display() + b.to_display();
    check_size(s.size(), line);
    return Value(s);
  }
  if (op == "==") return Value(a.equals(b));
  if (op == "!=") return Value(!a.equals(b));
  if (op == "<") return Value(value_less(a, b, line));
  if (op == ">") return Value(value_less(b, a, line));
  if (op == "<=") return Value(!value_less(b, a, line));
  if (op == ">=") return Value(!value_less(a, b, line));
  if (op == "in") return Value(value_contains(b, a, line));
  if (op == "not in") return Value(!value_contains(b, a, line));
  if (op == "+" && (a.is_string() || b.is_string())) {
    // The reference engine (llama.cpp's minja) joins a string with any scalar, printing
    // undefined and none as "None", where Python would raise; templates probed without the
    // variables their server fills in (FireFunction's `functions`) rely on it.
    auto text = [](const Value& v) { return v.is_undefined() ? std::string("None") : v.to_display(); };
    if ((a.is_string() || !(a.is_list() || a.is_dict() || a.is_callable())) &&
        (b.is_string() || !(b.is_list() || b.is_dict() || b.is_callable()))) {
      std::string s = text(a) + text(b);
      check_size(s.size(), line);
      return Value(s);
    }
  }
  require_defined(a, line);
  require_defined(b, line);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size(), line);
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list()) {
      if (a.items().size() + b.items().size() > static_cast<size_t>(kMaxSequenceItems)) throw_error(line, "list too large");
      ValueList out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), line);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), line);
  }
  if (op == "%" && a.is_string()) {
    throw_error(line, "printf-style string formatting is not supported");
  }
  if (!numeric(a) || !numeric(b)) type_error(op, a, b, line);
  bool both_int = !a.is_float() && !b.is_float();
  if (op == "/") {
    if (b.as_float() == 0) throw_error(line, "division by zero");
    return Value(a.as_float() / b.as_float());
  }
  if (both_int) {
    int64_t x = a.as_int(), y = b.as_int();
    if (op == "+") return Value(static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)));
    if (op == "-") return Value(static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)));
    if (op == "*") return Value(static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)));
    if (op == "//" || op == "%") {
      if (y == 0) throw_error(line, "integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) return Value(op == "%" ? int64_t{0} : x);
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) { q -= 1; r += y; }
      return Value(op == "//" ? q : r);
    }
    if (op == "**") {
      if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
      uint64_t result = 1, base = static_cast<uint64_t>(x);
      for (int64_t e = y; e > 0 && e < 4096; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return Value(static_cast<int64_t>(result));
    }
  }
  double x = a.as_float(), y = b.as_float();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "**") return Value(std::pow(x, y));
  if (op == "//" || op == "%") {
    if (y == 0) throw_error(line, "float division or modulo by zero");
    double q = std::floor(x / y);
    return Value(op == "//" ? q : x - q * y);
  }
  type_error(op, a, b, line);
}

bool value_less(const Value& a, const Value& b, int line) {
  if (numeric(a) && numeric(b)) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const auto& x = a.items();
    const auto& y = b.items();
    // As Python: the first unequal pair decides (one comparison per level, not two, so nested
    // lists cost linear time rather than 2^depth).
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!x[i].equals(y[i])) return value_less(x[i], y[i], line);
    }
    return x.size() < y.size();
  }
  throw_error(line, std::string("'<' not supported between instances of '") + a.type_name() + "' and '" + b.type_name() + "'");
}

bool value_contains(const Value& container, const Value& item, int line) {
  if (container.is_string()) {
    if (!item.is_string()) throw_error(line, "'in <string>' requires string as left operand");
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const auto& v : container.items()) if (v.equals(item)) return true;
    return false;
  }
  if (container.is_dict()) {
    if (!item.is_string()) return false;
    return container.entries().find(item.as_string()) != nullptr;
  }
  // Jinja's undefined iterates as empty: nothing is in it (Granite 3.3: 'citations' in controls).
  if (container.is_undefined()) return false;
  throw_error(line, std::string("argument of type '") + container.type_name() + "' is not iterable");
}

Value get_attr(const Value& obj, const std::string& name, int line) {
  if (obj.is_dict()) {
    if (obj.entries().is_namespace) {
      if (const Value* v = obj.entries().find(name)) return *v;
      return Value::undefined(name);
    }
    Value method = get_method(obj, name, line);
    if (!method.is_undefined()) return method;
    if (const Value* v = obj.entries().find(name)) return *v;
    return Value::undefined(name);
  }
  if (obj.is_undefined()) return Value::undefined(obj.undefined_name() + "." + name);
  Value method = get_method(obj, name, line);
  if (!method.is_undefined()) return method;
  return Value::undefined(name);
}

Value get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.entries().find(key.as_string())) return *v;
      if (!obj.entries().is_namespace) {
        Value method = get_method(obj, key.as_string(), line);
        if (!method.is_undefined()) return method;
      }
      return Value::undefined(key.as_string());
    }
    if (key.is_int() || key.is_bool()) {
      if (const Value* v = obj.entries().find(key.to_display())) return *v;
    }
    return Value::undefined();
  }
  if (obj.is_list() || obj.is_string()) {
    if (key.is_string()) return get_attr(obj, key.as_string(), line);
    if (!key.is_int() && !key.is_bool()) {
      throw_error(line, std::string("indices must be integers, not ") + key.type_name());
    }
    if (obj.is_list()) {
      int64_t size = static_cast<int64_t>(obj.items().size());
      int64_t i = normalize_index(key.as_int(), size);
      if (i < 0 || i >= size) return Value::undefined();
      return obj.items()[static_cast<size_t>(i)];
    }
    ValueList chars = utf8_chars(obj.as_string());
    int64_t size = static_cast<int64_t>(chars.size());
    int64_t i = normalize_index(key.as_int(), size);
    if (i < 0 || i >= size) return Value::undefined();
    return chars[static_cast<size_t>(i)];
  }
  if (obj.is_undefined()) return Value::undefined(obj.undefined_name());
  if (obj.is_none()) throw_error(line, "'NoneType' object is not subscriptable");
  return Value::undefined();
}

Value slice_value(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v, int line) {
  ValueList items;
  if (obj.is_list()) items = obj.items();
  else if (obj.is_string()) items = utf8_chars(obj.as_string());
  else if (obj.is_undefined()) return Value::undefined();
  else throw_error(line, std::string("'") + obj.type_name() + "' object is not subscriptable");
  auto as_index = [&](const Value& v) -> int64_t {
    if (!v.is_int() && !v.is_bool()) throw_error(line, "slice indices must be integers or None");
    return v.as_int();
  };
  int64_t size = static_cast<int64_t>(items.size());
  int64_t step = (step_v.is_undefined() || step_v.is_none()) ? 1 : as_index(step_v);
  if (step == 0) throw_error(line, "slice step cannot be zero");
  int64_t start, stop;
  auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; };
  if (step > 0) {
    start = (start_v.is_undefined() || start_v.is_none()) ? 0 : clamp(normalize_index(as_index(start_v), size), 0, size);
    stop = (stop_v.is_undefined() || stop_v.is_none()) ? size : clamp(normalize_index(as_index(stop_v), size), 0, size);
  } else {
    start = (start_v.is_undefined() || start_v.is_none()) ? size - 1 : clamp(normalize_index(as_index(start_v), size), -1, size - 1);
    stop = (stop_v.is_undefined() || stop_v.is_none()) ? -1 : clamp(normalize_index(as_index(stop_v), size), -1, size - 1);
  }
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(items[static_cast<size_t>(i)]);
  if (obj.is_string()) {
    std::string s;
    for (const auto& c : out) s += c.as_string();
    return Value(s);
  }
  return Value::list(std::move(out));
}

ValueList iterate(const Value& v, int line) {
  if (v.is_list()) return v.items();
  if (v.is_dict()) {
    ValueList keys;
    for (const auto& e : v.entries().entries) keys.emplace_back(e.first);
    return keys;
  }
  if (v.is_string()) return utf8_chars(v.as_string());
  if (v.is_undefined()) return {};
  throw_error(line, std::string("'") + v.type_name() + "' object is not iterable");
}

int64_t value_length(const Value& v, int line) {
  if (v.is_list()) return static_cast<int64_t>(v.items().size());
  if (v.is_dict()) return static_cast<int64_t>(v.entries().entries.size());
  if (v.is_string()) return static_cast<int64_t>(utf8_chars(v.as_string()).size());
  if (v.is_undefined()) return 0;
  throw_error(line, std::string("object of type '") + v.type_name() + "' has no len()");
}

}  // namespace hearth::jinja
