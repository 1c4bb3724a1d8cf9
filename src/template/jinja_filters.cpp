// Jinja's built-in filters and tests with the argument names and defaults Jinja documents, so
// chat templates written for Python Jinja render the same here.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string_view>

#include "template/jinja_builtins.h"
#include "template/jinja_ops.h"

namespace hearth::jinja {
namespace {

std::string require_str(const Value& v, const std::string& filter, int line) {
  if (!v.is_string()) throw_error(line, filter + ": expected a string, got " + v.type_name());
  return v.as_string();
}

// Follows a dotted attribute path ("a.b" or "0") the way Jinja's attribute= arguments do.
Value lookup_path(const Value& v, const std::string& path, int line) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    cur = numeric && cur.is_list() ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part.substr(0, 18)))), line)
                                   : get_item(cur, Value(part), line);
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

CallArgs rest_args(const CallArgs& args, size_t from) {
  CallArgs out;
  out.line = args.line;
  for (size_t i = from; i < args.positional.size(); ++i) out.positional.push_back(args.positional[i]);
  out.keyword = args.keyword;
  return out;
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(ascii_case(v.as_string(), false));
  return v;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

ValueList split_lines(const std::string& s) {
  ValueList lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) { lines.emplace_back(s.substr(start)); break; }
    size_t end = nl;
    if (end > start && s[end - 1] == '\r') --end;
    lines.emplace_back(s.substr(start, end - start));
    start = nl + 1;
  }
  return lines;
}

double python_round(double x, int64_t digits, const std::string& method) {
  if (digits > 300) digits = 300;
  if (digits < -300) digits = -300;
  double scale = std::pow(10.0, static_cast<double>(digits));
  double y = x * scale;
  if (method == "ceil") y = std::ceil(y);
  else if (method == "floor") y = std::floor(y);
  else y = std::nearbyint(y);
  return y / scale;
}

// One function per filter (aliases share one); kFilters below maps the names to them.
// trim/lower/upper of none give none, as in the reference engine (a template printing
// `message.content|trim` for a content-less tool call prints nothing).
Value filter_trim(const Value& v, CallArgs& args) {
  if (v.is_none()) return v;
  return Value(get_method(Value(require_str(v, "trim", args.line)), "strip", args.line).function()(args));
}

Value filter_tojson(const Value& v, CallArgs& args) {
  Value indent = args.get(0, "indent");
  Value sort_keys = args.get(2, "sort_keys");
  Value target = v;
  if (sort_keys.truthy() && v.is_dict()) {
    ValueDict sorted = v.entries();
    std::stable_sort(sorted.entries.begin(), sorted.entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    target = Value::dict(std::move(sorted));
  }
  int width = indent.is_int() ? static_cast<int>(std::clamp<int64_t>(indent.as_int(), 0, 64)) : -1;
  return Value(python_json_dumps(target, width, args.line));
}

Value filter_length(const Value& v, CallArgs& args) { return Value(value_length(v, args.line)); }
Value filter_lower(const Value& v, CallArgs&) { return v.is_none() ? v : Value(ascii_case(v.to_display(), false)); }
Value filter_upper(const Value& v, CallArgs&) { return v.is_none() ? v : Value(ascii_case(v.to_display(), true)); }
Value filter_title(const Value& v, CallArgs&) { return Value(python_title(v.to_display())); }
Value filter_capitalize(const Value& v, CallArgs&) { return Value(python_capitalize(v.to_display())); }
Value filter_replace(const Value& v, CallArgs& args) {
  return get_method(Value(v.to_display()), "replace", args.line).function()(args);
}
Value filter_string(const Value& v, CallArgs&) { return Value(v.to_display()); }
Value filter_safe(const Value& v, CallArgs&) { return v; }
Value filter_escape(const Value& v, CallArgs&) { return Value(html_escape(v.to_display())); }

Value filter_join(const Value& v, CallArgs& args) {
  Value sep = args.get(0, "d");
  Value attribute = args.get(1, "attribute");
  std::string out;
  bool first = true;
  for (const auto& item : iterate(v, args.line)) {
    if (!first) out += sep.is_undefined() ? "" : sep.to_display();
    first = false;
    out += (attribute.is_undefined() ? item : lookup_path(item, attribute.to_display(), args.line)).to_display();
    if (out.size() > kMaxValueBytes) throw_error(args.line, "join: result too large");
  }
  return Value(out);
}

Value filter_default(const Value& v, CallArgs& args) {
  bool boolean = args.get(1, "boolean").truthy();
  if (v.is_undefined() || v.is_none() || (boolean && !v.truthy())) {  // none too, as the reference engine
    Value d = args.get(0, "default_value");
    return d.is_undefined() ? Value("") : d;
  }
  return v;
}

Value filter_first(const Value& v, CallArgs& args) {
  ValueList items = iterate(v, args.line);
  return items.empty() ? Value::undefined() : items.front();
}

Value filter_last(const Value& v, CallArgs& args) {
  ValueList items = iterate(v, args.line);
  return items.empty() ? Value::undefined() : items.back();
}

Value filter_items(const Value& v, CallArgs& args) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict()) throw_error(args.line, std::string("items: expected a mapping, got ") + v.type_name());
  return get_method(v, "items", args.line).function()(args);
}

