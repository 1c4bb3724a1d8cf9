// JSON Schema → GBNF (see json_schema_grammar.h). A schema node becomes a GBNF expression;
// objects, arrays and $ref targets get rules of their own (named after where they are in the
// schema), JSON's lexical pieces (strings, numbers, whitespace) are shared rules emitted once
// when something uses them. $ref targets are converted once and referenced by rule name, so
// recursive schemas give recursive rules.
#include "sampler/grammar/json_schema_grammar.h"

#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "sampler/grammar/json_schema_pattern.h"

namespace hearth::sampler {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxDepth = 64;

// JSON's lexical rules; each names the rules it uses.
struct PrimitiveRule {
  const char* name;
  const char* body;
  std::vector<const char*> uses;
};

const std::vector<PrimitiveRule>& primitive_rules() {
  static const std::vector<PrimitiveRule> rules = {
      {"ws", "( \" \" | \"\\n\" [ \\t]{0,20} )?", {}},
      {"json-char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )", {}},
      {"json-string", "\"\\\"\" json-char* \"\\\"\"", {"json-char"}},
      {"json-digits", "\"0\" | [1-9] [0-9]{0,15}", {}},
      {"json-fraction", "( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?", {}},
      {"json-integer", "\"-\"? json-digits", {"json-digits"}},
      {"json-number", "\"-\"? json-digits json-fraction", {"json-digits", "json-fraction"}},
      {"json-unsigned-integer", "json-digits", {"json-digits"}},
      {"json-unsigned-number", "json-digits json-fraction", {"json-digits", "json-fraction"}},
      {"json-boolean", "\"true\" | \"false\"", {}},
      {"json-null", "\"null\"", {}},
      {"json-value", "json-object | json-array | json-string | json-number | json-boolean | json-null",
       {"json-object", "json-array", "json-string", "json-number", "json-boolean", "json-null"}},
      {"json-member", "json-string ws \":\" ws json-value ws", {"json-string", "ws", "json-value"}},
      {"json-object", "\"{\" ws ( json-member ( \",\" ws json-member )* )? \"}\"", {"ws", "json-member"}},
      {"json-array", "\"[\" ws ( json-value ws ( \",\" ws json-value ws )* )? \"]\"", {"ws", "json-value"}},
      {"json-date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )", {}},
      {"json-time",
       "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )? "
       "( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )",
       {}},
      {"json-uuid", "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}", {}},
  };
  return rules;
}

// Marks a shared rule (and the rules it uses) as needed; returns its name.
std::string use_primitive(std::set<std::string>& used, const char* name) {
  if (used.insert(name).second) {
    for (const auto& p : primitive_rules()) {
      if (std::string_view(p.name) == name) {
        for (const char* dep : p.uses) use_primitive(used, dep);
      }
    }
  }
  return name;
}

// The text of the shared rules in `used`.
std::string primitive_text(const std::set<std::string>& used) {
  std::string out;
  for (const auto& p : primitive_rules()) {
    if (used.count(p.name)) out += std::string(p.name) + " ::= " + p.body + "\n";
  }
  return out;
}

// A GBNF literal matching exactly `bytes` (valid UTF-8).
std::string gbnf_literal(std::string_view bytes) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string json_text(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

// A JSON pointer segment as written in a path ("~" and "/" escaped).
std::string pointer_segment(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// Keywords that change which values are valid in ways the grammar cannot express, whatever
// the type. (Type-specific ones are checked by the type's converter.)
constexpr const char* kUnsupportedAnywhere[] = {
    "not", "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies",
    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
};

// Keywords that say which types a schema without `type` is about.
constexpr const char* kObjectKeywords[] = {"properties", "required", "additionalProperties", "patternProperties",
                                           "propertyNames", "minProperties", "maxProperties"};
constexpr const char* kArrayKeywords[] = {"items", "prefixItems", "minItems", "maxItems", "uniqueItems",
                                          "contains", "minContains", "maxContains", "additionalItems"};
constexpr const char* kStringKeywords[] = {"minLength", "maxLength", "pattern", "format"};
constexpr const char* kNumberKeywords[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                           "multipleOf"};
constexpr const char* kAllTypes[] = {"object", "array", "string", "number", "integer", "boolean", "null"};

template <size_t N>
bool has_any(const Json& s, const char* const (&keys)[N]) {
  for (const char* k : keys) {
    if (s.contains(k)) return true;
  }
  return false;
}

class SchemaConverter {
 public:
  explicit SchemaConverter(const Json& root) : root_(root) {}

  Result<std::string> run() {
    reserve_name("root");
    HEARTH_ASSIGN(std::string expr, convert(root_, "#", "root"));
    rules_.insert(rules_.begin(), {"root", expr});
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out + primitive_text(used_);
  }

 private:
  Error unsupported(const std::string& keyword, const std::string& path) const {
    return make_error(ErrorKind::kUnsupported,
                      "json schema: unsupported keyword '" + keyword + "' at " + path + " (it restricts values in a way structured output cannot enforce)");
  }
  Error invalid(const std::string& path, const std::string& what) const {
    return make_error(ErrorKind::kInvalidArgument, "json schema: " + path + ": " + what);
  }

  std::string use(const char* name) { return use_primitive(used_, name); }

  void reserve_name(const std::string& name) { names_.insert(name); }

  // A fresh rule name from a hint: letters, digits and '-' only, never clashing with the shared
  // rules (which start with "json-" or are "ws").
  std::string fresh_name(const std::string& hint) {
    std::string base;
    for (char c : hint) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (ok) {
        base += c;
      } else if (!base.empty() && base.back() != '-') {
        base += '-';
      }
      if (base.size() >= 48) break;
    }
    while (!base.empty() && base.back() == '-') base.pop_back();
    if (base.empty() || base == "ws" || base.rfind("json", 0) == 0) base = "s-" + base;
    std::string name = base;
    for (int n = 2; names_.count(name); ++n) name = base + "-" + std::to_string(n);
    names_.insert(name);
    return name;
  }

  std::string add_rule(const std::string& hint, const std::string& body) {
    std::string name = fresh_name(hint);
    rules_.emplace_back(name, body);
    return name;
  }

  Result<std::string> convert(const Json& s, const std::string& path, const std::string& hint) {
    if (depth_ >= kMaxDepth) return invalid(path, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    ++depth_;
    auto r = convert_node(s, path, hint);
    --depth_;
    return r;
  }

  Result<std::string> convert_node(const Json& s, const std::string& path, const std::string& hint) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return use("json-value");
      return invalid(path, "the schema 'false' accepts no value");
    }
    if (!s.is_object()) return invalid(path, "a schema must be an object or a boolean");
    for (const char* k : kUnsupportedAnywhere) {
      if (s.contains(k)) return unsupported(k, path);
    }
    HEARTH_ASSIGN(std::string expr, convert_value(s, path, hint));
    auto nullable = s.find("nullable");
    if (nullable != s.end() && nullable->is_boolean() && nullable->get<bool>()) {
      expr = "( " + expr + " | " + use("json-null") + " )";
    }
    return expr;
  }

  // Everything but `nullable`.
  Result<std::string> convert_value(const Json& s, const std::string& path, const std::string& hint) {
    if (auto ref = s.find("$ref"); ref != s.end()) {
      for (auto it = s.begin(); it != s.end(); ++it) {
        const std::string& k = it.key();
        if (k == "$ref" || k == "$defs" || k == "definitions" || is_annotation(k)) continue;
        return invalid(path, "'" + k + "' beside '$ref' is not supported; put the reference in 'allOf' alone or move the keyword into the referenced schema");
      }
      if (!ref->is_string()) return invalid(path + "/$ref", "must be a string");
      return reference(ref->get<std::string>(), path);
    }
    if (auto c = s.find("const"); c != s.end()) return gbnf_literal(json_text(*c));
    if (auto e = s.find("enum"); e != s.end()) {
      if (!e->is_array() || e->empty()) return invalid(path + "/enum", "must be a non-empty array");
      std::string alts;
      for (const Json& v : *e) alts += (alts.empty() ? "" : " | ") + gbnf_literal(json_text(v));
      return "( " + alts + " )";
    }
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
      auto it = s.find(key);
      if (it == s.end()) continue;
      const std::string at = path + "/" + key;
      if (!it->is_array() || it->empty()) return invalid(at, "must be a non-empty array of schemas");
      if (std::string_view(key) == "allOf" && it->size() > 1) return unsupported("allOf", path);
      if (s.contains("type") || has_any(s, kObjectKeywords) || has_any(s, kArrayKeywords) ||
          has_any(s, kStringKeywords) || has_any(s, kNumberKeywords)) {
        return make_error(ErrorKind::kUnsupported, "json schema: " + path + ": '" + key +
                                                       "' beside 'type', 'properties' or other type keywords is not supported; "
                                                       "move them into each alternative");
      }
      std::string alts;
      for (size_t i = 0; i < it->size(); ++i) {
        HEARTH_ASSIGN(std::string alt, convert((*it)[i], at + "/" + std::to_string(i), hint));
        alts += (alts.empty() ? "" : " | ") + alt;
      }
      return "( " + alts + " )";
    }

    std::vector<std::string> types;
    if (auto t = s.find("type"); t != s.end()) {
      if (t->is_string()) {
        types.push_back(t->get<std::string>());
      } else if (t->is_array() && !t->empty()) {
        for (const Json& x : *t) {
          if (!x.is_string()) return invalid(path + "/type", "must be a type name or an array of them");
          types.push_back(x.get<std::string>());
        }
      } else {
        return invalid(path + "/type", "must be a type name or a non-empty array of them");
      }
      for (const auto& name : types) {
        bool known = false;
        for (const char* k : kAllTypes) known = known || name == k;
        if (!known) return invalid(path + "/type", "unknown type '" + name + "'");
      }
    } else {
      // No type: the keywords say which types are constrained; none means any value.
      if (has_any(s, kObjectKeywords)) types.push_back("object");
      if (has_any(s, kArrayKeywords)) types.push_back("array");
      if (has_any(s, kStringKeywords)) types.push_back("string");
      if (has_any(s, kNumberKeywords)) types.push_back("number");
      if (types.empty()) return use("json-value");
    }
    std::string alts;
    for (const auto& type : types) {
      HEARTH_ASSIGN(std::string alt, convert_typed(s, type, path, hint));
      alts += (alts.empty() ? "" : " | ") + alt;
    }
    return types.size() == 1 ? alts : "( " + alts + " )";
  }

