// Jinja's built-in filters and tests with the argument names and defaults Jinja documents, so
// chat templates written for Python Jinja render the same here.
#include <algorithm>
#include <cctype>
#include <cmath>

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

}  // namespace

Value apply_filter(const std::string& name, const Value& v, CallArgs& args) {
  int line = args.line;
  if (name == "trim") return Value(get_method(Value(require_str(v, name, line)), "strip", line).function()(args));
  if (name == "tojson") {
    Value indent = args.get(0, "indent");
    Value sort_keys = args.get(2, "sort_keys");
    Value target = v;
    if (sort_keys.truthy() && v.is_dict()) {
      ValueDict sorted = v.entries();
      std::stable_sort(sorted.entries.begin(), sorted.entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      target = Value::dict(std::move(sorted));
    }
    int width = indent.is_int() ? static_cast<int>(std::clamp<int64_t>(indent.as_int(), 0, 64)) : -1;
    return Value(python_json_dumps(target, width, line));
  }
  if (name == "length" || name == "count") return Value(value_length(v, line));
  if (name == "lower" || name == "upper") return Value(ascii_case(v.to_display(), name == "upper"));
  if (name == "title") return Value(python_title(v.to_display()));
  if (name == "capitalize") return Value(python_capitalize(v.to_display()));
  if (name == "replace") return get_method(Value(v.to_display()), "replace", line).function()(args);
  if (name == "string") return Value(v.to_display());
  if (name == "safe") return v;
  if (name == "e" || name == "escape") return Value(html_escape(v.to_display()));
  if (name == "join") {
    Value sep = args.get(0, "d");
    Value attribute = args.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v, line)) {
      if (!first) out += sep.is_undefined() ? "" : sep.to_display();
      first = false;
      out += (attribute.is_undefined() ? item : lookup_path(item, attribute.to_display(), line)).to_display();
      if (out.size() > kMaxValueBytes) throw_error(line, "join: result too large");
    }
    return Value(out);
  }
  if (name == "default" || name == "d") {
    bool boolean = args.get(1, "boolean").truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) {
      Value d = args.get(0, "default_value");
      return d.is_undefined() ? Value("") : d;
    }
    return v;
  }
  if (name == "first" || name == "last") {
    ValueList items = iterate(v, line);
    if (items.empty()) return Value::undefined();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::list();
    if (!v.is_dict()) throw_error(line, std::string("items: expected a mapping, got ") + v.type_name());
    return get_method(v, "items", line).function()(args);
  }
  if (name == "list") return Value::list(iterate(v, line));
  if (name == "int") {
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
  if (name == "float") {
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
  if (name == "round") {
    if (!v.is_number() && !v.is_bool()) throw_error(line, "round: expected a number");
    Value precision = args.get(0, "precision");
    Value method = args.get(1, "method");
    return Value(python_round(v.as_float(), precision.is_int() ? precision.as_int() : 0,
                              method.is_string() ? method.as_string() : "common"));
  }
  if (name == "abs") {
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v.as_int())) : v.as_int());
    throw_error(line, std::string("abs: bad operand type '") + v.type_name() + "'");
  }
  if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
    bool by_attr = name == "selectattr" || name == "rejectattr";
    bool keep_when = name == "selectattr" || name == "select";
    size_t test_pos = by_attr ? 1 : 0;
    std::string attr = by_attr ? args.get(0, "attribute").to_display() : "";
    Value test = test_pos < args.positional.size() ? args.positional[test_pos] : Value();
    CallArgs test_args = rest_args(args, test_pos + 1);
    ValueList out;
    for (const auto& item : iterate(v, line)) {
      Value subject = by_attr ? lookup_path(item, attr, line) : item;
      bool pass = test.is_undefined() ? subject.truthy() : apply_test(test.to_display(), subject, test_args);
      if (pass == keep_when) out.push_back(item);
    }
    return Value::list(std::move(out));
  }
  if (name == "map") {
    Value attribute = args.get(99, "attribute");
    ValueList out;
    if (!attribute.is_undefined()) {
      Value def = args.get(99, "default");
      for (const auto& item : iterate(v, line)) {
        Value r = lookup_path(item, attribute.to_display(), line);
        out.push_back(r.is_undefined() && !def.is_undefined() ? def : r);
      }
      return Value::list(std::move(out));
    }
    if (args.positional.empty()) throw_error(line, "map: needs a filter name or attribute=");
    std::string filter = args.positional[0].to_display();
    CallArgs filter_args = rest_args(args, 1);
    for (const auto& item : iterate(v, line)) out.push_back(apply_filter(filter, item, filter_args));
    return Value::list(std::move(out));
  }
  if (name == "unique") {
    bool case_sensitive = args.get(0, "case_sensitive").truthy();
    Value attribute = args.get(1, "attribute");
    ValueList out, seen;
    for (const auto& item : iterate(v, line)) {
      Value key = sort_key(attribute.is_undefined() ? item : lookup_path(item, attribute.to_display(), line), case_sensitive);
      bool dup = false;
      for (const auto& s : seen) if (s.equals(key)) { dup = true; break; }
      if (!dup) { seen.push_back(key); out.push_back(item); }
    }
    return Value::list(std::move(out));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      ValueList chars = utf8_chars(v.as_string());
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->as_string();
      return Value(out);
    }
    ValueList items = iterate(v, line);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "sort") {
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
  if (name == "dictsort") {
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
  if (name == "indent") {
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
      if (out.size() > kMaxValueBytes) throw_error(line, "indent: result too large");
    }
    if (first) out = indention + out;
    return Value(out);
  }
  if (name == "wordcount") {
    int64_t words = 0;
    bool in_word = false;
    for (unsigned char c : v.to_display()) {
      bool w = std::isalnum(c) || c == '_' || c >= 0x80;
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value(words);
  }
  if (name == "batch") {
    Value size_v = args.get(0, "linecount");
    if (!size_v.is_int() || size_v.as_int() <= 0) throw_error(line, "batch: size must be a positive integer");
    size_t size = static_cast<size_t>(size_v.as_int());
    Value fill = args.get(1, "fill_with");
    ValueList out, cur;
    for (const auto& item : iterate(v, line)) {
      cur.push_back(item);
      if (cur.size() == size) { out.push_back(Value::list(std::move(cur))); cur.clear(); }
    }
    if (!cur.empty()) {
      if (!fill.is_undefined()) while (cur.size() < size) cur.push_back(fill);
      out.push_back(Value::list(std::move(cur)));
    }
    return Value::list(std::move(out));
  }
  if (name == "sum") {
    Value attribute = args.get(0, "attribute");
    Value total = args.has(1, "start") ? args.get(1, "start") : Value(int64_t{0});
    for (const auto& item : iterate(v, line)) {
      total = binary_op("+", total, attribute.is_undefined() ? item : lookup_path(item, attribute.to_display(), line), line);
    }
    return total;
  }
  if (name == "min" || name == "max") {
    ValueList items = iterate(v, line);
    if (items.empty()) return Value::undefined();
    Value best = items[0];
    for (const auto& item : items) {
      if (name == "min" ? value_less(item, best, line) : value_less(best, item, line)) best = item;
    }
    return best;
  }
  throw_error(line, "no filter named '" + name + "'");
}

bool apply_test(const std::string& name, const Value& v, CallArgs& args) {
  int line = args.line;
  Value arg = args.get(0, "other");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number() || v.is_bool();  // Python bools are ints
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "callable") return v.is_callable();
  if (name == "equalto" || name == "==" || name == "eq" || name == "sameas") return v.equals(arg);
  if (name == "ne" || name == "!=") return !v.equals(arg);
  if (name == "lt" || name == "<" || name == "lessthan") return value_less(v, arg, line);
  if (name == "gt" || name == ">" || name == "greaterthan") return value_less(arg, v, line);
  if (name == "le" || name == "<=") return !value_less(arg, v, line);
  if (name == "ge" || name == ">=") return !value_less(v, arg, line);
  if (name == "in") return value_contains(arg, v, line);
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!v.is_int() && !v.is_bool()) throw_error(line, "test '" + name + "' needs an integer, got " + v.type_name());
    if (name == "divisibleby") {
      if (!arg.is_int() || arg.as_int() == 0) throw_error(line, "divisibleby needs a non-zero integer");
      return binary_op("%", v, arg, line).as_int() == 0;
    }
    bool odd = (v.as_int() % 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "lower" || name == "upper") {
    std::string s = v.to_display();
    return s == ascii_case(s, name == "upper");
  }
  throw_error(line, "no test named '" + name + "'");
}

}  // namespace hearth::jinja