Value filter_list(const Value& v, CallArgs& args) { return Value::list(iterate(v, args.line)); }

Value filter_int(const Value& v, CallArgs& args) {
  Value d = args.get(0, "default");
  int64_t fallback = d.is_int() ? d.as_int() : 0;
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    double f = v.as_float();
    if (!std::isfinite(f) || std::fabs(f) > 9.2e18) return Value(fallback);
    return Value(static_cast<int64_t>(f));
  }
  if (v.is_string()) {
    const std::string& s = v.as_string();
    char* end = nullptr;
    errno = 0;
    long long parsed = std::strtoll(s.c_str(), &end, 10);
    if (end != s.c_str() && *end == '\0' && errno == 0) return Value(static_cast<int64_t>(parsed));
    double f = std::strtod(s.c_str(), &end);
    if (end != s.c_str() && *end == '\0' && std::isfinite(f) && std::fabs(f) < 9.2e18) return Value(static_cast<int64_t>(f));
  }
  return Value(fallback);
}

Value filter_float(const Value& v, CallArgs& args) {
  Value d = args.get(0, "default");
  double fallback = d.is_number() ? d.as_float() : 0.0;
  if (v.is_number() || v.is_bool()) return Value(v.as_float());
  if (v.is_string()) {
    char* end = nullptr;
    double f = std::strtod(v.as_string().c_str(), &end);
    if (end != v.as_string().c_str() && *end == '\0') return Value(f);
  }
  return Value(fallback);
}

Value filter_round(const Value& v, CallArgs& args) {
  if (!v.is_number() && !v.is_bool()) throw_error(args.line, "round: expected a number");
  Value precision = args.get(0, "precision");
  Value method = args.get(1, "method");
  return Value(python_round(v.as_float(), precision.is_int() ? precision.as_int() : 0,
                            method.is_string() ? method.as_string() : "common"));
}

Value filter_abs(const Value& v, CallArgs& args) {
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v.as_int())) : v.as_int());
  throw_error(args.line, std::string("abs: bad operand type '") + v.type_name() + "'");
}

// select/reject (by_attr false) and selectattr/rejectattr (by_attr true); keep_when is the
// test result that keeps an item.
Value select_items(const Value& v, CallArgs& args, bool by_attr, bool keep_when) {
  size_t test_pos = by_attr ? 1 : 0;
  std::string attr = by_attr ? args.get(0, "attribute").to_display() : "";
  Value test = test_pos < args.positional.size() ? args.positional[test_pos] : Value();
  CallArgs test_args = rest_args(args, test_pos + 1);
  ValueList out;
  if (v.is_none()) return Value::list();  // as the reference engine: nothing to select from
  for (const auto& item : iterate(v, args.line)) {
    Value subject = by_attr ? lookup_path(item, attr, args.line) : item;
    bool pass = test.is_undefined() ? subject.truthy() : apply_test(test.to_display(), subject, test_args);
    if (pass == keep_when) out.push_back(item);
  }
  return Value::list(std::move(out));
}
Value filter_select(const Value& v, CallArgs& args) { return select_items(v, args, false, true); }
Value filter_reject(const Value& v, CallArgs& args) { return select_items(v, args, false, false); }
Value filter_selectattr(const Value& v, CallArgs& args) { return select_items(v, args, true, true); }
Value filter_rejectattr(const Value& v, CallArgs& args) { return select_items(v, args, true, false); }