  static bool is_annotation(const std::string& k) {
    static const std::set<std::string> kAnnotations = {
        "title", "description", "examples", "default", "$schema", "$id", "$comment", "$anchor",
        "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "nullable"};
    return kAnnotations.count(k) > 0;
  }

  Result<std::string> convert_typed(const Json& s, const std::string& type, const std::string& path, const std::string& hint) {
    if (type == "object") return convert_object(s, path, hint);
    if (type == "array") return convert_array(s, path, hint);
    if (type == "string") return convert_string(s, path);
    if (type == "number" || type == "integer") return convert_number(s, path, type == "integer");
    if (type == "boolean") return use("json-boolean");
    return use("json-null");
  }

  Result<std::string> convert_number(const Json& s, const std::string& path, bool integer) {
    bool non_negative = false;
    for (const char* k : kNumberKeywords) {
      auto it = s.find(k);
      if (it == s.end()) continue;
      // minimum 0 (counts, indices, prices) is common enough to honour: no minus sign.
      if (std::string_view(k) == "minimum" && it->is_number() && it->get<double>() == 0.0) {
        non_negative = true;
        continue;
      }
      return unsupported(k, path);
    }
    if (integer) return use(non_negative ? "json-unsigned-integer" : "json-integer");
    return use(non_negative ? "json-unsigned-number" : "json-number");
  }

  // A non-negative integer keyword (3.0 counts as 3); absent: nullopt.
  Result<std::optional<uint64_t>> count(const Json& s, const char* key, const std::string& path) {
    auto it = s.find(key);
    if (it == s.end()) return std::optional<uint64_t>();
    if (it->is_number_unsigned()) return std::optional<uint64_t>(it->get<uint64_t>());
    if (it->is_number_float()) {
      const double v = it->get<double>();
      if (v >= 0 && v < 1e15 && v == static_cast<double>(static_cast<uint64_t>(v))) {
        return std::optional<uint64_t>(static_cast<uint64_t>(v));
      }
    }
    return invalid(path + "/" + key, "must be a non-negative integer");
  }

  // "{min,max}" for GBNF (max absent: unbounded).
  static std::string repeat(uint64_t min, std::optional<uint64_t> max) {
    return "{" + std::to_string(min) + "," + (max ? std::to_string(*max) : "") + "}";
  }

  Result<std::string> convert_string(const Json& s, const std::string& path) {
    HEARTH_ASSIGN(auto min_len, count(s, "minLength", path));
    HEARTH_ASSIGN(auto max_len, count(s, "maxLength", path));
    if (auto p = s.find("pattern"); p != s.end()) {
      if (!p->is_string()) return invalid(path + "/pattern", "must be a string");
      if (min_len || max_len) return unsupported("pattern' beside 'minLength'/'maxLength", path);
      auto body = json_pattern_to_gbnf(p->get<std::string>(), use("json-char"));
      if (!body.ok()) {
        return make_error(ErrorKind::kUnsupported, "json schema: unsupported keyword 'pattern' at " + path +
                                                       " (only simple regular expressions are supported; this one has " + body.error().message + ")");
      }
      return "\"\\\"\" " + *body + " \"\\\"\"";
    }
    if (auto f = s.find("format"); f != s.end() && f->is_string() && !min_len && !max_len) {
      const std::string format = f->get<std::string>();
      // Other formats only annotate (JSON Schema 2020-12 makes format an annotation by default).
      if (format == "date") return "\"\\\"\" " + use("json-date") + " \"\\\"\"";
      if (format == "time") return "\"\\\"\" " + use("json-time") + " \"\\\"\"";
      if (format == "date-time") return "\"\\\"\" " + use("json-date") + " \"T\" " + use("json-time") + " \"\\\"\"";
      if (format == "uuid") return "\"\\\"\" " + use("json-uuid") + " \"\\\"\"";
    }
    if (!min_len && !max_len) return use("json-string");
    if (max_len && min_len && *min_len > *max_len) return invalid(path, "minLength is larger than maxLength: no string is valid");
    if (min_len.value_or(0) > 100000 || max_len.value_or(0) > 100000) {
      return unsupported("minLength/maxLength above 100000", path);
    }
    return "\"\\\"\" " + use("json-char") + repeat(min_len.value_or(0), max_len) + " \"\\\"\"";
  }

  Result<std::string> convert_object(const Json& s, const std::string& path, const std::string& hint) {
    for (const char* k : {"patternProperties", "propertyNames", "minProperties", "maxProperties"}) {
      if (s.contains(k)) return unsupported(k, path);
    }
    struct Property {
      std::string key;
      std::string member;  // GBNF: "key" ws ":" ws value
      bool required = false;
    };
    std::vector<Property> props;
    const Json* properties = nullptr;
    if (auto p = s.find("properties"); p != s.end()) {
      if (!p->is_object()) return invalid(path + "/properties", "must be an object");
      properties = &*p;
    }
    std::set<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) return invalid(path + "/required", "must be an array of property names");
      for (const Json& name : *r) {
        if (!name.is_string()) return invalid(path + "/required", "must be an array of property names");
        required.insert(name.get<std::string>());
      }
    }
    const std::string base = hint;
    auto member = [&](const std::string& key, const std::string& value) {
      return gbnf_literal(json_text(Json(key))) + " " + use("ws") + " \":\" ws " + value;
    };
    if (properties) {
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        // `false`: the property must be absent (an error below if it is also required).
        if (it.value().is_boolean() && !it.value().get<bool>() && !required.count(it.key())) continue;
        HEARTH_ASSIGN(std::string value, convert(it.value(), path + "/properties/" + pointer_segment(it.key()), base + "-" + it.key()));
        props.push_back({it.key(), member(it.key(), value), required.count(it.key()) > 0});
      }
    }
    // Required names with no schema of their own take any value.
    if (auto r = s.find("required"); r != s.end()) {
      for (const Json& name : *r) {
        const std::string key = name.get<std::string>();
        bool listed = properties && properties->contains(key);
        for (const auto& p : props) listed = listed || p.key == key;
        if (!listed) props.push_back({key, member(key, use("json-value")), true});
      }
    }
    // Extra keys: `additionalProperties` (absent: none when properties are listed, else any).
    std::string extra;
    if (auto a = s.find("additionalProperties"); a != s.end()) {
      if (!(a->is_boolean() && !a->get<bool>())) {
        HEARTH_ASSIGN(std::string value, convert(*a, path + "/additionalProperties", base + "-additional"));
        extra = use("json-string") + " " + use("ws") + " \":\" ws " + value;
      }
    } else if (props.empty()) {
      extra = use("json-string") + " " + use("ws") + " \":\" ws " + use("json-value");
    }
    if (!extra.empty()) extra = add_rule(base + "-extra", extra + " ws");
    use("ws");

    // after[i]: the members from i on when a member came before (each starts with a comma);
    // first(i): the same when none came before.
    const size_t n = props.size();
    std::vector<std::string> after(n + 1);
    after[n] = extra.empty() ? "" : "( \",\" ws " + extra + " )*";
    for (size_t i = n; i-- > 0;) {
      std::string item = "\",\" ws " + props[i].member + " ws";
      std::string body = props[i].required ? item : "( " + item + " )?";
      if (!after[i + 1].empty()) body += " " + after[i + 1];
      // Each optional member's tail is a rule, so first() below stays linear in size.
      after[i] = props[i].required ? body : add_rule(base + "-after-" + std::to_string(i), body);
    }
    std::string first = extra.empty() ? "" : "( " + extra + " " + after[n] + " )?";
    for (size_t i = n; i-- > 0;) {
      std::string head = props[i].member + " ws" + (after[i + 1].empty() ? "" : " " + after[i + 1]);
      first = props[i].required ? head : "( " + head + (first.empty() ? " )?" : " | " + first + " )");
    }
    return add_rule(base, "\"{\" ws " + (first.empty() ? "" : first + " ") + "\"}\"");
  }

  Result<std::string> convert_array(const Json& s, const std::string& path, const std::string& hint) {
    for (const char* k : {"contains", "minContains", "maxContains"}) {
      if (s.contains(k)) return unsupported(k, path);
    }
    if (auto u = s.find("uniqueItems"); u != s.end() && !(u->is_boolean() && !u->get<bool>())) {
      return unsupported("uniqueItems", path);
    }
    HEARTH_ASSIGN(auto min_items, count(s, "minItems", path));
    HEARTH_ASSIGN(auto max_items, count(s, "maxItems", path));
    if (min_items.value_or(0) > 10000 || max_items.value_or(0) > 10000) {
      return unsupported("minItems/maxItems above 10000", path);
    }
    // Tuples: prefixItems (2020-12) or array-form items (older drafts), then the rest.
    const Json* tuple = nullptr;
    std::string tuple_key;
    const Json* rest = nullptr;
    std::string rest_key;
    if (auto p = s.find("prefixItems"); p != s.end()) {
      tuple = &*p, tuple_key = "prefixItems";
      if (auto it = s.find("items"); it != s.end()) rest = &*it, rest_key = "items";
    } else if (auto it = s.find("items"); it != s.end() && it->is_array()) {
      tuple = &*it, tuple_key = "items";
      if (auto a = s.find("additionalItems"); a != s.end()) rest = &*a, rest_key = "additionalItems";
    } else if (it != s.end()) {
      rest = &*it, rest_key = "items";
    }
    std::string item;  // GBNF for one further item; empty when none may follow
    if (rest && !(rest->is_boolean() && !rest->get<bool>())) {
      HEARTH_ASSIGN(item, convert(*rest, path + "/" + rest_key, hint + "-item"));
    } else if (!rest && !tuple) {
      item = use("json-value");
    }
    use("ws");
    if (tuple) {
      if (!tuple->is_array()) return invalid(path + "/" + tuple_key, "must be an array of schemas");
      if (min_items || max_items) return unsupported("minItems/maxItems beside " + tuple_key, path);
      std::string body = "\"[\" ws";
      for (size_t i = 0; i < tuple->size(); ++i) {
        HEARTH_ASSIGN(std::string v, convert((*tuple)[i], path + "/" + tuple_key + "/" + std::to_string(i), hint + "-" + std::to_string(i)));
        body += (i ? " \",\" ws " : " ") + v + " ws";
      }
      if (!item.empty()) {
        body += tuple->empty() ? " ( " + item + " ws ( \",\" ws " + item + " ws )* )?" : " ( \",\" ws " + item + " ws )*";
      }
      return add_rule(hint, body + " \"]\"");
    }
    const uint64_t min = min_items.value_or(0);
    if (max_items && min > *max_items) return invalid(path, "minItems is larger than maxItems: no array is valid");
    if (item.empty() && min > 0) return invalid(path, "minItems asks for items the schema does not allow");
    if (item.empty() || (max_items && *max_items == 0)) return add_rule(hint, "\"[\" ws \"]\"");
    const std::string elem = item + " ws";
    std::string more_max;
    std::optional<uint64_t> more_limit = max_items ? std::optional<uint64_t>(*max_items - 1) : std::nullopt;
    if (min == 0) {
      std::string more = more_limit ? "( \",\" ws " + elem + " )" + repeat(0, more_limit) : "( \",\" ws " + elem + " )*";
      return add_rule(hint, "\"[\" ws ( " + elem + " " + more + " )? \"]\"");
    }
    std::string more = "( \",\" ws " + elem + " )" + repeat(min - 1, more_limit);
    return add_rule(hint, "\"[\" ws " + elem + " " + more + " \"]\"");
  }

  // A local reference "#", "#/$defs/x", "#/definitions/x" or any JSON pointer into the schema.
  Result<std::string> reference(const std::string& ref, const std::string& path) {
    if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) return it->second;
    if (ref.empty() || ref[0] != '#') {
      return make_error(ErrorKind::kUnsupported, "json schema: " + path + ": '$ref' to '" + ref +
                                                     "' is not supported (only references inside the schema, '#/...')");
    }
    const Json* target = &root_;
    std::string hint = "root";
    if (ref.size() > 1) {
      if (ref[1] != '/') return invalid(path, "'$ref' '" + ref + "' is not a JSON pointer ('#/...')");
      size_t pos = 2;
      while (true) {
        size_t slash = ref.find('/', pos);
        std::string seg = ref.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
        std::string key;
        for (size_t i = 0; i < seg.size(); ++i) {
          if (seg[i] == '~' && i + 1 < seg.size() && (seg[i + 1] == '0' || seg[i + 1] == '1')) {
            key += seg[i + 1] == '0' ? '~' : '/';
            ++i;
          } else {
            key += seg[i];
          }
        }
        if (target->is_object() && target->contains(key)) {
          target = &(*target)[key];
        } else if (target->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
                   key.size() < 10 && std::stoul(key) < target->size()) {
          target = &(*target)[std::stoul(key)];
        } else {
          return invalid(path, "'$ref' '" + ref + "' does not point into the schema");
        }
        hint = key;
        if (slash == std::string::npos) break;
        pos = slash + 1;
      }
    }
    const std::string name = fresh_name("ref-" + hint);
    ref_rules_[ref] = name;
    // The rule is appended once its body is known; recursion meanwhile refers to it by name.
    HEARTH_ASSIGN(std::string body, convert(*target, ref, name + "-value"));
    rules_.emplace_back(name, body);
    return name;
  }

  const Json& root_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> names_;
  std::set<std::string> used_;
  std::map<std::string, std::string> ref_rules_;
  int depth_ = 0;
};

}  // namespace

std::string json_object_gbnf() {
  std::set<std::string> used;
  std::string root = "root ::= " + use_primitive(used, "json-object") + "\n";
  return root + primitive_text(used);
}

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  return SchemaConverter(schema).run();
}

}  // namespace hearth::sampler
