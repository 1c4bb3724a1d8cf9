// Value behaviour that must match Python exactly for byte-identical prompts: truthiness, str()
// and repr() printing, float formatting, equality, and json.dumps as HF's tojson calls it.
#include "template/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "template/jinja_heap.h"

namespace hearth::jinja {

const Value* ValueDict::find(const std::string& key) const {
  for (const auto& e : entries) if (e.first == key) return &e.second;
  return nullptr;
}
Value* ValueDict::find(const std::string& key) {
  for (auto& e : entries) if (e.first == key) return &e.second;
  return nullptr;
}
void ValueDict::set(const std::string& key, Value v) {
  if (Value* existing = find(key)) { *existing = std::move(v); return; }
  entries.emplace_back(key, std::move(v));
}
bool ValueDict::erase(const std::string& key) {
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (it->first == key) { entries.erase(it); return true; }
  }
  return false;
}

void throw_error(int line, std::string message) { throw JinjaError{line, std::move(message)}; }

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = ValueKind::kList;
  v.list_ = adopt_list(std::move(items));
  return v;
}
Value Value::dict(ValueDict d) {
  Value v;
  v.kind_ = ValueKind::kDict;
  v.dict_ = adopt_dict(std::move(d));
  return v;
}
Value Value::function(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = ValueKind::kCallable;
  v.str_ = std::move(name);
  v.fn_ = std::make_shared<NativeFunction>(std::move(fn));
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
    case ValueKind::kUndefined: case ValueKind::kNone: return false;
    case ValueKind::kBool: case ValueKind::kInt: return int_ != 0;
    case ValueKind::kFloat: return float_ != 0.0;
    case ValueKind::kString: return !str_.empty();
    case ValueKind::kList: return !list_->empty();
    case ValueKind::kDict: return !dict_->entries.empty();
    case ValueKind::kCallable: return true;
  }
  return false;
}

std::string format_python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.2345e+02"
  size_t e_pos = sci.find('e');
  int exponent = std::atoi(sci.c_str() + e_pos + 1);
  std::string mantissa = sci.substr(0, e_pos);
  bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) if (c != '.') digits += c;
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      if (digits.size() <= static_cast<size_t>(exponent) + 1) {
        out = digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
      }
    } else {
      out.assign("0.");
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out += digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp_buf;
  }
  if (negative) out.insert(out.begin(), '-');
  return out;
}

static std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(quote)) { out += '\\'; out += quote; }
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string Value::to_repr() const {
  std::string out;
  std::vector<const void*> open;
  repr_into(out, open);
  return out;
}

// `open` holds the containers being printed, outermost first: one met again is printed as
// Python prints a container inside itself.
void Value::repr_into(std::string& out, std::vector<const void*>& open) const {
  if (kind_ != ValueKind::kList && kind_ != ValueKind::kDict) {
    out += kind_ == ValueKind::kString ? repr_string(str_) : to_display();
    return;
  }
  const void* self = kind_ == ValueKind::kList ? static_cast<const void*>(list_.get()) : dict_.get();
  if (std::find(open.begin(), open.end(), self) != open.end()) {
    out += kind_ == ValueKind::kList ? "[...]" : "{...}";
    return;
  }
  if (open.size() >= static_cast<size_t>(kMaxValueNesting)) throw_error(0, "value nested too deeply to print");
  open.push_back(self);
  if (kind_ == ValueKind::kList) {
    out += '[';
    for (size_t i = 0; i < list_->size(); ++i) {
      if (i) out += ", ";
      (*list_)[i].repr_into(out, open);
    }
    out += ']';
  } else {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : dict_->entries) {
      if (!first) out += ", ";
      first = false;
      out += repr_string(k) + ": ";
      v.repr_into(out, open);
    }
    out += '}';
  }
  open.pop_back();
}

std::string Value::to_display() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "";
    case ValueKind::kNone: return "None";
    case ValueKind::kBool: return int_ ? "True" : "False";
    case ValueKind::kInt: return std::to_string(int_);
    case ValueKind::kFloat: return format_python_float(float_);
    case ValueKind::kString: return str_;
    case ValueKind::kList: case ValueKind::kDict: return to_repr();
    case ValueKind::kCallable: return "<function " + str_ + ">";
  }
  return "";
}

bool Value::equals(const Value& other) const { return equals_nested(other, 0); }