Value filter_map(const Value& v, CallArgs& args) {
  Value attribute = args.get(99, "attribute");
  ValueList out;
  if (!attribute.is_undefined()) {
    Value def = args.get(99, "default");
    for (const auto& item : iterate(v, args.line)) {
      Value r = lookup_path(item, attribute.to_display(), args.line);
      out.push_back(r.is_undefined() && !def.is_undefined() ? def : r);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty()) throw_error(args.line, "map: needs a filter name or attribute=");
  std::string filter = args.positional[0].to_display();
  CallArgs filter_args = rest_args(args, 1);
  for (const auto& item : iterate(v, args.line)) out.push_back(apply_filter(filter, item, filter_args));
  return Value::list(std::move(out));
}

Value filter_unique(const Value& v, CallArgs& args) {
  bool case_sensitive = args.get(0, "case_sensitive").truthy();
  Value attribute = args.get(1, "attribute");
  ValueList out, seen;
  for (const auto& item : iterate(v, args.line)) {
    Value key = sort_key(attribute.is_undefined() ? item : lookup_path(item, attribute.to_display(), args.line), case_sensitive);
    bool dup = false;
    for (const auto& s : seen) if (s.equals(key)) { dup = true; break; }
    if (!dup) { seen.push_back(key); out.push_back(item); }
  }
  return Value::list(std::move(out));
}

Value filter_reverse(const Value& v, CallArgs& args) {
  if (v.is_string()) {
    ValueList chars = utf8_chars(v.as_string());
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->as_string();
    return Value(out);
  }
  ValueList items = iterate(v, args.line);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value filter_sort(const Value& v, CallArgs& args) {
  const int line = args.line;
  bool reverse = args.get(0, "reverse").truthy();
  bool case_sensitive = args.get(1, "case_sensitive").truthy();
  Value attribute = args.get(2, "attribute");
  ValueList items = iterate(v, line);
  auto key = [&](const Value& item) {
    return sort_key(attribute.is_undefined() ? item : lookup_path(item, attribute.to_display(), line), case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? value_less(key(b), key(a), line) : value_less(key(a), key(b), line);
  });
  return Value::list(std::move(items));
}

Value filter_dictsort(const Value& v, CallArgs& args) {
  const int line = args.line;
  if (!v.is_dict()) throw_error(line, "dictsort: expected a mapping");
  bool case_sensitive = args.get(0, "case_sensitive").truthy();
  bool by_value = args.get(1, "by").to_display() == "value";
  bool reverse = args.get(2, "reverse").truthy();
  ValueList pairs;
  for (const auto& [k, val] : v.entries().entries) pairs.push_back(Value::list({Value(k), val}));
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
    Value ka = sort_key(a.items()[by_value ? 1 : 0], case_sensitive);
    Value kb = sort_key(b.items()[by_value ? 1 : 0], case_sensitive);
    return reverse ? value_less(kb, ka, line) : value_less(ka, kb, line);
  });
  return Value::list(std::move(pairs));
}

Value filter_indent(const Value& v, CallArgs& args) {
  Value width = args.get(0, "width");
  std::string indention = width.is_string() ? width.as_string() : std::string(width.is_int() ? static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 256)) : 4, ' ');
  bool first = args.get(1, "first").truthy();
  bool blank = args.get(2, "blank").truthy();
  ValueList lines = split_lines(v.to_display() + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i].as_string();
    if (i > 0) {
      out += "\n";
      if (blank || !l.empty()) out += indention;
    }
    out += l;
    if (out.size() > kMaxValueBytes) throw_error(args.line, "indent: result too large");
  }
  if (first) out = indention + out;
  return Value(out);
}

Value filter_wordcount(const Value& v, CallArgs&) {
  int64_t words = 0;
  bool in_word = false;
  for (unsigned char c : v.to_display()) {
    bool w = std::isalnum(c) || c == '_' || c >= 0x80;
    if (w && !in_word) ++words;
    in_word = w;
  }
  return Value(words);
}

