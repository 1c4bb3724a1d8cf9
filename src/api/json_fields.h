// Typed, checked reads of request-body fields. Every HTTP dialect reads optional fields of
// several types and must answer a wrong type with a 400 that names the field ("'top_k' must be
// an integer, got string"); these helpers give that message in one wording. A JSON null is
// treated as an absent field, as OpenAI's and Anthropic's clients send nulls for unset values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace hearth::api {

using Json = nlohmann::ordered_json;

// Parses a request body that must be one JSON object. Invalid JSON (including invalid UTF-8
// inside strings) and non-objects are kInvalidArgument errors that say what was wrong.
Result<Json> parse_json_object(std::string_view body);

// Serialises for the wire: compact, invalid UTF-8 replaced by U+FFFD instead of throwing.
std::string dump_json(const Json& value);

// "string", "number", "object", ... for messages.
const char* json_type_name(const Json& value);

// The field `key` of `obj`, or nullopt when absent or null; `where` prefixes error messages
// ("options." gives "'options.top_k' must be ...").
Result<std::optional<std::string>> read_string(const Json& obj, std::string_view key, std::string_view where = "");
Result<std::optional<double>> read_number(const Json& obj, std::string_view key, std::string_view where = "");
// Integers; a float with an integral value (3.0) is accepted, 3.5 is not.
Result<std::optional<int64_t>> read_integer(const Json& obj, std::string_view key, std::string_view where = "");
Result<std::optional<bool>> read_bool(const Json& obj, std::string_view key, std::string_view where = "");
// A string or an array of strings (OpenAI's `stop`), returned as a list.
Result<std::optional<std::vector<std::string>>> read_string_list(const Json& obj, std::string_view key,
                                                                std::string_view where = "");
// An object or array field, checked for type, returned by pointer into obj (nullptr: absent).
Result<const Json*> read_object(const Json& obj, std::string_view key, std::string_view where = "");
Result<const Json*> read_array(const Json& obj, std::string_view key, std::string_view where = "");

// The string at `key`, or `fallback` when it is absent or not a string (never throws; for
// fields whose type is checked elsewhere or where any non-string means "not this").
std::string string_field(const Json& obj, std::string_view key, std::string fallback = "");

// Integer range check with the usual message ("'n' must be between 1 and 128").
Status check_range(std::string_view name, int64_t value, int64_t lo, int64_t hi);

// Number range check: "'temperature' must be between 0 and 2, got 5"; with hi infinite,
// "'options.temperature' must be 0 or more, got -1".
Status check_number_range(std::string_view name, double value, double lo, double hi);

// An error for a field with the wrong type.
Error field_type_error(std::string_view where, std::string_view key, const char* expected, const Json& got);

}  // namespace hearth::api
