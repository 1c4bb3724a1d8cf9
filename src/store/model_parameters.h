// ollama's model parameters (Modelfile PARAMETER lines, /api/create `parameters`, the params
// layer): one table of names and types, each value parsed and checked once when a model is
// created, so a stored params layer always holds typed, in-range JSON.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace hearth::store {

enum class ParameterType { kInt, kFloat, kBool, kStringList };

struct ParameterSpec {
  const char* name;
  ParameterType type;
  double min;  // inclusive bounds for numbers
  double max;
};

const std::vector<ParameterSpec>& parameter_specs();
const ParameterSpec* find_parameter(std::string_view name);  // exact, lower case

// One PARAMETER line's value as typed JSON ("0.7" -> 0.7, "true" -> true). Errors name the
// parameter and say what was expected.
Result<nlohmann::json> parse_parameter_value(std::string_view name, std::string_view text);
// A JSON value from /api/create: numbers and booleans checked, strings parsed as a Modelfile
// value would be, `stop` as one string or a list.
Result<nlohmann::json> check_parameter_value(std::string_view name, const nlohmann::json& value);

// Adds one value to a params object: `stop` values accumulate, others replace.
void add_parameter(nlohmann::json& params, const std::string& name, const nlohmann::json& value);

}  // namespace hearth::store
