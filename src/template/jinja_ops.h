// Python-semantics operations on Values shared by the evaluator and the filters: arithmetic,
// comparison, membership, attribute/item lookup, slicing and iteration. Each throws JinjaError
// with the given line where Python/Jinja would raise.
#pragma once

#include <string>

#include "template/jinja_value.h"

namespace hearth::jinja {

// Largest string or list an operation may build; hostile templates cannot exhaust memory.
constexpr size_t kMaxValueBytes = 32u << 20;
constexpr int64_t kMaxSequenceItems = 1 << 20;

Value binary_op(const std::string& op, const Value& a, const Value& b, int line);
bool value_less(const Value& a, const Value& b, int line);
bool value_contains(const Value& container, const Value& item, int line);
// obj.name: dict key (dict methods win for their names), string/list methods, undefined else.
Value get_attr(const Value& obj, const std::string& name, int line);
// obj[key]: list/str index (negative allowed), dict key; undefined when missing.
Value get_item(const Value& obj, const Value& key, int line);
Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step, int line);
// What a for loop walks: list items, dict keys, string characters; undefined walks nothing.
ValueList iterate(const Value& v, int line);
// Length as the length filter sees it; throws for values without one.
int64_t value_length(const Value& v, int line);
// Splits UTF-8 text into code points (each as its own string).
ValueList utf8_chars(const std::string& s);
// Bound method for obj.name (str/list/dict methods), or undefined when there is none.
Value get_method(const Value& obj, const std::string& name, int line);

}  // namespace hearth::jinja