Value filter_batch(const Value& v, CallArgs& args) {
  Value size_v = args.get(0, "linecount");
  if (!size_v.is_int() || size_v.as_int() <= 0) throw_error(args.line, "batch: size must be a positive integer");
  size_t size = static_cast<size_t>(size_v.as_int());
  Value fill = args.get(1, "fill_with");
  ValueList out, cur;
  for (const auto& item : iterate(v, args.line)) {
    cur.push_back(item);
    if (cur.size() == size) { out.push_back(Value::list(std::move(cur))); cur.clear(); }
  }
  if (!cur.empty()) {
    if (!fill.is_undefined()) while (cur.size() < size) cur.push_back(fill);
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

Value filter_sum(const Value& v, CallArgs& args) {
  Value attribute = args.get(0, "attribute");
  Value total = args.has(1, "start") ? args.get(1, "start") : Value(int64_t{0});
  for (const auto& item : iterate(v, args.line)) {
    total = binary_op("+", total, attribute.is_undefined() ? item : lookup_path(item, attribute.to_display(), args.line), args.line);
  }
  return total;
}

// The least (want_max false) or greatest item; undefined for an empty sequence.
Value extreme_item(const Value& v, int line, bool want_max) {
  ValueList items = iterate(v, line);
  if (items.empty()) return Value::undefined();
  Value best = items[0];
  for (const auto& item : items) {
    if (want_max ? value_less(best, item, line) : value_less(item, best, line)) best = item;
  }
  return best;
}
Value filter_min(const Value& v, CallArgs& args) { return extreme_item(v, args.line, false); }
Value filter_max(const Value& v, CallArgs& args) { return extreme_item(v, args.line, true); }

using FilterFn = Value (*)(const Value& value, CallArgs& args);

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

// Sorted by name (checked below) for binary search.
constexpr FilterEntry kFilters[] = {
    {"abs", filter_abs},
    {"batch", filter_batch},
    {"capitalize", filter_capitalize},
    {"count", filter_length},
    {"d", filter_default},
    {"default", filter_default},
    {"dictsort", filter_dictsort},
    {"e", filter_escape},
    {"escape", filter_escape},
    {"first", filter_first},
    {"float", filter_float},
    {"indent", filter_indent},
    {"int", filter_int},
    {"items", filter_items},
    {"join", filter_join},
    {"last", filter_last},
    {"length", filter_length},
    {"list", filter_list},
    {"lower", filter_lower},
    {"map", filter_map},
    {"max", filter_max},
    {"min", filter_min},
    {"reject", filter_reject},
    {"rejectattr", filter_rejectattr},
    {"replace", filter_replace},
    {"reverse", filter_reverse},
    {"round", filter_round},
    {"safe", filter_safe},
    {"select", filter_select},
    {"selectattr", filter_selectattr},
    {"sort", filter_sort},
    {"string", filter_string},
    {"sum", filter_sum},
    {"title", filter_title},
    {"tojson", filter_tojson},
    {"trim", filter_trim},
    {"unique", filter_unique},
    {"upper", filter_upper},
    {"wordcount", filter_wordcount},
};
static_assert(std::is_sorted(std::begin(kFilters), std::end(kFilters),
                             [](const FilterEntry& a, const FilterEntry& b) { return a.name < b.name; }),
              "kFilters must stay sorted by name");

}  // namespace

Value apply_filter(const std::string& name, const Value& v, CallArgs& args) {
  auto it = std::lower_bound(std::begin(kFilters), std::end(kFilters), std::string_view(name),
                             [](const FilterEntry& e, std::string_view n) { return e.name < n; });
  if (it == std::end(kFilters) || it->name != name) throw_error(args.line, "no filter named '" + name + "'");
  return it->fn(v, args);
}

namespace {

// One function per test (aliases share one); kTests below maps the names to them. `arg` is the
// test's first argument (`x is divisibleby 3`), undefined when none was given.
using TestFn = bool (*)(const Value& value, const Value& arg, int line);

int64_t require_test_int(const Value& v, std::string_view test, int line) {
  if (!v.is_int() && !v.is_bool()) throw_error(line, "test '" + std::string(test) + "' needs an integer, got " + v.type_name());
  return v.as_int();
}

// The reference engine (llama.cpp's minja) has one null for undefined and none: a value that is
// none is not `defined`, and an undefined one `is none`. Templates written against it (and the
// goldens) depend on that, e.g. `{% if message.content is defined %}` for a content-less call.
bool test_defined(const Value& v, const Value&, int) { return !v.is_undefined() && !v.is_none(); }
bool test_undefined(const Value& v, const Value&, int) { return v.is_undefined() || v.is_none(); }
bool test_none(const Value& v, const Value&, int) { return v.is_none() || v.is_undefined(); }
bool test_string(const Value& v, const Value&, int) { return v.is_string(); }
bool test_number(const Value& v, const Value&, int) { return v.is_number() || v.is_bool(); }  // Python bools are ints
bool test_integer(const Value& v, const Value&, int) { return v.is_int(); }
bool test_float(const Value& v, const Value&, int) { return v.is_float(); }
bool test_boolean(const Value& v, const Value&, int) { return v.is_bool(); }
bool test_true(const Value& v, const Value&, int) { return v.is_bool() && v.as_bool(); }
bool test_false(const Value& v, const Value&, int) { return v.is_bool() && !v.as_bool(); }
bool test_mapping(const Value& v, const Value&, int) { return v.is_dict(); }
bool test_iterable(const Value& v, const Value&, int) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }
bool test_sequence(const Value& v, const Value&, int) { return v.is_list() || v.is_dict() || v.is_string(); }
bool test_callable(const Value& v, const Value&, int) { return v.is_callable(); }
bool test_eq(const Value& v, const Value& arg, int) { return v.equals(arg); }
bool test_ne(const Value& v, const Value& arg, int) { return !v.equals(arg); }
bool test_lt(const Value& v, const Value& arg, int line) { return value_less(v, arg, line); }
bool test_gt(const Value& v, const Value& arg, int line) { return value_less(arg, v, line); }
bool test_le(const Value& v, const Value& arg, int line) { return !value_less(arg, v, line); }
bool test_ge(const Value& v, const Value& arg, int line) { return !value_less(v, arg, line); }
bool test_in(const Value& v, const Value& arg, int line) { return value_contains(arg, v, line); }
bool test_odd(const Value& v, const Value&, int line) { return require_test_int(v, "odd", line) % 2 != 0; }
bool test_even(const Value& v, const Value&, int line) { return require_test_int(v, "even", line) % 2 == 0; }
bool test_divisibleby(const Value& v, const Value& arg, int line) {
  require_test_int(v, "divisibleby", line);
  if (!arg.is_int() || arg.as_int() == 0) throw_error(line, "divisibleby needs a non-zero integer");
  return binary_op("%", v, arg, line).as_int() == 0;
}
bool test_lower(const Value& v, const Value&, int) {
  std::string s = v.to_display();
  return s == ascii_case(s, false);
}
bool test_upper(const Value& v, const Value&, int) {
  std::string s = v.to_display();
  return s == ascii_case(s, true);
}

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

// Sorted by name (byte order; checked below) for binary search.
constexpr TestEntry kTests[] = {
    {"!=", test_ne},
    {"<", test_lt},
    {"<=", test_le},
    {"==", test_eq},
    {">", test_gt},
    {">=", test_ge},
    {"boolean", test_boolean},
    {"callable", test_callable},
    {"defined", test_defined},
    {"divisibleby", test_divisibleby},
    {"eq", test_eq},
    {"equalto", test_eq},
    {"even", test_even},
    {"false", test_false},
    {"float", test_float},
    {"ge", test_ge},
    {"greaterthan", test_gt},
    {"gt", test_gt},
    {"in", test_in},
    {"integer", test_integer},
    {"iterable", test_iterable},
    {"le", test_le},
    {"lessthan", test_lt},
    {"lower", test_lower},
    {"lt", test_lt},
    {"mapping", test_mapping},
    {"ne", test_ne},
    {"none", test_none},
    {"number", test_number},
    {"odd", test_odd},
    {"sameas", test_eq},
    {"sequence", test_sequence},
    {"string", test_string},
    {"true", test_true},
    {"undefined", test_undefined},
    {"upper", test_upper},
};
static_assert(std::is_sorted(std::begin(kTests), std::end(kTests),
                             [](const TestEntry& a, const TestEntry& b) { return a.name < b.name; }),
              "kTests must stay sorted by name");

}  // namespace

bool apply_test(const std::string& name, const Value& v, CallArgs& args) {
  auto it = std::lower_bound(std::begin(kTests), std::end(kTests), std::string_view(name),
                             [](const TestEntry& e, std::string_view n) { return e.name < n; });
  if (it == std::end(kTests) || it->name != name) throw_error(args.line, "no test named '" + name + "'");
  return it->fn(v, args.get(0, "other"), args.line);
}

}  // namespace hearth::jinja
