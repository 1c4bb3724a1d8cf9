// Typed request-field reads with one wording for type errors (see json_fields.h).
#include "api/json_fields.h"

#include <cmath>
#include <cstdio>

#include "util/json_nesting.h"

namespace hearth::api {
namespace {

std::string field_name(std::string_view where, std::string_view key) {
  std::string s(where);
  s += key;
  return s;
}

const Json* find_field(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace

Result<Json> parse_json_object(std::string_view body) {
  if (!json_nesting_within(body)) {
    return make_error(ErrorKind::kInvalidArgument,
                      "request body nests arrays and objects deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  }
  Json value;
  try {
    value = Json::parse(body.begin(), body.end());
  } catch (const nlohmann::json::exception& e) {
    // parse_error for bad syntax, out_of_range for numbers beyond double (e.g. 599e555).
    std::string what = e.what();
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    auto pos = what.find("] ");
    return make_error(ErrorKind::kInvalidArgument,
                      "request body is not valid JSON: " + (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
  if (!value.is_object()) {
    return make_error(ErrorKind::kInvalidArgument,
                      std::string("request body must be a JSON object, got ") + json_type_name(value));
  }
  return value;
}

std::string dump_json(const Json& value) { return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

const char* json_type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "object";
    case Json::value_t::array: return "array";
    case Json::value_t::string: return "string";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "number";
    case Json::value_t::binary: return "binary";
    case Json::value_t::discarded: return "invalid";
  }
  return "unknown";
}

Error field_type_error(std::string_view where, std::string_view key, const char* expected, const Json& got) {
  std::string message = "'";
  message += field_name(where, key);
  message += "' must be ";
  message += expected;
  message += ", got ";
  message += json_type_name(got);
  return make_error(ErrorKind::kInvalidArgument, std::move(message));
}

Result<std::optional<std::string>> read_string(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find_field(obj, key);
  if (!v) return std::optional<std::string>();
  if (!v->is_string()) return field_type_error(where, key, "a string", *v);
  return std::optional<std::string>(v->get<std::string>());
}

Result<std::optional<double>> read_number(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find_field(obj, key);
  if (!v) return std::optional<double>();
  if (!v->is_number()) return field_type_error(where, key, "a number", *v);
  double d = v->get<double>();
  if (!std::isfinite(d)) return field_type_error(where, key, "a finite number", *v);
  return std::optional<double>(d);
}

Result<std::optional<int64_t>> read_integer(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find_field(obj, key);
  if (!v) return std::optional<int64_t>();
  if (v->is_number_integer()) return std::optional<int64_t>(v->get<int64_t>());
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) {
      return make_error(ErrorKind::kInvalidArgument, "'" + field_name(where, key) + "' is too large");
    }
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
      return std::optional<int64_t>(static_cast<int64_t>(d));
    }
  }
  return field_type_error(where, key, "an integer", *v);
}

Result<std::optional<bool>> read_bool(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find_field(obj, key);
  if (!v) return std::optional<bool>();
  if (!v->is_boolean()) return field_type_error(where, key, "a boolean", *v);
  return std::optional<bool>(v->get<bool>());
}

Result<std::optional<std::vector<std::string>>> read_string_list(const Json& obj, std::string_view key,
                                                                std::string_view where) {
  const Json* v = find_field(obj, key);
  if (!v) return std::optional<std::vector<std::string>>();
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const auto& item : *v) {
      if (!item.is_string()) return field_type_error(where, key, "a string or an array of strings", *v);
      out.push_back(item.get<std::string>());
    }
  } else {
    return field_type_error(where, key, "a string or an array of strings", *v);
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<const Json*> read_object(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find_field(obj, key);
  if (!v) return static_cast<const Json*>(nullptr);
  if (!v->is_object()) return field_type_error(where, key, "an object", *v);
  return v;
}

Result<const Json*> read_array(const Json& obj, std::string_view key, std::string_view where) {
  const Json* v = find_field(obj, key);
  if (!v) return static_cast<const Json*>(nullptr);
  if (!v->is_array()) return field_type_error(where, key, "an array", *v);
  return v;
}

std::string string_field(const Json& obj, std::string_view key, std::string fallback) {
  const Json* v = find_field(obj, key);
  return v && v->is_string() ? v->get<std::string>() : fallback;
}

Status check_range(std::string_view name, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    std::string message = "'";
    message.append(name);
    message += "' must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + std::to_string(value);
    return make_error(ErrorKind::kInvalidArgument, std::move(message));
  }
  return ok_status();
}

Status check_number_range(std::string_view name, double value, double lo, double hi) {
  if (value >= lo && value <= hi) return ok_status();
  auto text = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  std::string message = "'";
  message.append(name);
  message += std::isinf(hi) ? "' must be " + text(lo) + " or more" : "' must be between " + text(lo) + " and " + text(hi);
  message += ", got " + text(value);
  return make_error(ErrorKind::kInvalidArgument, std::move(message));
}

}  // namespace hearth::api
