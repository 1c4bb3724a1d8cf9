// The dynamic value type of the Jinja interpreter: Python-like objects (undefined, none, bool,
// int, float, str, list, dict, callable). Lists and dicts are shared by reference, as in Python,
// so `messages.append(x)` and `ns.attr = y` are visible through every name bound to them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace hearth::jinja {

class Value;
struct CallArgs;
// How deep lists and dicts may nest where the interpreter walks them (printing, comparing, JSON).
// Python stops at its recursion limit; Hearth stops here with a template error, long before a
// thread's stack would run out, and a container that holds itself is caught the same way.
constexpr int kMaxValueNesting = 256;
using ValueList = std::vector<Value>;
// Insertion-ordered string-keyed mapping (Python dicts keep insertion order; tojson relies on it).
struct ValueDict {
  std::vector<std::pair<std::string, Value>> entries;
  bool is_namespace = false;  // namespace() objects accept attribute assignment

  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
  void set(const std::string& key, Value v);
  bool erase(const std::string& key);
};
// A callable: a built-in, a bound method, or a macro (which captures its evaluator).
using NativeFunction = std::function<Value(CallArgs& args)>;

enum class ValueKind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

class Value {
 public:
  Value() = default;  // undefined
  static Value undefined(std::string name = {}) { Value v; v.str_ = std::move(name); return v; }
  static Value none() { Value v; v.kind_ = ValueKind::kNone; return v; }
  Value(bool b) : kind_(ValueKind::kBool), int_(b ? 1 : 0) {}  // NOLINT
  Value(int i) : kind_(ValueKind::kInt), int_(i) {}  // NOLINT
  Value(int64_t i) : kind_(ValueKind::kInt), int_(i) {}  // NOLINT
  Value(double f) : kind_(ValueKind::kFloat), float_(f) {}  // NOLINT
  Value(std::string s) : kind_(ValueKind::kString), str_(std::move(s)) {}  // NOLINT
  Value(const char* s) : kind_(ValueKind::kString), str_(s) {}  // NOLINT
  static Value list(ValueList items = {});
  static Value dict(ValueDict d = {});
  static Value function(std::string name, NativeFunction fn);

  ValueKind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
  bool is_none() const { return kind_ == ValueKind::kNone; }
  bool is_bool() const { return kind_ == ValueKind::kBool; }
  bool is_int() const { return kind_ == ValueKind::kInt; }
  bool is_float() const { return kind_ == ValueKind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }  // bools excluded, as Jinja's test
  bool is_string() const { return kind_ == ValueKind::kString; }
  bool is_list() const { return kind_ == ValueKind::kList; }
  bool is_dict() const { return kind_ == ValueKind::kDict; }
  bool is_callable() const { return kind_ == ValueKind::kCallable; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }
  double as_float() const { return is_float() ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return str_; }
  // For undefined values: the name that was looked up (for error messages).
  const std::string& undefined_name() const { return str_; }
  ValueList& items() const { return *list_; }
  ValueDict& entries() const { return *dict_; }
  const NativeFunction& function() const { return *fn_; }
  const std::string& function_name() const { return str_; }

  // Python truthiness: empty string/list/dict, 0, none and undefined are false.
  bool truthy() const;
  // Python str(): what {{ x }} prints (undefined prints nothing, none prints "None").
  std::string to_display() const;
  // Python repr(), used when a list or dict is printed: ['a', 1, None]; a container inside
  // itself prints as [...] or {...}, as in Python.
  std::string to_repr() const;
  // Python == semantics (1 == 1.0, deep list/dict comparison). Throws JinjaError past
  // kMaxValueNesting levels (a container that holds itself).
  bool equals(const Value& other) const;
  // Type name in Jinja/Python words, for error messages.
  const char* type_name() const;

  // From JSON; objects keep their key order. Throws JinjaError past kMaxValueNesting levels.
  static Value from_json(const nlohmann::ordered_json& j);

 private:
  bool equals_nested(const Value& other, int depth) const;
  void repr_into(std::string& out, std::vector<const void*>& open) const;
  static Value from_json_nested(const nlohmann::ordered_json& j, int depth);

  ValueKind kind_ = ValueKind::kUndefined;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<NativeFunction> fn_;
};

// Arguments of a call: positional values then keyword values, in source order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  int line = 0;

  // The argument named `name`, or at position `index` when not given by name; undefined if absent.
  Value get(size_t index, const std::string& name) const;
  bool has(size_t index, const std::string& name) const;
};

// Thrown inside the interpreter only; render_template/parse_template turn it into an Error.
struct JinjaError {
  int line = 0;
  std::string message;
};
[[noreturn]] void throw_error(int line, std::string message);

// Python-compatible formatting of a float (repr: shortest round-trip, "1.0", "1e+20").
std::string format_python_float(double value);
// json.dumps(value, ensure_ascii=False, indent=indent, separators=...) like HF's tojson.
std::string python_json_dumps(const Value& value, int indent, int line);

}  // namespace hearth::jinja