bool Value::equals_nested(const Value& other, int depth) const {
  if ((is_number() || is_bool()) && (other.is_number() || other.is_bool())) {
    if (is_float() || other.is_float()) return as_float() == other.as_float();
    return int_ == other.int_;
  }
  if (kind_ != other.kind_) return false;
  // The same container equals itself without a walk, as Python's identity shortcut has it
  // (so `l == l` holds even when l contains itself).
  if ((is_list() && list_ == other.list_) || (is_dict() && dict_ == other.dict_)) return true;
  if ((is_list() || is_dict()) && depth >= kMaxValueNesting) throw_error(0, "values nested too deeply to compare");
  switch (kind_) {
    case ValueKind::kUndefined: case ValueKind::kNone: return true;
    case ValueKind::kString: return str_ == other.str_;
    case ValueKind::kList: {
      if (list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].equals_nested((*other.list_)[i], depth + 1)) return false;
      }
      return true;
    }
    case ValueKind::kDict: {
      if (dict_->entries.size() != other.dict_->entries.size()) return false;
      for (const auto& [k, v] : dict_->entries) {
        const Value* o = other.dict_->find(k);
        if (!o || !v.equals_nested(*o, depth + 1)) return false;
      }
      return true;
    }
    case ValueKind::kCallable: return fn_ == other.fn_;
    default: return false;
  }
}

const char* Value::type_name() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "undefined";
    case ValueKind::kNone: return "NoneType";
    case ValueKind::kBool: return "bool";
    case ValueKind::kInt: return "int";
    case ValueKind::kFloat: return "float";
    case ValueKind::kString: return "str";
    case ValueKind::kList: return "list";
    case ValueKind::kDict: return "dict";
    case ValueKind::kCallable: return "function";
  }
  return "?";
}

Value Value::from_json(const nlohmann::ordered_json& j) { return from_json_nested(j, 0); }

Value Value::from_json_nested(const nlohmann::ordered_json& j, int depth) {
  if (j.is_structured() && depth >= kMaxValueNesting) throw_error(0, "context value nested too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (const auto& e : j) items.push_back(from_json_nested(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(it.key(), from_json_nested(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default: return Value::none();
  }
}

static void json_escape_into(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

static void json_dump_into(std::string& out, const Value& v, int indent, int depth, int line) {
  if (depth > kMaxValueNesting) throw_error(line, "tojson: value nested too deeply (or contains itself)");
  auto newline = [&](int d) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * d, ' ');
  };
  switch (v.kind()) {
    case ValueKind::kUndefined: case ValueKind::kNone: out += "null"; return;
    case ValueKind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case ValueKind::kInt: out += std::to_string(v.as_int()); return;
    case ValueKind::kFloat: {
      double f = v.as_float();
      if (std::isnan(f)) out += "NaN";
      else if (std::isinf(f)) out += f > 0 ? "Infinity" : "-Infinity";
      else out += format_python_float(f);
      return;
    }
    case ValueKind::kString: json_escape_into(out, v.as_string()); return;
    case ValueKind::kList: {
      const auto& items = v.items();
      if (items.empty()) { out += "[]"; return; }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(depth + 1);
        json_dump_into(out, items[i], indent, depth + 1, line);
      }
      if (indent >= 0) newline(depth);
      out += ']';
      return;
    }
    case ValueKind::kDict: {
      const auto& entries = v.entries().entries;
      if (entries.empty()) { out += "{}"; return; }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(depth + 1);
        json_escape_into(out, entries[i].first);
        out += ": ";
        json_dump_into(out, entries[i].second, indent, depth + 1, line);
      }
      if (indent >= 0) newline(depth);
      out += '}';
      return;
    }
    case ValueKind::kCallable: throw_error(line, "tojson: a function is not JSON serializable");
  }
}

std::string python_json_dumps(const Value& value, int indent, int line) {
  std::string out;
  json_dump_into(out, value, indent, 0, line);
  return out;
}

Value CallArgs::get(size_t index, const std::string& name) const {
  for (const auto& [k, v] : keyword) if (k == name) return v;
  if (index < positional.size()) return positional[index];
  return Value();
}
bool CallArgs::has(size_t index, const std::string& name) const {
  for (const auto& kv : keyword) if (kv.first == name) return true;
  return index < positional.size();
}

}  // namespace hearth::jinja
