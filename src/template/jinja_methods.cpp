// Python methods that chat templates call on values: str (strip, split, startswith, replace...),
// list (append, pop, extend...) and dict (get, items, keys, values, update...). Each is returned
// as a bound function by get_method.
#include <algorithm>
#include <cctype>

#include "template/jinja_ops.h"

namespace hearth::jinja {
namespace {

bool is_py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right) {
  auto strip_it = [&](char c) {
    if (chars.is_undefined() || chars.is_none()) return is_py_space(c);
    return chars.as_string().find(c) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  if (left) while (b < e && strip_it(s[b])) ++b;
  if (right) while (e > b && strip_it(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string require_string(const Value& v, const char* what, int line) {
  if (!v.is_string()) throw_error(line, std::string(what) + " expects a string argument, got " + v.type_name());
  return v.as_string();
}

ValueList split_string(const std::string& s, const Value& sep, int64_t maxsplit, int line) {
  ValueList out;
  if (sep.is_undefined() || sep.is_none()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && is_py_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        size_t e = s.size();
        while (e > i && is_py_space(s[e - 1])) --e;
        out.emplace_back(s.substr(i, e - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_py_space(s[j])) ++j;
      out.emplace_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  std::string d = require_string(sep, "split", line);
  if (d.empty()) throw_error(line, "split: empty separator");
  size_t start = 0;
  while (true) {
    size_t at = s.find(d, start);
    if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit)) {
      out.emplace_back(s.substr(start));
      break;
    }
    out.emplace_back(s.substr(start, at - start));
    start = at + d.size();
  }
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count, int line) {
  std::string out;
  if (from.empty()) {
    ValueList chars = utf8_chars(s);
    int64_t done = 0;
    for (const auto& c : chars) {
      if (count < 0 || done < count) { out += to; ++done; }
      out += c.as_string();
    }
    if (count < 0 || done < count) out += to;
    if (out.size() > kMaxValueBytes) throw_error(line, "replace: result too large");
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (true) {
    size_t at = s.find(from, start);
    if (at == std::string::npos || (count >= 0 && done >= count)) break;
    out.append(s, start, at - start);
    out += to;
    if (out.size() > kMaxValueBytes) throw_error(line, "replace: result too large");
    start = at + from.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

}  // namespace

std::string python_title(const std::string& s) {
  std::string out = s;
  bool prev_letter = false;
  for (auto& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    bool letter = std::isalpha(u) != 0;
    if (letter) c = static_cast<char>(prev_letter ? std::tolower(u) : std::toupper(u));
    prev_letter = letter || (u >= 0x80);
  }
  return out;
}

std::string python_capitalize(const std::string& s) {
  std::string out = s;
  for (size_t i = 0; i < out.size(); ++i) {
    unsigned char u = static_cast<unsigned char>(out[i]);
    out[i] = static_cast<char>(i == 0 ? std::toupper(u) : std::tolower(u));
  }
  return out;
}

std::string ascii_case(const std::string& s, bool upper) {
  std::string out = s;
  for (auto& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    c = static_cast<char>(upper ? std::toupper(u) : std::tolower(u));
  }
  return out;
}

static Value string_method(const std::string& s, const std::string& name, int line) {
  auto fn = [&](NativeFunction f) { return Value::function(name, std::move(f)); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool left = name != "rstrip", right = name != "lstrip";
    return fn([s, left, right](CallArgs& a) { return Value(strip_chars(s, a.get(0, "chars"), left, right)); });
  }
  if (name == "split") {
    return fn([s](CallArgs& a) {
      Value max = a.get(1, "maxsplit");
      return Value::list(split_string(s, a.get(0, "sep"), max.is_int() ? max.as_int() : -1, a.line));
    });
  }
  if (name == "startswith" || name == "endswith") {
    bool starts = name == "startswith";
    return fn([s, starts](CallArgs& a) {
      Value arg = a.get(0, "prefix");
      ValueList options = arg.is_list() ? arg.items() : ValueList{arg};
      for (const auto& o : options) {
        std::string p = require_string(o, starts ? "startswith" : "endswith", a.line);
        if (p.size() <= s.size() && (starts ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0)) {
          return Value(true);
        }
      }
      return Value(false);
    });
  }
  if (name == "upper" || name == "lower") {
    bool upper = name == "upper";
    return fn([s, upper](CallArgs&) { return Value(ascii_case(s, upper)); });
  }
  if (name == "title") return fn([s](CallArgs&) { return Value(python_title(s)); });
  if (name == "capitalize") return fn([s](CallArgs&) { return Value(python_capitalize(s)); });
  if (name == "replace") {
    return fn([s](CallArgs& a) {
      Value count = a.get(2, "count");
      return Value(replace_all(s, require_string(a.get(0, "old"), "replace", a.line),
                               require_string(a.get(1, "new"), "replace", a.line), count.is_int() ? count.as_int() : -1, a.line));
    });
  }
  if (name == "find") {
    return fn([s](CallArgs& a) {
      size_t at = s.find(require_string(a.get(0, "sub"), "find", a.line));
      return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(at));
    });
  }
  if (name == "count") {
    return fn([s](CallArgs& a) {
      std::string sub = require_string(a.get(0, "sub"), "count", a.line);
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_chars(s).size() + 1));
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      return Value(n);
    });
  }
  if (name == "join") {
    return fn([s](CallArgs& a) {
      std::string out;
      bool first = true;
      for (const auto& v : iterate(a.get(0, "iterable"), a.line)) {
        if (!first) out += s;
        first = false;
        out += v.to_display();
        if (out.size() > kMaxValueBytes) throw_error(a.line, "join: result too large");
      }
      return Value(out);
    });
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
    return fn([s, name](CallArgs&) {
      if (s.empty()) return Value(false);
      for (unsigned char c : s) {
        bool ok = name == "isdigit" ? std::isdigit(c) : name == "isalpha" ? std::isalpha(c)
                  : name == "isspace" ? is_py_space(static_cast<char>(c)) : std::isalnum(c);
        if (!ok) return Value(false);
      }
      return Value(true);
    });
  }
  if (name == "removeprefix" || name == "removesuffix") {
    bool prefix = name == "removeprefix";
    return fn([s, prefix](CallArgs& a) {
      std::string p = require_string(a.get(0, "affix"), "remove", a.line);
      if (p.size() <= s.size()) {
        if (prefix && s.compare(0, p.size(), p) == 0) return Value(s.substr(p.size()));
        if (!prefix && s.compare(s.size() - p.size(), p.size(), p) == 0) return Value(s.substr(0, s.size() - p.size()));
      }
      return Value(s);
    });
  }
  (void)line;
  return Value::undefined(name);
}

static Value list_method(const Value& obj, const std::string& name) {
  auto fn = [&](NativeFunction f) { return Value::function(name, std::move(f)); };
  Value self = obj;  // shares the list
  if (name == "append") {
    return fn([self](CallArgs& a) {
      if (self.items().size() >= static_cast<size_t>(kMaxSequenceItems)) throw_error(a.line, "list too large");
      self.items().push_back(a.get(0, "item"));
      return Value::none();
    });
  }
  if (name == "extend") {
    return fn([self](CallArgs& a) {
      ValueList add = iterate(a.get(0, "iterable"), a.line);
      if (self.items().size() + add.size() > static_cast<size_t>(kMaxSequenceItems)) throw_error(a.line, "list too large");
      self.items().insert(self.items().end(), add.begin(), add.end());
      return Value::none();
    });
  }
  if (name == "insert") {
    return fn([self](CallArgs& a) {
      auto& items = self.items();
      int64_t size = static_cast<int64_t>(items.size());
      int64_t i = a.get(0, "index").as_int();
      if (i < 0) i += size;
      if (i < 0) i = 0;
      if (i > size) i = size;
      if (items.size() >= static_cast<size_t>(kMaxSequenceItems)) throw_error(a.line, "list too large");
      items.insert(items.begin() + i, a.get(1, "item"));
      return Value::none();
    });
  }
  if (name == "pop") {
    return fn([self](CallArgs& a) {
      auto& items = self.items();
      if (items.empty()) throw_error(a.line, "pop from empty list");
      int64_t size = static_cast<int64_t>(items.size());
      int64_t i = a.has(0, "index") ? a.get(0, "index").as_int() : size - 1;
      if (i < 0) i += size;
      if (i < 0 || i >= size) throw_error(a.line, "pop index out of range");
      Value v = items[static_cast<size_t>(i)];
      items.erase(items.begin() + i);
      return v;
    });
  }
  if (name == "index") {
    return fn([self](CallArgs& a) {
      Value x = a.get(0, "item");
      for (size_t i = 0; i < self.items().size(); ++i) if (self.items()[i].equals(x)) return Value(static_cast<int64_t>(i));
      throw_error(a.line, "list.index(x): x not in list");
    });
  }
  if (name == "count") {
    return fn([self](CallArgs& a) {
      int64_t n = 0;
      for (const auto& v : self.items()) if (v.equals(a.get(0, "item"))) ++n;
      return Value(n);
    });
  }
  if (name == "reverse") {
    return fn([self](CallArgs&) {
      std::reverse(self.items().begin(), self.items().end());
      return Value::none();
    });
  }
  if (name == "copy") return fn([self](CallArgs&) { return Value::list(self.items()); });
  return Value::undefined(name);
}

static Value dict_method(const Value& obj, const std::string& name) {
  auto fn = [&](NativeFunction f) { return Value::function(name, std::move(f)); };
  Value self = obj;
  if (name == "get") {
    return fn([self](CallArgs& a) {
      Value key = a.get(0, "key");
      if (key.is_string()) {
        if (const Value* v = self.entries().find(key.as_string())) return *v;
      }
      return a.has(1, "default") ? a.get(1, "default") : Value::none();
    });
  }
  if (name == "items") {
    return fn([self](CallArgs&) {
      ValueList out;
      for (const auto& [k, v] : self.entries().entries) out.push_back(Value::list({Value(k), v}));
      return Value::list(std::move(out));
    });
  }
  if (name == "keys") {
    return fn([self](CallArgs&) {
      ValueList out;
      for (const auto& e : self.entries().entries) out.emplace_back(e.first);
      return Value::list(std::move(out));
    });
  }
  if (name == "values") {
    return fn([self](CallArgs&) {
      ValueList out;
      for (const auto& e : self.entries().entries) out.push_back(e.second);
      return Value::list(std::move(out));
    });
  }
  if (name == "update") {
    return fn([self](CallArgs& a) {
      if (!a.positional.empty()) {
        const Value& other = a.positional[0];
        if (!other.is_dict()) throw_error(a.line, "dict.update expects a mapping");
        auto copy = other.entries().entries;
        for (auto& [k, v] : copy) self.entries().set(k, v);
      }
      for (auto& [k, v] : a.keyword) self.entries().set(k, v);
      return Value::none();
    });
  }
  if (name == "pop") {
    return fn([self](CallArgs& a) {
      Value key = a.get(0, "key");
      if (key.is_string()) {
        if (const Value* v = self.entries().find(key.as_string())) {
          Value out = *v;
          self.entries().erase(key.as_string());
          return out;
        }
      }
      if (a.has(1, "default")) return a.get(1, "default");
      throw_error(a.line, "KeyError: " + key.to_repr());
    });
  }
  if (name == "setdefault") {
    return fn([self](CallArgs& a) {
      Value key = a.get(0, "key");
      if (!key.is_string()) throw_error(a.line, "setdefault: keys must be strings");
      if (const Value* v = self.entries().find(key.as_string())) return *v;
      Value d = a.has(1, "default") ? a.get(1, "default") : Value::none();
      self.entries().set(key.as_string(), d);
      return d;
    });
  }
  if (name == "copy") return fn([self](CallArgs&) { return Value::dict(self.entries()); });
  return Value::undefined(name);
}

Value get_method(const Value& obj, const std::string& name, int line) {
  if (obj.is_string()) return string_method(obj.as_string(), name, line);
  if (obj.is_list()) return list_method(obj, name);
  if (obj.is_dict() && !obj.entries().is_namespace) return dict_method(obj, name);
  return Value::undefined(name);
}

}  // namespace hearth::jinja
